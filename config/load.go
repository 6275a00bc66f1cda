package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

// SettingsFile is the name of the optional settings file in the config dir.
const SettingsFile = "mcpmux.yaml"

// ToolDir is the subdirectory holding one file per tool server.
const ToolDir = "tool"

// Options control loading. The zero value reads the process environment.
type Options struct {
	// Lookup resolves ${...} references; nil means os.LookupEnv.
	Lookup LookupFunc
	// Stateless refuses the servers that need client sessions: set by a
	// front that serves without sessions (mcpmux --http --stateless, or
	// stateless: true in mcpmux.yaml), whatever a later mcpmux.yaml says.
	Stateless bool
}

// Load reads the config directory dir. It fails only when dir itself cannot
// be read; problems with single files are reported in Snapshot.Errors.
func Load(dir string, opts *Options) (*Snapshot, error) {
	lookup := os.LookupEnv
	if opts != nil && opts.Lookup != nil {
		lookup = opts.Lookup
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading config directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("reading config directory: %s is not a directory", dir)
	}
	snap := &Snapshot{Dir: dir, Settings: DefaultSettings()}

	if path, data, err := readSettingsFile(dir); err != nil {
		snap.Errors = append(snap.Errors, &FileError{File: path, Err: pathErr(err)})
	} else if data != nil {
		s, ferr := ParseSettings(path, data, lookup)
		if ferr != nil {
			snap.Errors = append(snap.Errors, ferr)
		} else {
			if s.TokenFile != "" && !filepath.IsAbs(s.TokenFile) {
				s.TokenFile = filepath.Join(dir, s.TokenFile)
			}
			s.resolveRecordingDirs(dir)
			snap.Settings = s
		}
	}

	stateless := opts != nil && opts.Stateless

	files, err := toolFiles(filepath.Join(dir, ToolDir))
	if err != nil {
		return nil, err
	}
	byName := map[string]*Server{}
	for _, path := range files {
		data, err := ReadFile(path)
		if err != nil {
			snap.Errors = append(snap.Errors, &FileError{File: path, Err: pathErr(err)})
			continue
		}
		srv, ferr := ParseServer(path, data, lookup)
		if ferr != nil && snap.Settings.ReplaysCatalog() && errors.As(ferr, new(*MissingVarError)) {
			// Offline replay starts no server: a variable only its
			// process would get is no error.
			snap.Offline = append(snap.Offline, ferr)
			snap.failedSecrets = append(snap.failedSecrets, looseSecrets(data, lookup)...)
			continue
		}
		if ferr != nil {
			snap.Errors = append(snap.Errors, ferr)
			// Its error may quote a value; mask what can be read.
			snap.failedSecrets = append(snap.failedSecrets, looseSecrets(data, lookup)...)
			continue
		}
		if prev, dup := byName[srv.Name]; dup {
			snap.Errors = append(snap.Errors, &FileError{File: path, Line: lineOfKey(data, "name"),
				Err: fmt.Errorf("name: server %q is already defined in %s", srv.Name, prev.File)})
			continue
		}
		byName[srv.Name] = srv
		if stateless && srv.PerClient() {
			snap.Errors = append(snap.Errors, statelessError(path, data))
			continue
		}
		if srv.Cwd != "" && !filepath.IsAbs(srv.Cwd) {
			srv.Cwd = filepath.Join(dir, srv.Cwd)
		}
		if srv.OutputDir != "" && !filepath.IsAbs(srv.OutputDir) {
			srv.OutputDir = filepath.Join(dir, srv.OutputDir)
		}
		srv.Auth.resolvePaths(dir)
		if srv.IsEnabled() {
			snap.Servers = append(snap.Servers, srv)
		} else {
			snap.Disabled = append(snap.Disabled, srv)
		}
	}
	slices.SortFunc(snap.Servers, func(a, b *Server) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(snap.Errors, func(a, b *FileError) int { return strings.Compare(a.File, b.File) })
	return snap, nil
}

func readSettingsFile(dir string) (string, []byte, error) {
	for _, name := range []string{SettingsFile, "mcpmux.yml"} {
		path := filepath.Join(dir, name)
		data, err := ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return path, data, err
	}
	return "", nil, nil
}

// toolFiles lists the *.yaml and *.yml entries of dir, sorted. Hidden ones
// (editor swap files, Kubernetes' ..data) are skipped; a missing dir is
// empty. Entries that are not regular files (a FIFO, a directory, a symlink
// to a device) are listed too, for ReadFile to refuse by name.
func toolFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading tool directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !IsConfigFile(name) {
			continue
		}
		files = append(files, filepath.Join(dir, name))
	}
	slices.Sort(files)
	return files, nil
}

