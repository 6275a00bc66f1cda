// Package oauth authorizes mcpmux to url: tool servers that require OAuth.
// It builds, for the auth: section of a server's tool file, the handler
// the go-sdk's Streamable HTTP client transport calls on every request and
// on every 401 (auth.OAuthHandler): the go-sdk's own authorization code
// flow (discovery, registration, PKCE) for `mcpmux login`, the client
// credentials grant for machines, or a token read from a file.
//
// Tokens of the authorization code flow are kept in a Store: one file per
// server, mode 0600, in a state directory that is never the config
// directory. A serving mcpmux never asks a person for anything: a server
// whose tokens are missing, expired beyond refresh or revoked answers with
// a NeedsLoginError until `mcpmux login SERVER` has stored new ones, which
// a running mcpmux picks up by itself.
package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpmux/mcpmux/internal/logs"
)

// StateDirEnv names the environment variable that sets the state
// directory.
const StateDirEnv = "MCPMUX_STATE_DIR"

// DefaultDir is the state directory when none is given: $MCPMUX_STATE_DIR,
// else $XDG_STATE_HOME/mcpmux, else ~/.local/state/mcpmux.
func DefaultDir() (string, error) {
	if d := os.Getenv(StateDirEnv); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpmux"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return "", fmt.Errorf("no state directory for OAuth tokens: set %s (or XDG_STATE_HOME, or HOME)", StateDirEnv)
	}
	return filepath.Join(home, ".local", "state", "mcpmux"), nil
}

// StoreOptions configure a Store. Every field is optional.
type StoreOptions struct {
	// ConfigDir is mcpmux's config directory: a state directory inside it
	// is refused, so that tokens never end up next to (or committed with)
	// the config.
	ConfigDir string
	// Mask learns every token and client secret the store reads or
	// writes, so that no log line, status or error shows one.
	Mask *logs.Masker
	// Logger receives the store's warnings; nil discards them.
	Logger *slog.Logger
	// HTTPClient makes the token requests of refreshes; nil means one
	// with a 30s timeout.
	HTTPClient *http.Client
	// ChangePoll is how often a token file is looked at while waiting for
	// a login to write it; zero means DefaultChangePoll.
	ChangePoll time.Duration
}

// Store keeps the OAuth tokens of servers, one file per server under
// DIR/oauth/. It is safe for concurrent use, by several processes too:
// refreshes take a lock file, so that two mcpmux processes sharing the
// directory (a stdio one per client, say) never spend the same refresh
// token twice.
type Store struct {
	dir  string // DIR/oauth
	err  error  // why the directory cannot be used; returned by every use
	mask *logs.Masker
	log  *slog.Logger
	hc   *http.Client
	poll time.Duration // StoreOptions.ChangePoll

	mu      sync.Mutex
	entries map[string]*entry
}

