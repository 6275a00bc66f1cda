package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Client credentials belong to the authorization server that issued them
// (MCP 2026-07-28, "Authorization Server Binding"): mcpmux keys what
// dynamic client registration gave it by that server's issuer, so that
// every server behind one authorization server logs in with one client,
// and a server that moved to another authorization server gets a new
// registration there instead of the old client.
//
// The go-sdk's authorization code flow finds the authorization server by
// itself and does not say which it found, so a login finds it first with
// the go-sdk's own discovery functions, the same way: the issuer decides
// which registration the flow is given, and what the authorization
// response's iss (RFC 9207) must be.

// discover finds the authorization server of the MCP server at serverURL,
// as the go-sdk's authorization code flow does: the protected resource
// metadata named by the 401's challenge, else at the well-known paths; its
// first authorization server's metadata (validated against its issuer);
// without protected resource metadata, the server's origin, and without
// authorization server metadata, the 2025-03-26 default endpoints.
func discover(ctx context.Context, h *codeHandler, challenges []oauthex.Challenge) (*oauthex.AuthServerMeta, error) {
	as := ""
	for _, u := range prmURLs(challengeParam(challenges, "resource_metadata"), h.srv.URL) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, u[0], u[1], h.hc)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("the server's protected resource metadata names no authorization server")
		}
		as = prm.AuthorizationServers[0]
		break
	}
	if as == "" {
		u, err := url.Parse(h.srv.URL)
		if err != nil {
			return nil, err
		}
		u.Path, u.RawQuery = "", ""
		as = u.String()
	}
	asm, err := auth.GetAuthServerMetadata(ctx, as, h.hc)
	if err != nil {
		return nil, fmt.Errorf("reading the metadata of the authorization server %s: %w", as, err)
	}
	if asm == nil {
		return &oauthex.AuthServerMeta{Issuer: as}, nil
	}
	return asm, nil
}

// prmURLs are where protected resource metadata is looked for, with the
// resource each must name: the challenge's URL, then the path of the MCP
// endpoint under the well-known prefix, then the root.
func prmURLs(fromChallenge, serverURL string) [][2]string {
	var urls [][2]string
	if fromChallenge != "" {
		urls = append(urls, [2]string{fromChallenge, serverURL})
	}
	ru, err := url.Parse(serverURL)
	if err != nil {
		return urls
	}
	mu := *ru
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	urls = append(urls, [2]string{mu.String(), serverURL})
	mu.Path = "/.well-known/oauth-protected-resource"
	ru.Path = ""
	return append(urls, [2]string{mu.String(), ru.String()})
}

// registration is a client that dynamic client registration created at
// an authorization server, for mcpmux's loopback redirect URI.
type registration struct {
	Issuer       string    `json:"issuer"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	RedirectURIs []string  `json:"redirect_uris"`
	Registered   time.Time `json:"registered"`
}

// port is the loopback port of the registration's redirect URI; 0 if it
// has none.
func (r *registration) port() int {
	for _, ru := range r.RedirectURIs {
		u, err := url.Parse(ru)
		if err != nil || u.Port() == "" {
			continue
		}
		var p int
		if _, err := fmt.Sscanf(u.Port(), "%d", &p); err == nil {
			return p
		}
	}
	return 0
}

// registrationsName is the file of the registrations, in the token
// directory; no server's token file can have its name (a server name
// cannot start with a dot).
const registrationsName = ".registrations"

func (s *Store) registrationsPath() string {
	return filepath.Join(s.dir, registrationsName+".json")
}

// readRegistrations reads every stored registration; none for a missing
// file.
func (s *Store) readRegistrations() ([]*registration, error) {
	data, err := os.ReadFile(s.registrationsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var regs []*registration
	if err := json.Unmarshal(data, &regs); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.registrationsPath(), err)
	}
	for _, r := range regs {
		s.mask.Add(r.ClientSecret)
	}
	return regs, nil
}

// registration returns the client registered at issuer, or nil. The
// issuer is compared as a string, exactly (RFC 8414 §3.3).
func (s *Store) registration(issuer string) *registration {
	if s.err != nil {
		return nil
	}
	regs, err := s.readRegistrations()
	if err != nil {
		s.log.Warn("cannot read the stored client registrations; registering again", "error", err)
		return nil
	}
	i := slices.IndexFunc(regs, func(r *registration) bool { return r.Issuer == issuer })
	if i < 0 {
		return nil
	}
	return regs[i]
}

// saveRegistration stores reg as the client registered at its issuer, in
// place of one stored before, under the registrations' lock.
func (s *Store) saveRegistration(reg *registration) error {
	if s.err != nil {
		return s.err
	}
	unlock, err := s.lock(registrationsName)
	if err != nil {
		return err
	}
	defer unlock()
	regs, err := s.readRegistrations()
	if err != nil {
		regs = nil // unreadable: start again rather than never store one
	}
	regs = slices.DeleteFunc(regs, func(r *registration) bool { return r.Issuer == reg.Issuer })
	regs = append(regs, reg)
	data, err := json.MarshalIndent(regs, "", "  ")
	if err != nil {
		return err
	}
	s.mask.Add(reg.ClientSecret)
	return writePrivate(s.dir, registrationsName, s.registrationsPath(), data)
}
