package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/importer"
)

// importCmd writes one tool/<name>.yaml per server of an MCP client's
// config file. It never overwrites a file unless --force, and exits 1 if
// any server was skipped or could not be imported, so that a script notices.
// What it prints names servers, files, env and header keys, never values.
func importCmd(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("import", stdout, stderr)
	var cf commonFlags
	cf.register(flags, "error")
	force := flags.Bool("force", false, "overwrite existing tool files")
	files, code, ok := parseWithPositionals(flags, args)
	if !ok {
		return code
	}
	if len(files) != 1 {
		return flagError(flags, fmt.Errorf("want one FILE, got %d", len(files)))
	}
	file := files[0]

	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "mcpmux import: reading client config: %v\n", err)
		return 1
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	res, err := importer.Parse(data, &importer.Options{WorkspaceFolder: workspaceOf(abs)})
	if err != nil {
		fmt.Fprintf(stderr, "mcpmux import: %s: %v\n", file, err)
		return 1
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "mcpmux import: warning: %s\n", w)
	}

	toolDir := filepath.Join(cf.configDir, config.ToolDir)
	if err := os.MkdirAll(toolDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "mcpmux import: creating tool directory: %v\n", err)
		return 1
	}
	existing := existingServers(toolDir)
	written, skipped := 0, 0
	for _, e := range res.Entries {
		path := filepath.Join(toolDir, e.Server.Name+".yaml")
		if other, ok := existing[strings.ToLower(e.Server.Name)]; ok && other != path {
			fmt.Fprintf(stdout, "skipped  %s  (server %q is already defined in %s)\n", path, e.Server.Name, other)
			skipped++
			continue
		}
		out, err := importer.Render(e, abs)
		if err == nil {
			err = writeFile(path, out, *force)
		}
		switch {
		case errors.Is(err, fs.ErrExist):
			fmt.Fprintf(stdout, "skipped  %s  (exists; --force overwrites it)\n", path)
			skipped++
		case err != nil:
			fmt.Fprintf(stdout, "skipped  %s  (writing failed: %v)\n", path, err)
			skipped++
		default:
			fmt.Fprintf(stdout, "wrote    %s  (%s)\n", path, summary(e))
			for _, n := range e.Notes {
				fmt.Fprintf(stderr, "mcpmux import: %s: %s\n", e.Server.Name, n)
			}
			written++
		}
	}
	for _, e := range res.Invalid {
		fmt.Fprintf(stdout, "invalid  %v\n", e)
	}
	for _, e := range res.Ignored {
		fmt.Fprintf(stdout, "ignored  %v\n", e)
	}
	fmt.Fprintf(stdout, "\n%s: %d servers (%s format): %d written, %d skipped, %d invalid, %d ignored\n",
		file, len(res.Entries)+len(res.Invalid)+len(res.Ignored), res.Format.Describe(), written, skipped, len(res.Invalid), len(res.Ignored))
	if skipped > 0 || len(res.Invalid) > 0 {
		return 1
	}
	return 0
}

// workspaceOf is the folder VS Code and Cursor call ${workspaceFolder} for
// a config at path: the parent of its .vscode or .cursor directory.
func workspaceOf(path string) string {
	dir := filepath.Dir(path)
	if b := filepath.Base(dir); b == ".vscode" || b == ".cursor" {
		return filepath.Dir(dir)
	}
	return ""
}

// existingServers maps the lower-cased server names defined in dir to their
// files, so that an import does not add a second file for a name config.Load
// would reject as a duplicate (or that collides on a case-insensitive file
// system). A file that does not parse counts under its stem.
func existingServers(dir string) map[string]string {
	names := map[string]string{}
	entries, _ := os.ReadDir(dir)
	for _, de := range entries {
		n := de.Name()
		if de.IsDir() || strings.HasPrefix(n, ".") || !config.IsConfigFile(n) {
			continue
		}
		path := filepath.Join(dir, n)
		var head struct {
			Name string `yaml:"name"`
		}
		if data, err := config.ReadFile(path); err == nil {
			_ = yaml.Unmarshal(data, &head)
		}
		if head.Name == "" {
			head.Name = strings.TrimSuffix(strings.TrimSuffix(n, ".yaml"), ".yml")
		}
		names[strings.ToLower(head.Name)] = path
	}
	return names
}

// writeFile writes a tool file readable only by its owner, as it may hold
// secrets. Without force it fails with fs.ErrExist rather than replace a
// file; with force it replaces the file in one rename, so that a running
// mcpmux watching the directory never reads half a file.
func writeFile(path string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
		return err
	}
	// A hidden temporary name: config.Load and the watcher skip dot files.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// summary describes an imported server without values: its transport, the
// program's base name or the URL's host, and the names of env variables and
// headers. Arguments and the rest of a URL may hold credentials.
func summary(e *importer.Entry) string {
	s := e.Server
	parts := []string{s.Type}
	if s.Command != "" {
		parts[0] += " " + filepath.Base(s.Command)
	} else if u, err := url.Parse(s.URL); err == nil && u.Host != "" && !strings.Contains(u.Host, "${") {
		parts[0] += " " + u.Host
	}
	if !s.IsEnabled() {
		parts = append(parts, "disabled")
	}
	if len(s.Env) > 0 {
		parts = append(parts, "env "+strings.Join(slices.Sorted(maps.Keys(s.Env)), ", "))
	}
	if len(s.Headers) > 0 {
		parts = append(parts, "headers "+strings.Join(slices.Sorted(maps.Keys(s.Headers)), ", "))
	}
	return strings.Join(parts, "; ")
}
