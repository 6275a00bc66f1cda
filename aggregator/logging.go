package aggregator

//lint:file-ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the clients' log level to the servers and their messages back.

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log levels in increasing severity (RFC 5424, as MCP uses them).
var levelRank = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}

// logLevelMiddleware passes a client's logging/setLevel on to the servers
// as the lowest level any client asked for.
func (c *clientSessions) logLevelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		if ss == nil || p == nil {
			return res, err
		}
		c.pushLogLevel(ctx, c.setLevel(ctx, ss, p.Level))
		return res, err
	}
}

// pushLogLevel sets level on every server that does not have it yet.
func (c *clientSessions) pushLogLevel(ctx context.Context, level mcp.LoggingLevel) {
	if level == "" {
		return
	}
	for _, s := range c.pool.Servers() {
		if s.LoggingLevel() != level {
			s.SetLoggingLevel(ctx, level)
		}
	}
}
