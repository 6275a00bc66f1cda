// Package config loads mcpmux's configuration directory: one YAML file per
// tool server under tool/, in the format of MiroFlow's tool layer, and an
// optional mcpmux.yaml with settings shared by all servers.
//
// Loading never fails as a whole because of one bad file: each file that
// cannot be used is reported in [Snapshot.Errors] and left out.
package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/tracing"
)

// Defaults used when a setting is absent.
const (
	DefaultSeparator      = "__"
	DefaultTimeout        = 900 * time.Second
	DefaultConnectTimeout = 60 * time.Second
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultResumeTimeout  = 5 * time.Second

	// HTTP front (see security.go).
	DefaultMaxSessions        = 1000
	DefaultSessionTimeout     = 30 * time.Minute
	DefaultRequestBodyTimeout = 30 * time.Second
)

// Session modes of a server.
const (
	SessionShared    = "shared"     // one connection for all clients
	SessionPerClient = "per-client" // one connection (child) per client session
	// SessionAuto is shared unless the server keeps state per session
	// that its clients must not share (upstream decides, see
	// upstream.Server.PerClient): then per-client.
	SessionAuto = "auto"
)

// Protocol eras of a server (Server.Protocol).
const (
	ProtocolAuto = "auto"       // server/discover once per connection: 2026-07-28 when offered, else initialize
	Protocol2025 = "2025-11-25" // initialize, sessions, server-to-client requests
	Protocol2026 = "2026-07-28" // stateless: server/discover, per-request _meta, multi round-trip requests
)

// Transports of a url: server.
const (
	TransportStdio      = "stdio"
	TransportStreamable = "http" // Streamable HTTP, falling back to SSE
	TransportSSE        = "sse"  // legacy HTTP+SSE only
)

// Server is one tool server, read from one tool/*.yaml file. Field names
// follow MiroFlow's tool configs; everything after Headers is an mcpmux
// extension and optional.
type Server struct {
	Name           string                   `koanf:"name"`
	Type           string                   `koanf:"type"` // "stdio", "http" (or "streamable-http"), "sse"; inferred when empty
	Command        string                   `koanf:"tool_command"`
	Args           []string                 `koanf:"args"`
	Env            map[string]string        `koanf:"env"`
	URL            string                   `koanf:"url"`
	Headers        map[string]string        `koanf:"headers"`
	Enabled        *bool                    `koanf:"enabled"` // nil means true
	Prefix         *string                  `koanf:"prefix"`  // nil means Name; "" exposes bare tool names
	Cwd            string                   `koanf:"cwd"`     // relative to the config directory; empty means mcpmux's own
	Timeout        time.Duration            `koanf:"timeout"` // zero means Settings.Timeout
	ToolTimeout    map[string]time.Duration `koanf:"tool_timeouts"`
	Session        string                   `koanf:"session"`      // SessionAuto, SessionShared or SessionPerClient
	IdleTimeout    time.Duration            `koanf:"idle_timeout"` // per-client sessions
	ConnectTimeout time.Duration            `koanf:"connect_timeout"`
	// MaxConcurrency bounds the calls running at once on one connection
	// (the shared child, or each per-client one); more wait their turn.
	// Zero means unlimited.
	MaxConcurrency int `koanf:"max_concurrency"`
	// MaxClients bounds the per-client connections (children) of a
	// session: per-client server; a call that would open one more gets an
	// isError result. Zero means unlimited (max_sessions still bounds it).
	MaxClients int `koanf:"max_clients"`
	// ResumeTimeout is how long a Streamable HTTP server that closed a
	// call's stream before answering may send nothing on the stream mcpmux
	// resumed, before the call is given up as lost. Zero means
	// DefaultResumeTimeout.
	ResumeTimeout time.Duration `koanf:"resume_timeout"`
	// OutputDir is the directory where the server writes files its results
	// link to (a browser's snapshots); mcpmux serves the linked files to the
	// calling client as resources (aggregator/outputfiles.go). Relative to
	// the config directory; empty means links are passed on unchanged.
	OutputDir string `koanf:"output_dir"`
	// Auth is how mcpmux authorizes itself to a url: server (OAuth); nil
	// means it sends only Headers.
	Auth *Auth `koanf:"auth"`
	// Cost is the price of each call of the server's tools, ToolCosts of
	// one tool's (by the server's own name); nil means no price.
	Cost      *Price            `koanf:"cost"`
	ToolCosts map[string]*Price `koanf:"tool_costs"`
	// Protocol is the MCP era mcpmux speaks with the server: ProtocolAuto
	// (the default), Protocol2025 or Protocol2026 (pinned: a server that
	// does not speak it fails to connect, saying so).
	Protocol string `koanf:"protocol"`

	// File is the path the server was read from; Hash identifies its
	// content, so that an unchanged file can be recognised on reload.
	File string `koanf:"-"`
	Hash string `koanf:"-"`

	// interpolated are the values ${...} references gave, in any field:
	// secrets wherever they end up (see Secrets).
	interpolated []string
}

