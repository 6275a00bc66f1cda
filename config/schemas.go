package config

import "embed"

// Schemas are the JSON Schemas of tool/*.yaml and mcpmux.yaml, for editors
// (schema/*.json, at their paths in a config directory): mcpmux init
// writes them beside its starter files, which name them.
//
//go:embed schema/*.json
var Schemas embed.FS
