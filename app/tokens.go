package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/mcpmux/mcpmux/aggregator"
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// httpSecurity holds the serve command's HTTP security flags.
type httpSecurity struct {
	token     *string
	tokenFile *string
	origins   stringList

	// Set by options: the tokens accepted at start and the file they were
	// read from ("" if none).
	accepted []string
	file     string
}

func registerHTTPSecurity(fs *flag.FlagSet) *httpSecurity {
	h := &httpSecurity{}
	// MCPMUX_TOKEN is read when the tokens are (see tokens), not as the
	// flag's default, which the usage would print.
	h.token = fs.String("token", "", "HTTP: bearer token clients must send (default $MCPMUX_TOKEN); required for a non-loopback address")
	h.tokenFile = fs.String("token-file", "", "HTTP: read the bearer token from `FILE` (one token per line; overrides token_file in mcpmux.yaml)")
	fs.Var(&h.origins, "allowed-origin", "HTTP: also allow browser requests from `ORIGIN` (scheme://host[:port|:*]); repeatable")
	return h
}

// options returns the HTTP options of the flags and settings: the tokens
// (see tokens) and the origins.
func (h *httpSecurity) options(settings *config.Settings) (*aggregator.HTTPOptions, error) {
	for _, o := range h.origins {
		if _, err := config.ParseOrigin(o); err != nil {
			return nil, fmt.Errorf("--allowed-origin: %w", err)
		}
	}
	tokens, file, err := h.tokens(settings)
	if err != nil {
		return nil, err
	}
	h.accepted, h.file = tokens, file
	return &aggregator.HTTPOptions{AllowedOrigins: h.origins, Tokens: aggregator.NewTokens(tokens...)}, nil
}

// tokens resolves the token sources, in order of precedence --token (or
// MCPMUX_TOKEN), --token-file, token_file of mcpmux.yaml. file is the token
// file read: "" when the token came from --token or there is none.
func (h *httpSecurity) tokens(settings *config.Settings) (tokens []string, file string, err error) {
	token := *h.token
	if token == "" {
		token = os.Getenv("MCPMUX_TOKEN")
	}
	switch {
	case token != "":
		t := strings.TrimSpace(token)
		if t == "" || strings.ContainsFunc(t, isSpace) {
			return nil, "", errors.New("--token / MCPMUX_TOKEN: a token must not be blank or contain whitespace")
		}
		return []string{t}, "", nil
	case *h.tokenFile != "":
		tokens, err := readTokenFile(*h.tokenFile)
		if err != nil {
			return nil, *h.tokenFile, fmt.Errorf("--token-file: %w", err)
		}
		return tokens, *h.tokenFile, nil
	case settings.TokenFile != "":
		tokens, err := readTokenFile(settings.TokenFile)
		if err != nil {
			return nil, settings.TokenFile, fmt.Errorf("token_file in %s: %w", settings.File, err)
		}
		return tokens, settings.TokenFile, nil
	}
	return nil, "", nil
}

// hasToken reports whether opts require a token.
func hasToken(opts *aggregator.HTTPOptions) bool { return !opts.Tokens.Empty() }

// tokenRotation re-reads the token file on every config reload (so also on
// SIGHUP), so that a rotated token applies without a restart. A file that
// cannot be read or holds no token keeps the tokens in force, as does a
// mcpmux.yaml that no longer names a token file: a front that started with
// authentication never drops it.
type tokenRotation struct {
	sec     *httpSecurity
	tokens  *aggregator.Tokens
	current []string
	lastErr string // last problem logged, so that each is logged once
	log     *slog.Logger
}

// rotation returns the rotation of a front whose options came from
// options, or nil if its tokens did not come from a file.
func (h *httpSecurity) rotation(opts *aggregator.HTTPOptions, log *slog.Logger) *tokenRotation {
	if h.file == "" {
		return nil
	}
	return &tokenRotation{sec: h, tokens: opts.Tokens, current: h.accepted, log: log}
}

// reload re-reads the tokens for the given settings.
func (r *tokenRotation) reload(settings *config.Settings) {
	tokens, file, err := r.sec.tokens(settings)
	problem := ""
	switch {
	case err != nil:
		problem = err.Error()
	case file == "":
		problem = "mcpmux.yaml no longer names a token file"
	}
	if problem != "" {
		if problem != r.lastErr {
			r.log.Error("token file not re-read; the tokens in force stay", "error", problem)
		}
		r.lastErr = problem
		return
	}
	r.lastErr = ""
	if slices.Equal(tokens, r.current) {
		return
	}
	logs.MaskerOf(r.log).Add(tokens...)
	if err := r.tokens.Set(tokens); err != nil {
		r.log.Error("token file not applied", "file", file, "error", err)
		return
	}
	r.current = tokens
	r.log.Info("token file re-read: the accepted tokens are replaced", "file", file, "tokens", len(tokens))
}

// readTokenFile reads the tokens of a file: one per line, surrounding
// whitespace trimmed, blank lines and lines starting with # skipped. Each
// token is its own principal (a session opened with one cannot be used
// with another).
func readTokenFile(path string) ([]string, error) {
	data, err := config.ReadFile(path)
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
