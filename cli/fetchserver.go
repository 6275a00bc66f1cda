package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/fetchserver"
)

// fetchServerCmd serves the built-in fetch tool on stdio. It is what
// config/tool/fetch.yaml runs ("tool_command: mcpmux" is this binary), and
// it can be used on its own by any MCP client.
//
// stdout is not used: the protocol owns the process's real stdout, as it
// does for every stdio server. Logs go to stderr, where a parent mcpmux
// picks them up.
func fetchServerCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fetch-server", stdout, stderr) // stdout: for -h only
	timeout := fs.Duration("timeout", fetchserver.DefaultTimeout, "deadline of one fetch, redirects and body included")
	maxBytes := fs.Int64("max-bytes", fetchserver.DefaultMaxBytes, "most bytes of a response body to read; the rest is left unread and the result says so")
	allowPrivate := fs.Bool("allow-private-networks", false, "allow fetching loopback and private-network addresses (link-local and cloud metadata addresses stay refused)")
	cf := commonFlags{logFormat: "text"}
	fs.StringVar(&cf.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&cf.logFormat, "log-format", "text", "log format: text or json")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "mcpmux fetch-server: --timeout must be positive")
		return 2
	}
	if *maxBytes <= 0 {
		fmt.Fprintln(stderr, "mcpmux fetch-server: --max-bytes must be positive")
		return 2
	}
	log, _, err := cf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux fetch-server:", err)
		return 2
	}

	server := fetchserver.New(&fetchserver.Options{
		Timeout:              *timeout,
		MaxBytes:             *maxBytes,
		AllowPrivateNetworks: *allowPrivate,
		Version:              buildVersion(),
		Logger:               log,
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ss, err := server.Connect(ctx, &mcp.StdioTransport{}, nil)
	if err != nil {
		log.Error("cannot serve on stdio", "error", err)
		return 1
	}
	log.Info("fetch server ready on stdio", "timeout", *timeout, "max_bytes", *maxBytes, "allow_private_networks", *allowPrivate)

	// The session ends when the client closes stdin; a signal closes it
	// from this side.
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		_ = ss.Close()
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
		}
		return 0
	}
	if err != nil && !errors.Is(err, io.EOF) {
		log.Error("stdio session ended with an error", "error", err)
		return 1
	}
	return 0
}
