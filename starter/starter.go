// Package starter holds the config directory that mcpmux init writes: the
// settings and three commented tool files (the built-in fetch engine,
// running; a child process and a URL, disabled). Beside them init writes
// config.Schemas, which the files name for editors.
package starter

import "embed"

// Files are mcpmux.yaml and tool/*.yaml, at their paths in a config
// directory.
//
//go:embed mcpmux.yaml tool
var Files embed.FS
