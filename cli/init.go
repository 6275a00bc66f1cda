package cli

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/starter"
)

// starterFiles maps the paths of the files mcpmux init writes, relative to
// the new config directory, to the file systems that hold them: the
// starter config, and the JSON Schemas that its files name for editors.
func starterFiles() (map[string]iofs.FS, error) {
	files := map[string]iofs.FS{}
	for _, fsys := range []iofs.FS{starter.Files, config.Schemas} {
		err := iofs.WalkDir(fsys, ".", func(p string, d iofs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files[p] = fsys
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
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
		for _, rel := range slices.Sorted(maps.Keys(files)) {
			if _, err := os.Lstat(filepath.Join(dir, rel)); !errors.Is(err, iofs.ErrNotExist) {
				existing = append(existing, filepath.Join(dir, rel))
			}
		}
		if len(existing) > 0 {
			fmt.Fprintf(stderr, "mcpmux init: nothing written: %s exist already (--force overwrites them)\n", strings.Join(existing, ", "))
			return 1
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		dest := filepath.Join(dir, filepath.FromSlash(rel))
		data, err := iofs.ReadFile(files[rel], rel)
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
