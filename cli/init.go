package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// starterConfig is what mcpmux init writes: starter/ (the settings and
// three commented tool files: the built-in fetch engine, running; a child
// process and a URL, disabled) and the JSON Schemas that editors check the
// files against.
//
//go:embed starter config/schema/*.json
var starterConfig embed.FS

// starterFiles maps the embedded files to their paths in the new config
// directory.
func starterFiles() (map[string]string, error) {
	files := map[string]string{}
	err := iofs.WalkDir(starterConfig, ".", func(p string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch dir, name := path.Split(p); dir {
		case "config/schema/":
			files[p] = path.Join("schema", name)
		default:
			files[p] = p[len("starter/"):]
		}
		return nil
	})
	return files, err
}

// initCmd writes a commented starter config directory. It never overwrites
// a file unless --force: with one in the way it writes nothing.
func initCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("init", stdout, stderr)
	var dir string
	registerConfigDir(fs, &dir)
	force := fs.Bool("force", false, "overwrite the files of an existing config directory")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	files, err := starterFiles()
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux init:", err)
		return 1
	}
	if !*force {
		var existing []string
		for _, rel := range slices.Sorted(maps.Values(files)) {
			if _, err := os.Lstat(filepath.Join(dir, rel)); !errors.Is(err, iofs.ErrNotExist) {
				existing = append(existing, filepath.Join(dir, rel))
			}
		}
		if len(existing) > 0 {
			fmt.Fprintf(stderr, "mcpmux init: nothing written: %s exist already (--force overwrites them)\n", strings.Join(existing, ", "))
			return 1
		}
	}
	for _, src := range slices.Sorted(maps.Keys(files)) {
		dest := filepath.Join(dir, files[src])
		data, err := starterConfig.ReadFile(src)
		if err == nil {
			if err = os.MkdirAll(filepath.Dir(dest), 0o755); err == nil {
				err = writeFile(dest, data, *force)
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "mcpmux init: writing the starter config:", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote  %s\n", dest)
	}
	flag := ""
	if dir != "config" {
		flag = " --config " + dir
	}
	fmt.Fprintf(stdout, `
%s runs the built-in fetch tool, and has two disabled examples to copy:
a server started as a child process (tool/everything.yaml) and one
reached by URL (tool/remote.yaml). Next:
  mcpmux check%s    start its servers once and report their state
  mcpmux%s          serve them over stdio (add --http 127.0.0.1:8080 for HTTP)
`, dir, flag, flag)
	return 0
}