// IsConfigFile reports whether a file name is one mcpmux reads.
func IsConfigFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// ParseServer decodes one tool server file. path is used for messages and
// for the default name (the file's stem).
func ParseServer(path string, data []byte, lookup LookupFunc) (*Server, *FileError) {
	var s Server
	if ferr := decode(path, data, lookup, &s, s.addInterpolated); ferr != nil {
		return nil, ferr
	}
	s.normalize(stem(path))
	if err := s.Validate(); err != nil {
		return nil, newFileError(path, data, err)
	}
	s.Hash = hashOf(&s)
	s.File = path
	return &s, nil
}

// ParseSettings decodes mcpmux.yaml.
func ParseSettings(path string, data []byte, lookup LookupFunc) (*Settings, *FileError) {
	var s Settings
	if ferr := decode(path, data, lookup, &s, func(v string) { s.interpolated = append(s.interpolated, v) }); ferr != nil {
		return nil, ferr
	}
	s.normalize()
	if err := s.Validate(); err != nil {
		return nil, newFileError(path, data, err)
	}
	s.Hash = hashOf(&s)
	s.File = path
	return &s, nil
}

// hashOf identifies a decoded value, so that edits that change nothing (a
// comment, reordered keys) are recognised as no change.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // config types are always marshalable
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// delim is koanf's key-path delimiter. Environment variable and tool names
// may contain dots, so use a byte that cannot appear in YAML keys we accept.
const delim = "\x00"

// decode parses YAML with koanf, expands ${...} in every string value
// (telling found each value substituted), and decodes strictly into out:
// unknown keys and wrong types are errors.
//
// The parsed tree is expanded and decoded in one pass, in place: setting
// each expanded value back into koanf (which re-merges its whole map on
// every Set) made a file of 10 000 keys take a minute.
func decode(path string, data []byte, lookup LookupFunc, out any, found func(string)) *FileError {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	k := koanf.New(delim)
	if err := k.Load(rawbytes.Provider(data), yamlParser{}); err != nil {
		return &FileError{File: path, Line: yamlErrorLine(err), Err: fmt.Errorf("invalid YAML: %v", trimYAMLError(err))}
	}
	tree := k.Raw()
	if ferr := expandTree(path, data, tree, nil, lookup, found); ferr != nil {
		return ferr
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:  mapstructure.ComposeDecodeHookFunc(authHook, durationHook, sizeHook, scalarToStringHook),
		ErrorUnused: true,
		TagName:     "koanf",
		Result:      out,
	})
	if err != nil {
		return &FileError{File: path, Err: err}
	}
	if err := dec.Decode(tree); err != nil {
		return decodeError(path, data, reflect.TypeOf(out), err)
	}
	return nil
}

// expandTree expands references in the values of a parsed map, in place,
// keys in sorted order so that the first error is always the same one. at
// is the key path of m; an error names the field and its line.
func expandTree(path string, data []byte, m map[string]any, at []string, lookup LookupFunc, found func(string)) *FileError {
	for _, key := range slices.Sorted(maps.Keys(m)) {
		field := append(slices.Clip(at), key)
		if sub, ok := m[key].(map[string]any); ok {
			if ferr := expandTree(path, data, sub, field, lookup, found); ferr != nil {
				return ferr
			}
			continue
		}
		expanded, err := expandAll(m[key], lookup, found)
		if err != nil {
			return &FileError{File: path, Line: lineOfPath(data, field), Err: fmt.Errorf("%s: %w", strings.Join(field, "."), err)}
		}
		m[key] = expanded
	}
	return nil
}

// expandAll expands references in every string inside v.
func expandAll(v any, lookup LookupFunc, found func(string)) (any, error) {
	switch v := v.(type) {
	case string:
		return expand(v, lookup, found)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := expandAll(e, lookup, found)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for key, e := range v {
			x, err := expandAll(e, lookup, found)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			out[key] = x
		}
		return out, nil
	}
	return v, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// durationHook accepts "90s", "15m" and plain numbers of seconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(n * float64(time.Second)), nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration (e.g. 30s, 15m, 1h)", v)
		}
		return d, nil
	case int:
		return time.Duration(v) * time.Second, nil
	case int64:
		return time.Duration(v) * time.Second, nil
	case uint64:
		return time.Duration(v) * time.Second, nil
	case float64:
		return time.Duration(v * float64(time.Second)), nil
	}
	return data, nil
}

