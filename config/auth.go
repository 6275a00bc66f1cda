package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// Kinds of authorization of a url: server (the type of its auth: section).
const (
	// AuthOAuth is the OAuth 2.1 authorization code flow with PKCE: a
	// person logs in once with `mcpmux login SERVER`, and mcpmux keeps the
	// tokens in its state directory and refreshes them.
	AuthOAuth = "oauth"
	// AuthClientCredentials is the client-credentials grant of the MCP
	// authorization extensions, for machine-to-machine servers: no person
	// is involved, the client authenticates with a secret or a signed JWT.
	AuthClientCredentials = "client_credentials"
	// AuthTokenFile sends the access token a file holds (a mounted secret
	// that something else keeps fresh), read again whenever it changes.
	AuthTokenFile = "token_file"
)

// AuthTypes are the valid values of auth.type.
var AuthTypes = []string{AuthOAuth, AuthClientCredentials, AuthTokenFile}

// SigningAlgorithms are the JWS algorithms accepted for private_key_jwt.
var SigningAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Auth is how mcpmux authorizes itself to a url: server: the auth: section
// of its tool file, either a mapping or just the type (`auth: oauth`).
type Auth struct {
	Type string `koanf:"type"` // one of AuthTypes
	// ClientID is a client registered with the authorization server
	// beforehand. For oauth it is optional: without it mcpmux registers
	// itself (dynamic client registration, or client_metadata_url).
	ClientID string `koanf:"client_id"`
	// ClientSecret goes with ClientID (a confidential client).
	ClientSecret string `koanf:"client_secret"`
	// Scopes replace the scopes the server asks for.
	Scopes []string `koanf:"scopes"`
	// RedirectPort is the loopback port `mcpmux login` receives the
	// authorization code on; zero means any free port (fine with dynamic
	// registration; a pre-registered client needs the registered one).
	RedirectPort int `koanf:"redirect_port"`
	// ClientMetadataURL is an https URL where a client ID metadata
	// document describing mcpmux is published; used as the client ID by
	// authorization servers that support them.
	ClientMetadataURL string `koanf:"client_metadata_url"`
	// PrivateKey (PEM) or PrivateKeyFile signs the JWT a client_credentials
	// client authenticates with (private_key_jwt) instead of a secret.
	PrivateKey     string `koanf:"private_key"`
	PrivateKeyFile string `koanf:"private_key_file"` // relative to the config directory
	// SigningAlgorithm of the JWT; empty means the key's usual one
	// (RS256, ES256/384/512 by curve, EdDSA).
	SigningAlgorithm string `koanf:"signing_algorithm"`
	// TokenFile holds the access token of a token_file server; relative
	// to the config directory.
	TokenFile string `koanf:"token_file"`
}

var authType = reflect.TypeFor[Auth]()

// authHook lets `auth: oauth` stand for `auth: {type: oauth}`.
func authHook(from, to reflect.Type, data any) (any, error) {
	if to != authType && to != reflect.PointerTo(authType) {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return map[string]any{"type": v}, nil
	case map[string]any, nil:
		return data, nil
	}
	return nil, fmt.Errorf("want one of %s, or a mapping with a type", strings.Join(AuthTypes, ", "))
}

// validateAuth checks the auth: section of s, a url: server.
func (s *Server) validateAuth() error {
	a := s.Auth
	if a == nil {
		return nil
	}
	if !s.IsRemote() {
		return fieldErr("auth", fmt.Errorf("only a url: server can have auth"))
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return fieldErr("headers", fmt.Errorf("set either an Authorization header or auth, not both"))
		}
	}
	// The fields each type takes; any other one set is a mistake worth
	// reporting rather than ignoring.
	allowed := map[string][]string{
		AuthOAuth:             {"client_id", "client_secret", "scopes", "redirect_port", "client_metadata_url"},
		AuthClientCredentials: {"client_id", "client_secret", "scopes", "private_key", "private_key_file", "signing_algorithm"},
		AuthTokenFile:         {"token_file"},
	}[a.Type]
	if allowed == nil {
		return fieldErr("auth.type", fmt.Errorf("unknown %q (%s)", a.Type, strings.Join(AuthTypes, ", ")))
	}
	for field, set := range map[string]bool{
		"client_id": a.ClientID != "", "client_secret": a.ClientSecret != "", "scopes": len(a.Scopes) > 0,
		"redirect_port": a.RedirectPort != 0, "client_metadata_url": a.ClientMetadataURL != "",
		"private_key": a.PrivateKey != "", "private_key_file": a.PrivateKeyFile != "",
		"signing_algorithm": a.SigningAlgorithm != "", "token_file": a.TokenFile != "",
	} {
		if set && !slices.Contains(allowed, field) {
			return fieldErr("auth."+field, fmt.Errorf("does not apply to auth type %s", a.Type))
		}
	}
	for i, sc := range a.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\n\"\\") {
			return fieldErr(fmt.Sprintf("auth.scopes.%d", i), fmt.Errorf("%q is not a scope (no spaces, quotes or backslashes)", sc))
		}
	}
	if a.ClientSecret != "" && a.ClientID == "" {
		return fieldErr("auth.client_secret", fmt.Errorf("needs a client_id"))
	}
	switch a.Type {
	case AuthOAuth:
		if a.RedirectPort < 0 || a.RedirectPort > 65535 {
			return fieldErr("auth.redirect_port", fmt.Errorf("%d is not a port (0 means any free one)", a.RedirectPort))
		}
		if a.ClientMetadataURL != "" {
			u, err := url.Parse(a.ClientMetadataURL)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
				return fieldErr("auth.client_metadata_url", fmt.Errorf("%q must be an https URL with a path (where the client ID metadata document is published)", a.ClientMetadataURL))
			}
		}
	case AuthClientCredentials:
		if a.ClientID == "" {
			return fieldErr("auth.client_id", fmt.Errorf("missing: client_credentials needs the client's id"))
		}
		n := 0
		for _, v := range []string{a.ClientSecret, a.PrivateKey, a.PrivateKeyFile} {
			if v != "" {
				n++
			}
		}
		if n != 1 {
			return fieldErr("auth", fmt.Errorf("client_credentials needs exactly one of client_secret, private_key, private_key_file"))
		}
		if a.SigningAlgorithm != "" {
			if a.ClientSecret != "" {
				return fieldErr("auth.signing_algorithm", fmt.Errorf("applies to private_key or private_key_file, not client_secret"))
			}
			if !slices.Contains(SigningAlgorithms, a.SigningAlgorithm) {
				return fieldErr("auth.signing_algorithm", fmt.Errorf("unknown %q (%s)", a.SigningAlgorithm, strings.Join(SigningAlgorithms, ", ")))
			}
		}
	case AuthTokenFile:
		if a.TokenFile == "" {
			return fieldErr("auth.token_file", fmt.Errorf("missing: the file that holds the access token"))
		}
	}
	return nil
}

// resolvePaths makes the auth section's relative file names relative to
// the config directory dir.
func (a *Auth) resolvePaths(dir string) {
	if a == nil {
		return
	}
	for _, p := range []*string{&a.TokenFile, &a.PrivateKeyFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}