func (s *Server) addInterpolated(v string) { s.interpolated = append(s.interpolated, v) }

// IsEnabled reports whether the server should run.
func (s *Server) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// NamePrefix is the namespace of the server's tools in exposed names.
func (s *Server) NamePrefix() string {
	if s.Prefix == nil {
		return s.Name
	}
	return *s.Prefix
}

// IsRemote reports whether the server is reached by URL instead of a child
// process.
func (s *Server) IsRemote() bool { return s.URL != "" }

// PerClient reports whether each client session gets its own connection.
func (s *Server) PerClient() bool { return s.Session == SessionPerClient }

// AutoSession reports whether the server's session mode is decided when it
// is up (session: auto, the default).
func (s *Server) AutoSession() bool { return s.Session == SessionAuto }

// CallTimeout is the deadline for a call of tool, given the global default.
func (s *Server) CallTimeout(tool string, global time.Duration) time.Duration {
	if d, ok := s.ToolTimeout[tool]; ok && d > 0 {
		return d
	}
	if s.Timeout > 0 {
		return s.Timeout
	}
	if global > 0 {
		return global
	}
	return DefaultTimeout
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// normalize fills defaults that depend on other fields.
func (s *Server) normalize(stem string) {
	if s.Name == "" {
		s.Name = stem
	}
	s.Cost.normalize()
	for _, p := range s.ToolCosts {
		p.normalize()
	}
	switch s.Type {
	case "streamable-http", "streamable_http", "streamableHttp":
		s.Type = TransportStreamable
	case "":
		if s.URL != "" {
			s.Type = TransportStreamable
		} else {
			s.Type = TransportStdio
		}
	}
	if s.Session == "" {
		// The seed keeps one browser session for the playwright server; we
		// keep one per client, so that clients never share a page.
		if s.Name == "playwright" {
			s.Session = SessionPerClient
		} else {
			s.Session = SessionAuto
		}
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.Protocol == "" {
		s.Protocol = ProtocolAuto
	}
	if s.ResumeTimeout == 0 {
		s.ResumeTimeout = DefaultResumeTimeout
	}
}

// Validate reports the first problem that makes the server unusable.
func (s *Server) Validate() error {
	if !serverNameRE.MatchString(s.Name) {
		return fieldErr("name", fmt.Errorf("%q is not a valid server name (letters, digits, '_', '.', '-')", s.Name))
	}
	switch s.Type {
	case TransportStdio:
		if s.Command == "" {
			return fieldErr("tool_command", fmt.Errorf("missing: set tool_command (a program to run) or url"))
		}
		if s.URL != "" {
			return fieldErr("url", fmt.Errorf("set either tool_command or url, not both"))
		}
	case TransportStreamable, TransportSSE:
		if s.URL == "" {
			return fieldErr("url", fmt.Errorf("missing: type %q needs a url", s.Type))
		}
		if s.Command != "" {
			return fieldErr("tool_command", fmt.Errorf("set either tool_command or url, not both"))
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErr("url", fmt.Errorf("%q is not an http(s) URL", s.URL))
		}
	default:
		err := fmt.Errorf("unknown type %q (stdio, http, sse)", s.Type)
		if meant := typeSpellings[s.Type]; meant != "" {
			err = fmt.Errorf("%w: did you mean %q?", err, meant)
		}
		return fieldErr("type", err)
	}
	if err := s.Cost.validate("cost"); err != nil {
		return err
	}
	for _, tool := range slices.Sorted(maps.Keys(s.ToolCosts)) {
		if err := s.ToolCosts[tool].validate("tool_costs." + tool); err != nil {
			return err
		}
	}
	if s.Session != SessionShared && s.Session != SessionPerClient && s.Session != SessionAuto {
		return fieldErr("session", fmt.Errorf("unknown session mode %q (auto, shared, per-client)", s.Session))
	}
	switch s.Protocol {
	case ProtocolAuto, Protocol2025, Protocol2026:
	default:
		return fieldErr("protocol", fmt.Errorf("unknown protocol %q (auto, %s, %s)", s.Protocol, Protocol2025, Protocol2026))
	}
	if s.Protocol == Protocol2026 && s.Type == TransportSSE {
		return fieldErr("protocol", fmt.Errorf("%s has no legacy SSE transport: use type: http", Protocol2026))
	}
	if p := s.NamePrefix(); p != "" && !serverNameRE.MatchString(p) {
		return fieldErr("prefix", fmt.Errorf("%q is not a valid prefix (letters, digits, '_', '.', '-')", p))
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"timeout", s.Timeout}, {"idle_timeout", s.IdleTimeout}, {"connect_timeout", s.ConnectTimeout}, {"resume_timeout", s.ResumeTimeout}} {
		if d.v < 0 {
			return fieldErr(d.field, fmt.Errorf("must not be negative"))
		}
	}
	if s.MaxConcurrency < 0 {
		return fieldErr("max_concurrency", fmt.Errorf("must not be negative (0 means unlimited)"))
	}
	switch {
	case s.MaxClients < 0:
		return fieldErr("max_clients", fmt.Errorf("must not be negative (0 means unlimited)"))
	case s.MaxClients > 0 && s.Session == SessionShared:
		return fieldErr("max_clients", fmt.Errorf("bounds the connections of a session: per-client server, and this one is %s", s.Session))
	}
	return s.validateAuth()
}

// Settings is the content of mcpmux.yaml.
type Settings struct {
	Separator      string        `koanf:"separator"`
	Timeout        time.Duration `koanf:"timeout"`
	ConnectTimeout time.Duration `koanf:"connect_timeout"`

	// HTTP front and limits (see security.go). TokenFile holds the bearer
	// tokens HTTP clients may send, one per line, relative to the config
	// directory; --token, MCPMUX_TOKEN and --token-file take precedence.
	TokenFile string `koanf:"token_file"`
	// AllowedOrigins are browser origins allowed besides loopback ones,
	// e.g. "https://app.example.com" or "http://devbox:*".
	AllowedOrigins []string `koanf:"allowed_origins"`
	// MaxRequestBytes bounds an HTTP request body; zero means
	// DefaultMaxRequestBytes.
	MaxRequestBytes Size `koanf:"max_request_bytes"`
	// MaxResultBytes bounds a tool result passed to a client; bigger ones
	// are truncated. Zero means DefaultMaxResultBytes.
	MaxResultBytes Size `koanf:"max_result_bytes"`
	// MaxSessions bounds the HTTP client sessions of all profiles
	// together; past it a new session's initialize gets 503. Zero means
	// DefaultMaxSessions.
	MaxSessions int `koanf:"max_sessions"`
	// SessionTimeout closes an HTTP client session that has had no
	// request open for that long. Zero means DefaultSessionTimeout.
	SessionTimeout time.Duration `koanf:"session_timeout"`
	// RequestBodyTimeout bounds the time a client may take to send one
	// request's body (the response, a stream included, is not bounded).
	// Zero means DefaultRequestBodyTimeout.
	RequestBodyTimeout time.Duration `koanf:"request_body_timeout"`
	// MaxConnections bounds the HTTP connections open at once; more wait
	// to be accepted. Read at start. Zero means half the open-file limit,
	// at most 4096 (see DefaultMaxConnections).
	MaxConnections int `koanf:"max_connections"`
	// Stateless serves Streamable HTTP without sessions, as --stateless
	// does: any replica can answer any request, and servers that need a
	// session (session: per-client) are refused (see Options.Stateless).
	// Read at start; stdio ignores it.
	Stateless bool `koanf:"stateless"`

	// ToolBlacklist holds [server, tool] pairs hidden from every profile.
	ToolBlacklist [][]string          `koanf:"tool_blacklist"`
	Profiles      map[string]*Profile `koanf:"profiles"`
	// Rewrite rules, applied in order; compiled and checked by package
	// rewrite.
	Rewrite []*Rule `koanf:"rewrite"`
	// AntiCheat names a bundled policy pack applied to every tool before
	// the rewrite rules: "benchmark-answers" (rewrite.PackBenchmarkAnswers)
	// refuses arguments that link to benchmark answers and removes such
	// links from results; "" or "off" applies none.
	AntiCheat string `koanf:"anti_cheat"`
	// MetaTools are the opt-in tools mcpmux serves itself, named
	// mcpmux<separator><name>: MetaToolStatus, MetaToolFindTools,
	// MetaToolCallTool.
	MetaTools []string `koanf:"meta_tools"`
	// Catalog is how profiles that set none list tools: CatalogEager
	// (every tool; "" means it) or CatalogLazy (see CatalogOf).
	Catalog string `koanf:"catalog"`
	// Always are the tools a lazy catalog lists besides the meta tools:
	// globs matched against the exposed name and the server's own name.
	Always []string `koanf:"always"`

	// Journal writes every tool call to a JSON Lines file per task; nil
	// means no journal (see journal.go).
	Journal *Journal `koanf:"journal"`
	// Replay answers calls from a journal instead of the servers; nil
	// means every call goes to its server.
	Replay *Replay `koanf:"replay"`
	// Pin holds the tools to the definitions of a recorded run or a
	// manifest; ToolPinning to those first seen, kept in
	// ToolPinningState (set by Load: ToolPinningStateFile in the config
	// directory).
	Pin              *Pin   `koanf:"pin"`
	ToolPinning      bool   `koanf:"tool_pinning"`
	ToolPinningState string `koanf:"-"`
	// Tracing exports OpenTelemetry spans of every request over OTLP; nil
	// means off, unless OTEL_TRACES_EXPORTER=otlp (see package tracing).
	Tracing *Tracing `koanf:"tracing"`

	File string `koanf:"-"`
	Hash string `koanf:"-"`

	// rules are Rewrite compiled by Validate.
	rules *rewrite.Rules
	// interpolated are the values ${...} references gave (see Secrets).
	interpolated []string
}

// Meta tools, served by mcpmux itself when listed in meta_tools.
const (
	MetaToolStatus    = "status"     // each server's state
	MetaToolFindTools = "find_tools" // search the catalog by words
	MetaToolCallTool  = "call_tool"  // call a tool by name
)

// MetaToolNames are the valid entries of meta_tools: the names of
// package aggregator's metaTools table, in its order (its tests and this
// package's hold them, and the schema's enum, to that table).
var MetaToolNames = []string{MetaToolStatus, MetaToolFindTools, MetaToolCallTool}

// LazyMetaTools are the meta tools a lazy profile (catalog: lazy) serves
// whatever meta_tools says, and its blacklist may not hide: without them
// its clients could reach nothing beyond always. Package aggregator's
// table marks the same ones (its tests hold them to it).
var LazyMetaTools = []string{MetaToolFindTools, MetaToolCallTool}

// HasMetaTool reports whether meta_tools lists name.
func (s *Settings) HasMetaTool(name string) bool { return slices.Contains(s.MetaTools, name) }

// Profile is a named view of the pool for one kind of agent, as MiroFlow's
// per-agent tool_config and tool_blacklist.
type Profile struct {
	// ToolConfig lists the servers the profile sees; empty means all.
	ToolConfig    []string   `koanf:"tool_config"`
	ToolBlacklist [][]string `koanf:"tool_blacklist"`
	// Catalog and Always override the global ones for this profile.
	Catalog string   `koanf:"catalog"`
	Always  []string `koanf:"always"`
}

// Catalog modes (catalog: in mcpmux.yaml, globally or per profile).
const (
	CatalogEager = "eager" // tools/list has every tool
	CatalogLazy  = "lazy"  // tools/list has the meta tools and always; find_tools the rest
)

// CatalogOf returns whether profile (DefaultProfile "" for the
// unrestricted one) lists its tools lazily, and the globs of the tools it
// then lists anyway: the profile's own catalog and always where it sets
// them, else the global ones. A lazy profile is served mcpmux's
// find_tools and call_tool whatever meta_tools says.
func (s *Settings) CatalogOf(profile string) (lazy bool, always []string) {
	mode, always := s.Catalog, s.Always
	if p := s.Profiles[profile]; p != nil && profile != "" {
		if p.Catalog != "" {
			mode = p.Catalog
		}
		if p.Always != nil {
			always = p.Always
		}
	}
	return mode == CatalogLazy, always
}

// Rule is one rewrite rule as written in mcpmux.yaml, and Fallback the
// call a rule makes when a tool failed. Package rewrite defines and
// compiles them, so that it needs nothing from config.
type (
	Rule     = rewrite.Spec
	Fallback = rewrite.FallbackSpec
)

// Tracing is the tracing key, as package tracing defines it.
type Tracing = tracing.Config

// DefaultSettings returns the settings used when mcpmux.yaml is absent.
func DefaultSettings() *Settings {
	s := &Settings{}
	s.normalize()
	return s
}

func (s *Settings) normalize() {
	if s.Separator == "" {
		s.Separator = DefaultSeparator
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if s.MaxRequestBytes == 0 {
		s.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if s.MaxResultBytes == 0 {
		s.MaxResultBytes = DefaultMaxResultBytes
	}
	if s.MaxSessions == 0 {
		s.MaxSessions = DefaultMaxSessions
	}
	if s.SessionTimeout == 0 {
		s.SessionTimeout = DefaultSessionTimeout
	}
	if s.RequestBodyTimeout == 0 {
		s.RequestBodyTimeout = DefaultRequestBodyTimeout
	}
	s.normalizeRecording()
}

var profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Validate reports the first problem that makes the settings unusable. It
// also compiles the rewrite rules, which [Settings.Rules] then returns.
func (s *Settings) Validate() error {
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,8}$`).MatchString(s.Separator) {
		return fieldErr("separator", fmt.Errorf("%q must be 1-8 characters from [A-Za-z0-9_-], so exposed names stay valid for clients", s.Separator))
	}
	if s.Timeout < 0 {
		return fieldErr("timeout", fmt.Errorf("must not be negative"))
	}
	if s.ConnectTimeout < 0 {
		return fieldErr("connect_timeout", fmt.Errorf("must not be negative"))
	}
	for i, m := range s.MetaTools {
		if !slices.Contains(MetaToolNames, m) {
			return fieldErr(fmt.Sprintf("meta_tools.%d", i), fmt.Errorf("unknown meta tool %q (%s)", m, strings.Join(MetaToolNames, ", ")))
		}
		if slices.Index(s.MetaTools, m) < i {
			return fieldErr(fmt.Sprintf("meta_tools.%d", i), fmt.Errorf("%q is listed twice", m))
		}
	}
	if err := validateCatalog("", s.Catalog, s.Always); err != nil {
		return err
	}
	for i, r := range s.Rewrite {
		if r == nil {
			return fieldErr(fmt.Sprintf("rewrite.%d", i), fmt.Errorf("empty rule"))
		}
	}
	rules, err := rewrite.Compile(s.Rewrite)
	if err != nil {
		var fe *rewrite.FieldError
		if errors.As(err, &fe) {
			return fieldErr(fe.Field, fe.Err)
		}
		return fieldErr("rewrite", err)
	}
	pack, err := rewrite.CompilePack(s.AntiCheat)
	if err != nil {
		return fieldErr("anti_cheat", err)
	}
	s.rules = pack.Then(rules)
	if err := validatePairs(s.ToolBlacklist); err != nil {
		return fieldErr("tool_blacklist", err)
	}
	for name, p := range s.Profiles {
		if !profileNameRE.MatchString(name) {
			return fieldErr("profiles", fmt.Errorf("%q is not a valid profile name (it is used in the URL path /mcp/{profile})", name))
		}
		if p == nil {
			return fieldErr("profiles."+name, fmt.Errorf("empty profile"))
		}
		if err := validatePairs(p.ToolBlacklist); err != nil {
			return fieldErr("profiles."+name+".tool_blacklist", err)
		}
		if err := validateCatalog("profiles."+name+".", p.Catalog, p.Always); err != nil {
			return err
		}
	}
	for _, name := range append([]string{""}, s.ProfileNames()...) {
		if lazy, _ := s.CatalogOf(name); lazy {
			if err := s.lazyNeedsItsMetaTools(name); err != nil {
				return err
			}
		}
	}
	if err := s.validateRecording(); err != nil {
		return err
	}
	if field, err := s.Tracing.Validate(); err != nil {
		return fieldErr("tracing."+field, err)
	}
	return s.validateSecurity()
}

// Rules returns the rewrite rules compiled by Validate; nil (no rules)
// before it ran.
func (s *Settings) Rules() *rewrite.Rules { return s.rules }

// validateCatalog checks a catalog mode and its always globs; field is
// the prefix of their keys.
func validateCatalog(field, mode string, always []string) error {
	switch mode {
	case "", CatalogEager, CatalogLazy:
	default:
		return fieldErr(field+"catalog", fmt.Errorf("%q is not a catalog mode (eager, lazy)", mode))
	}
	for i, g := range always {
		if g == "" {
			return fieldErr(fmt.Sprintf("%salways.%d", field, i), fmt.Errorf("empty pattern"))
		}
		if _, err := path.Match(g, ""); err != nil {
			return fieldErr(fmt.Sprintf("%salways.%d", field, i), fmt.Errorf("%q: %v (use *, ? and [...] as in shell globs)", g, err))
		}
	}
	return nil
}

// lazyNeedsItsMetaTools refuses a blacklist that hides find_tools or
// call_tool from a lazy profile: its clients could reach nothing beyond
// always.
func (s *Settings) lazyNeedsItsMetaTools(profile string) error {
	pairs := s.ToolBlacklist
	field := "tool_blacklist"
	if p := s.Profiles[profile]; p != nil && profile != "" {
		pairs = append(slices.Clone(pairs), p.ToolBlacklist...)
		field = "profiles." + profile + ".tool_blacklist"
	}
	for _, p := range pairs {
		if len(p) == 2 && p[0] == "mcpmux" && slices.Contains(LazyMetaTools, p[1]) {
			what := "the default profile"
			if profile != "" {
				what = "profile " + profile
			}
			return fieldErr(field, fmt.Errorf("%s lists tools lazily (catalog: lazy) and needs mcpmux%s%s, which the blacklist hides", what, s.Separator, p[1]))
		}
	}
	return nil
}

func validatePairs(pairs [][]string) error {
	for i, p := range pairs {
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return fmt.Errorf("entry %d is %q: want a [server, tool] pair", i, p)
		}
	}
	return nil
}

// ProfileNames returns the configured profile names, sorted.
func (s *Settings) ProfileNames() []string {
	names := make([]string, 0, len(s.Profiles))
	for n := range s.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FieldError is a problem with one field of a config file.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, err error) error { return &FieldError{Field: field, Err: err} }

// FileError is a config file that could not be used, and why.
type FileError struct {
	File string
	Line int // 0 when unknown
	Err  error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Snapshot is one complete reading of a config directory.
type Snapshot struct {
	Dir      string
	Settings *Settings
	// Servers are the valid, enabled servers, sorted by name.
	Servers []*Server
	// Disabled are valid servers with enabled: false.
	Disabled []*Server
	// Errors are the files that could not be used, sorted by file.
	Errors []*FileError
	// Offline are the server files not read because they name an unset
	// environment variable while replay.catalog: recorded starts no
	// server: no error, since nothing would use the value.
	Offline []*FileError

	failedSecrets []string // of files in Errors, for Secrets
}

// Server returns the server with the given name, or nil.
func (s *Snapshot) Server(name string) *Server {
	for _, srv := range s.Servers {
		if srv.Name == name {
			return srv
		}
	}
	return nil
}

// ErrorFor returns the load error of file, or nil.
func (s *Snapshot) ErrorFor(file string) *FileError {
	for _, e := range s.Errors {
		if e.File == file {
			return e
		}
	}
	return nil
}

func stem(file string) string {
	base := file[strings.LastIndexByte(file, '/')+1:]
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
}
