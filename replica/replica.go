// Package replica is what replicas of mcpmux behind one load balancer
// share so that a client of MCP 2026-07-28 needs no sticky session: the
// key that signs the requestState of a parked call (aggregator/mrtr.go),
// and where that call runs.
//
// A call parked for its client's answer runs on one replica; the retry
// that brings the answer may reach any. So the state names its replica
// (the address its peers reach it at), signed with a key every replica
// holds, and a replica that gets a retry whose state names another one
// forwards it there (forward.go) — only to an address among its peers, so
// that a state, even one signed with a leaked key, cannot point mcpmux at
// any other host.
package replica

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
)

// KeyEnv is the environment variable that holds the signing key, as
// --state-key-file holds it in a file.
const KeyEnv = "MCPMUX_STATE_KEY"

// minKeyBytes is the shortest key accepted: HMAC-SHA256 with fewer
// secret bytes than that can be guessed.
const minKeyBytes = 32

// Options configure a Set. All are optional: with none, states are signed
// with a key of this process and name no replica.
type Options struct {
	// Key signs states; every replica must have the same. Nil generates
	// one for this process: a state then means nothing to another
	// replica, whose retries are refused with an error saying why.
	Key []byte
	// Self is the address (host:port) the peers reach this replica at;
	// "" names no replica (one mcpmux alone).
	Self string
	// Peers are the replicas' addresses (host:port): a name may resolve to
	// many (a Kubernetes headless Service's resolves to every ready pod).
	// A retry is forwarded only to one of them.
	Peers []string
}

// A Set is this replica among its peers.
type Set struct {
	key    []byte
	shared bool // the key came from the configuration
	self   string
	peers  []string
	lookup func(ctx context.Context, host string) ([]string, error)
}

// New checks opts and returns the Set.
func New(opts Options) (*Set, error) {
	s := &Set{key: opts.Key, shared: opts.Key != nil, self: opts.Self, peers: opts.Peers, lookup: net.DefaultResolver.LookupHost}
	if s.key == nil {
		s.key = make([]byte, 32)
		_, _ = rand.Read(s.key)
	} else if len(s.key) < minKeyBytes {
		return nil, fmt.Errorf("the state key has %d bytes, fewer than %d: make one with openssl rand -hex 32", len(s.key), minKeyBytes)
	}
	for _, a := range append([]string{opts.Self}, opts.Peers...) {
		if a == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return nil, fmt.Errorf("replica address %q: want host:port", a)
		}
		if strings.ContainsAny(a, "@/ \t") {
			return nil, fmt.Errorf("replica address %q: want host:port", a)
		}
	}
	if len(s.peers) > 0 && s.self == "" {
		return nil, errors.New("peers need this replica's own address (--advertise host:port, as the peers reach it), for the states of the calls it parks to name it")
	}
	return s, nil
}

// ReadKey reads the signing key from file, else from the environment
// variable KeyEnv; nil if neither is set. Surrounding whitespace (a
// file's last newline) is not part of it.
func ReadKey(file string) ([]byte, error) {
	var raw, from string
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--state-key-file: %w", err)
		}
		raw, from = string(b), "--state-key-file "+file
	case os.Getenv(KeyEnv) != "":
		raw, from = os.Getenv(KeyEnv), KeyEnv
	default:
		return nil, nil
	}
	key := strings.TrimSpace(raw)
	if len(key) < minKeyBytes {
		return nil, fmt.Errorf("%s: the state key has %d bytes, fewer than %d: make one with openssl rand -hex 32", from, len(key), minKeyBytes)
	}
	return []byte(key), nil
}

// Shared reports whether the key came from the configuration, so that
// other replicas may hold it too.
func (s *Set) Shared() bool { return s.shared }

// Self is this replica's address, "" if it has none.
func (s *Set) Self() string { return s.self }

// Forwards reports whether this replica forwards retries to its peers.
func (s *Set) Forwards() bool { return len(s.peers) > 0 }

// Sign returns the state of call id, parked on this replica.
func (s *Set) Sign(id string) string {
	body := id
	if s.self != "" {
		body += "@" + s.self
	}
	return body + "." + s.mac(body)
}

func (s *Set) mac(body string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ErrInvalidState is the error of a state that was not signed with this
// replica's key.
var ErrInvalidState = errors.New("invalid requestState: mcpmux did not issue it, or it was altered")

// errUnsharedKey explains an invalid state where each replica has a key
// of its own.
var errUnsharedKey = fmt.Errorf("%w; or another mcpmux replica issued it, and the replicas do not share a signing key (set %s or --state-key-file to the same key on every replica; docs/scaling.md)", ErrInvalidState, KeyEnv)

// Verify returns the call id and the replica ("" for none) of state, or
// an error wrapping ErrInvalidState if it was not signed with this key.
func (s *Set) Verify(state string) (id, replica string, err error) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", "", s.invalid()
	}
	body, sig := state[:i], state[i+1:]
	if !hmac.Equal([]byte(s.mac(body)), []byte(sig)) {
		return "", "", s.invalid()
	}
	id, replica, _ = strings.Cut(body, "@")
	return id, replica, nil
}

func (s *Set) invalid() error {
	if s.shared {
		return ErrInvalidState
	}
	return errUnsharedKey
}

// IsSelf reports whether replica names this one ("" does: a state of a
// replica without an address).
func (s *Set) IsSelf(replica string) bool { return replica == "" || replica == s.self }

// IsPeer reports whether addr (host:port) is one of the peers' addresses
// now: a peer given by that address, or a name that resolves to its host
// with its port.
func (s *Set) IsPeer(ctx context.Context, addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	for _, p := range s.peers {
		if p == addr {
			return true
		}
		phost, pport, err := net.SplitHostPort(p)
		if err != nil || pport != port {
			continue
		}
		if net.ParseIP(phost) != nil {
			continue // an address, not a name: compared above
		}
		ips, err := s.lookup(ctx, phost)
		if err == nil && slices.Contains(ips, host) {
			return true
		}
	}
	return false
}
