package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/mcpmux/mcpmux/aggregator"
	"github.com/mcpmux/mcpmux/config"
)

// httpSecurity holds the serve command's HTTP security flags.
type httpSecurity struct {
	token     *string
	tokenFile *string
	origins   stringList
}

func registerHTTPSecurity(fs *flag.FlagSet) *httpSecurity {
	h := &httpSecurity{}
	h.token = fs.String("token", os.Getenv("MCPMUX_TOKEN"), "HTTP: bearer token clients must send ($MCPMUX_TOKEN); required for a non-loopback address")
	h.tokenFile = fs.String("token-file", "", "HTTP: read the bearer token from `FILE` (one token per line; overrides token_file in mcpmux.yaml)")
	fs.Var(&h.origins, "allowed-origin", "HTTP: also allow browser requests from `ORIGIN` (scheme://host[:port|:*]); repeatable")
	return h
}

// options resolves the token sources, in order of precedence --token (or
// MCPMUX_TOKEN), --token-file, token_file of mcpmux.yaml, and checks the
// origins.
func (h *httpSecurity) options(settings *config.Settings) (*aggregator.HTTPOptions, error) {
	for _, o := range h.origins {
		if _, err := config.ParseOrigin(o); err != nil {
			return nil, fmt.Errorf("--allowed-origin: %w", err)
		}
	}
	opts := &aggregator.HTTPOptions{AllowedOrigins: h.origins}
	switch {
	case *h.token != "":
		t := strings.TrimSpace(*h.token)
		if t == "" || strings.ContainsFunc(t, isSpace) {
			return nil, errors.New("--token / MCPMUX_TOKEN: a token must not be blank or contain whitespace")
		}
		opts.Token = t
	case *h.tokenFile != "":
		tokens, err := readTokenFile(*h.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		opts.Tokens = tokens
	case settings.TokenFile != "":
		tokens, err := readTokenFile(settings.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("token_file in %s: %w", settings.File, err)
		}
		opts.Tokens = tokens
	}
	return opts, nil
}

// hasToken reports whether opts require a token.
func hasToken(opts *aggregator.HTTPOptions) bool { return opts.Token != "" || len(opts.Tokens) > 0 }

// readTokenFile reads the tokens of a file: one per line, surrounding
// whitespace trimmed, blank lines and lines starting with # skipped. Each
// token is its own principal (a session opened with one cannot be used
// with another).
func readTokenFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the token file: %w", err)
	}
	var tokens []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.ContainsFunc(t, isSpace) {
			return nil, fmt.Errorf("%s:%d: a token must not contain whitespace", path, i+1)
		}
		tokens = append(tokens, t)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s holds no token (it is empty)", path)
	}
	return tokens, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f' }

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
