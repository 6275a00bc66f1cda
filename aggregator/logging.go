package aggregator

//lint:file-ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the clients' log level to the servers and their messages back.

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log levels in increasing severity (RFC 5424, as MCP uses them).
var levelRank = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}

// logLevels remembers each client session's logging/setLevel. Servers are
// asked for the lowest of them (a shared connection serves every client);
// each client then gets only what its own level lets through, which the
// SDK filters per session.
type logLevels struct {
	mu     sync.Mutex
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

func (l *logLevels) set(ss *mcp.ServerSession, level mcp.LoggingLevel) (lowest mcp.LoggingLevel, isNew bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.levels == nil {
		l.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	_, seen := l.levels[ss]
	l.levels[ss] = level
	return l.lowestLocked(), !seen
}

func (l *logLevels) forget(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.levels, ss)
}

func (l *logLevels) lowest() mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lowestLocked()
}

func (l *logLevels) lowestLocked() mcp.LoggingLevel {
	var low mcp.LoggingLevel
	for _, lv := range l.levels {
		if low == "" || levelRank[lv] < levelRank[low] {
			low = lv
		}
	}
	return low
}

// logLevelMiddleware passes a client's logging/setLevel on to the servers
// as the lowest level any client asked for.
func (a *Aggregator) logLevelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
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
		lowest, isNew := a.levels.set(ss, p.Level)
		if isNew {
			a.ends.on(ss, func() { a.levels.forget(ss) })
		}
		a.pushLogLevel(ctx, lowest)
		return res, err
	}
}

// pushLogLevel sets level on every server that does not have it yet.
func (a *Aggregator) pushLogLevel(ctx context.Context, level mcp.LoggingLevel) {
	if level == "" {
		return
	}
	for _, s := range a.pool.Servers() {
		if s.LoggingLevel() != level {
			s.SetLoggingLevel(ctx, level)
		}
	}
}
