// Command mcpmux is an MCP aggregator: it serves the tools of many MCP tool
// servers, configured one YAML file each, as one namespaced catalog over
// stdio or Streamable HTTP.
//
// Usage:
//
//	mcpmux [--config DIR] [--profile NAME]        serve over stdio
//	mcpmux --http ADDR [--config DIR]             serve Streamable HTTP at /mcp, /mcp/{profile}
//	mcpmux init [--config DIR]                    write a commented starter config directory
//	mcpmux check [--config DIR]                   connect to every server and report
//	mcpmux tools [--config DIR] [--json]          print the merged catalog
//	mcpmux import FILE [--config DIR] [--force]   write tool files from a client's MCP config
//	mcpmux journal DIR [--json] [--html FILE]     summarise a call journal per task
//	mcpmux login SERVER [--config DIR]            authorize mcpmux to a server with auth: oauth
//	mcpmux logout SERVER                          delete a server's stored OAuth tokens
//	mcpmux fetch-server [flags]                   serve the built-in fetch tool on stdio
//	mcpmux healthcheck [URL]                      probe /healthz, for a container HEALTHCHECK
//	mcpmux version
//	mcpmux help [COMMAND]
//
// The command line is package cli; one running mcpmux, package app.
package main

import (
	"os"

	"github.com/mcpmux/mcpmux/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
