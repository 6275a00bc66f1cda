package app

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/mcpmux/mcpmux/aggregator"
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// security resolves the front's tokens (see tokens) and checks its
// origins: the aggregator's HTTP options, the tokens accepted, and the
// file they were read from ("" if none).
func (h *HTTP) security(settings *config.Settings) (opts *aggregator.HTTPOptions, accepted []string, file string, err error) {
	for _, o := range h.Origins {
		if _, err := config.ParseOrigin(o); err != nil {
			return nil, nil, "", fmt.Errorf("--allowed-origin: %w", err)
		}
	}
	accepted, file, err = h.tokens(settings)
	if err != nil {
		return nil, nil, "", err
	}
	return &aggregator.HTTPOptions{AllowedOrigins: h.Origins, Tokens: aggregator.NewTokens(accepted...)}, accepted, file, nil
}

// tokens resolves the token sources, in order of precedence Token (--token
// or MCPMUX_TOKEN), TokenFile (--token-file), token_file of mcpmux.yaml.
// file is the token file read: "" when the token came from Token or there
// is none.
func (h *HTTP) tokens(settings *config.Settings) (tokens []string, file string, err error) {
	switch {
	case h.Token != "":
		t := strings.TrimSpace(h.Token)
		if t == "" || strings.ContainsFunc(t, isSpace) {
			return nil, "", errors.New("--token / MCPMUX_TOKEN: a token must not be blank or contain whitespace")
		}
		return []string{t}, "", nil
	case h.TokenFile != "":
		tokens, err := readTokenFile(h.TokenFile)
		if err != nil {
			return nil, h.TokenFile, fmt.Errorf("--token-file: %w", err)
		}
		return tokens, h.TokenFile, nil
	case settings.TokenFile != "":
		tokens, err := readTokenFile(settings.TokenFile)
		if err != nil {
			return nil, settings.TokenFile, fmt.Errorf("token_file in %s: %w", settings.File, err)
		}
		return tokens, settings.TokenFile, nil
	}
	return nil, "", nil
}

// tokenRotation re-reads the token file on every config reload (so also on
// SIGHUP), so that a rotated token applies without a restart. A file that
// cannot be read or holds no token keeps the tokens in force, as does a
// mcpmux.yaml that no longer names a token file: a front that started with
// authentication never drops it.
type tokenRotation struct {
	http    *HTTP
	tokens  *aggregator.Tokens
	current []string
	lastErr string // last problem logged, so that each is logged once
	log     *slog.Logger
}

// reload re-reads the tokens for the given settings.
func (r *tokenRotation) reload(settings *config.Settings) {
	tokens, file, err := r.http.tokens(settings)
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
