package upstream

//lint:file-ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 with servers (docs/protocol.md), where it is not, and sets their log level for its clients.

import (
	"context"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevel is the log level mcpmux's clients asked of a server, kept to
// be set on each of its new connections. It has a lock of its own: it
// needs nothing else of the server.
type logLevel struct {
	mu    sync.Mutex
	level mcp.LoggingLevel // the clients' lowest logging/setLevel; "" until one sets it
}

func (l *logLevel) set(level mcp.LoggingLevel) {
	l.mu.Lock()
	l.level = level
	l.mu.Unlock()
}

func (l *logLevel) get() mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level
}

// apply sets the kept level on a new connection.
func (l *logLevel) apply(ctx context.Context, c *conn) {
	if level := l.get(); level != "" {
		c.setLogLevel(ctx, level)
	}
}

// SetLoggingLevel asks the server to send log messages at level and above
// (logging/setLevel). The level is kept and set again on every new
// connection: after a restart, and on each per-client connection. Servers
// that do not advertise logging are not asked.
func (s *Server) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) {
	s.logLevel.set(level)
	s.mu.Lock()
	var conns []*conn
	if s.cur != nil {
		conns = append(conns, s.cur)
	}
	for _, c := range s.clients.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.setLogLevel(ctx, level)
	}
}

func (c *conn) setLogLevel(ctx context.Context, level mcp.LoggingLevel) {
	if c.stateless() {
		// MCP 2026-07-28 has no logging/setLevel: the level goes with
		// every request, in its _meta (era.go).
		return
	}
	ir := c.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		c.srv.log.Debug("setting the server's log level failed", "level", level, "error", err)
	}
}

// logDownstream logs a server's notifications/message in log, the
// server's logger: it needs nothing else of the server.
func logDownstream(ctx context.Context, log *slog.Logger, req *mcp.LoggingMessageRequest) {
	p := req.Params
	level := slog.LevelInfo
	switch p.Level {
	case "debug":
		level = slog.LevelDebug
	case "notice", "info":
		level = slog.LevelInfo
	case "warning":
		level = slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		level = slog.LevelError
	}
	log.Log(ctx, level, "server log message", "logger", p.Logger, "data", p.Data)
}

// LoggingLevel returns the level set with SetLoggingLevel, or "".
func (s *Server) LoggingLevel() mcp.LoggingLevel { return s.logLevel.get() }