// scalarToStringHook lets unquoted YAML scalars stand for strings, as in
// `DEFAULT_TIMEOUT: 1800` or `REMOVE_SNIPPETS: false` under env.
func scalarToStringHook(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.String {
		return data, nil
	}
	switch v := data.(type) {
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case time.Time:
		// YAML reads an unquoted date (protocol: 2025-11-25) as a time:
		// the text is what was written.
		if v.Equal(v.Truncate(24*time.Hour)) && v.Location() == time.UTC {
			return v.Format(time.DateOnly), nil
		}
		return v.Format(time.RFC3339Nano), nil
	}
	return data, nil
}

var (
	invalidKeysRE  = regexp.MustCompile(`'([^']*)' has invalid keys: ([^\n]+)`)
	leadingFieldRE = regexp.MustCompile(`^'([^']+)' (.*)$`)
	yamlLineRE     = regexp.MustCompile(`line (\d+)`)
)

// topLevel reports whether a mapstructure error's field name is the top
// level of a value of type t: "" before mapstructure 2.5, the type's name
// ("config.Settings") since.
func topLevel(t reflect.Type, name string) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return name == "" || (t != nil && name == t.String())
}

// decodeError turns a mapstructure error from decoding into a value of
// type t into a FileError that names the field and, where it can be found,
// its line. An unknown key comes with the key that was likely meant.
func decodeError(path string, data []byte, t reflect.Type, err error) *FileError {
	msg := err.Error()
	if m := invalidKeysRE.FindStringSubmatch(msg); m != nil {
		if topLevel(t, m[1]) {
			m[1] = "" // mapstructure ≥ 2.5 names the top level by its type
		}
		keys := strings.Split(m[2], ", ")
		fieldPath := splitFieldPath(m[1])
		line := lineOfPath(data, append(fieldPath, keys[0]))
		where := "top level"
		if m[1] != "" {
			where = m[1]
		}
		if len(keys) == 1 {
			text := fmt.Sprintf("unknown field %q at %s", keys[0], where)
			if hint := keyHint(t, fieldPath, keys[0]); hint != "" {
				text += ": " + hint
			}
			return &FileError{File: path, Line: line, Err: errors.New(text)}
		}
		described := make([]string, len(keys))
		for i, k := range keys {
			described[i] = strconv.Quote(k)
			if hint := keyHint(t, fieldPath, k); hint != "" {
				described[i] += " (" + hint + ")"
			}
		}
		return &FileError{File: path, Line: line, Err: fmt.Errorf("unknown fields at %s: %s", where, strings.Join(described, ", "))}
	}
	// Keep mapstructure's text, without its "decoding failed" preamble.
	detail := msg
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		detail = strings.TrimSpace(msg[i+1:])
	}
	detail = strings.TrimPrefix(detail, "* ")
	line := 0
	if m := leadingFieldRE.FindStringSubmatch(detail); m != nil {
		line = lineOfPath(data, splitFieldPath(m[1]))
		detail = m[1] + ": " + m[2]
	}
	return &FileError{File: path, Line: line, Err: errors.New(detail)}
}

// splitFieldPath turns mapstructure's "profiles[a].tool_config[0]" into
// the key path ["profiles", "a", "tool_config", "0"].
func splitFieldPath(p string) []string {
	if p == "" {
		return nil
	}
	p = strings.NewReplacer("[", ".", "]", "").Replace(p)
	return strings.Split(p, ".")
}

func newFileError(path string, data []byte, err error) *FileError {
	var fe *FieldError
	line := 0
	if errors.As(err, &fe) {
		line = lineOfPath(data, strings.Split(fe.Field, "."))
	}
	return &FileError{File: path, Line: line, Err: err}
}

func yamlErrorLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func trimYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	return yamlLineRE.ReplaceAllString(strings.TrimPrefix(s, "unmarshal errors:\n  "), "line $1")
}

// statelessError is the error of a per-client server in stateless mode: a
// per-client server gives each client session its own connection (a
// browser each), and without sessions every request would be a new client
// that starts one and leaves it at once.
func statelessError(path string, data []byte) *FileError {
	return &FileError{File: path, Line: lineOfKey(data, "session"), Err: errors.New(
		"session: per-client (the default for a server named playwright) needs client sessions, and mcpmux serves stateless HTTP (--stateless or stateless: true in mcpmux.yaml), where every request is a client of its own: " +
			"set session: shared (one connection for all clients), or serve with sessions behind a load balancer that keeps each session on its replica (docs/scaling.md)")}
}