// NewStore returns the store in the state directory dir; "" means
// DefaultDir. It does not touch the disk: a directory that cannot be used
// is reported by the first use, so that servers without OAuth never care.
func NewStore(dir string, opts *StoreOptions) *Store {
	if opts == nil {
		opts = &StoreOptions{}
	}
	s := &Store{mask: opts.Mask, log: opts.Logger, hc: opts.HTTPClient, poll: opts.ChangePoll, entries: map[string]*entry{}}
	if s.poll <= 0 {
		s.poll = DefaultChangePoll
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.hc == nil {
		s.hc = &http.Client{Timeout: requestTimeout}
	}
	if dir == "" {
		dir, s.err = DefaultDir()
	}
	if s.err == nil {
		dir, s.err = filepath.Abs(dir)
	}
	if s.err == nil && opts.ConfigDir != "" && inside(dir, opts.ConfigDir) {
		s.err = fmt.Errorf("the state directory %s is inside the config directory %s: OAuth tokens are never kept with the config; set %s to a directory outside it", dir, opts.ConfigDir, StateDirEnv)
	}
	s.dir = filepath.Join(dir, "oauth")
	return s
}

// requestTimeout bounds each request to an authorization server.
const requestTimeout = 30 * time.Second

// inside reports whether path is dir or below it, symlinks resolved as far
// as they exist.
func inside(path, dir string) bool {
	resolve := func(p string) string {
		p, _ = filepath.Abs(p)
		// Resolve the longest existing prefix: the state directory may
		// not exist yet.
		for rest := ""; ; {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Join(r, rest)
			}
			parent := filepath.Dir(p)
			if parent == p {
				return filepath.Join(p, rest)
			}
			rest = filepath.Join(filepath.Base(p), rest)
			p = parent
		}
	}
	rel, err := filepath.Rel(resolve(dir), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Dir is the directory the token files are in.
func (s *Store) Dir() string { return s.dir }

// Err says why the store cannot be used, or nil.
func (s *Store) Err() error { return s.err }

// Path is the token file of server.
func (s *Store) Path(server string) string { return filepath.Join(s.dir, server+".json") }

// Remove deletes the tokens of server (`mcpmux logout`); it reports
// whether there were any. A running mcpmux notices on its next request to
// the server, which then needs login.
func (s *Store) Remove(server string) (bool, error) {
	if err := s.usable(server); err != nil {
		return false, err
	}
	err := os.Remove(s.Path(server))
	_ = os.Remove(s.lockPath(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing the tokens of %s: %w", server, err)
	}
	return true, nil
}

// usable reports why server's tokens cannot be read or written, or nil.
func (s *Store) usable(server string) error {
	if s.err != nil {
		return s.err
	}
	if server == "" || strings.ContainsAny(server, `/\`) || strings.HasPrefix(server, ".") {
		return fmt.Errorf("%q is not a server name", server)
	}
	return nil
}

// entry returns the in-memory state of server's tokens, shared by every
// handler of the server in this process (a reload's new server and the old
// one still finishing its calls), so that they refresh once.
func (s *Store) entry(server string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[server]
	if e == nil {
		e = &entry{store: s, name: server, path: s.Path(server)}
		s.entries[server] = e
	}
	return e
}

// masker is the store's masker; nil for a nil store.
func (s *Store) masker() *logs.Masker {
	if s == nil {
		return nil
	}
	return s.mask
}

// changePoll is StoreOptions.ChangePoll, or its default without a store.
func (s *Store) changePoll() time.Duration {
	if s == nil {
		return DefaultChangePoll
	}
	return s.poll
}

// learn teaches the masker the secrets of rec.
func (s *Store) learn(rec *record) {
	if rec == nil {
		return
	}
	s.mask.Add(rec.ClientSecret)
	if t := rec.Token; t != nil {
		s.mask.Add(t.AccessToken, t.RefreshToken)
	}
}

// read reads server's token file; a missing file is (nil, zero stamp,
// nil).
func (s *Store) read(server string) (*record, stamp, error) {
	if err := s.usable(server); err != nil {
		return nil, stamp{}, err
	}
	path := s.Path(server)
	st, err := stampOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, stamp{}, nil
	}
	if err != nil {
		return nil, stamp{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, stamp{}, err
	}
	if st.mode&0o077 != 0 {
		// Copied in with a loose mode: tokens are for mcpmux's user only.
		if err := os.Chmod(path, 0o600); err == nil {
			s.log.Warn("token file was readable by others; made it 0600", "file", path)
		}
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, st, fmt.Errorf("reading %s: %w", path, err)
	}
	s.learn(&rec)
	return &rec, st, nil
}

// write stores rec as server's tokens: a new 0600 file renamed over the
// old one, so that a reader never sees half a file.
func (s *Store) write(server string, rec *record) (stamp, error) {
	if err := s.usable(server); err != nil {
		return stamp{}, err
	}
	s.learn(rec)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return stamp{}, fmt.Errorf("creating the token directory: %w", err)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return stamp{}, err
	}
	if err := writePrivate(s.dir, server, s.Path(server), data); err != nil {
		return stamp{}, fmt.Errorf("writing the tokens of %s: %w", server, err)
	}
	return stampOf(s.Path(server))
}

// writePrivate writes data to path as a new 0600 file in dir (named
// after stem) renamed over the old one, so that a reader never sees half a
// file.
func writePrivate(dir, stem, path string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+stem+".*.tmp") // 0600
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

func (s *Store) lockPath(server string) string { return filepath.Join(s.dir, server+".lock") }

// lock takes the exclusive lock on server's tokens, across processes; the
// returned func releases it. A directory mcpmux cannot write (a read-only
// mount of a token file) has no lock to take: there is no other writer.
func (s *Store) lock(server string) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.lockPath(server), os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// stamp identifies one version of a file, to notice that it changed.
type stamp struct {
	ino   uint64
	size  int64
	mtime int64
	mode  fs.FileMode
}

func stampOf(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	st := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode().Perm()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, nil
}
