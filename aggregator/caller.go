package aggregator

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// sessionCaller forwards what a server asks during a request to the client
// session that made it. It holds the request's context, so that what it
// sends travels with that request (on its HTTP response stream).
type sessionCaller struct {
	ctx       context.Context
	ss        *mcp.ServerSession
	id        string
	stateless bool // no session: requests to the client are refused
}

var _ upstream.Caller = (*sessionCaller)(nil)

func newCaller(ctx context.Context, ss *mcp.ServerSession, stateless bool) upstream.Caller {
	if ss == nil {
		return nil
	}
	return &sessionCaller{ctx: ctx, ss: ss, id: sessionKey(ss), stateless: stateless}
}

// errStateless is why a stateless front asks its clients nothing: the
// go-sdk refuses requests to a client of stateless HTTP, which could not
// answer them (its answer would be a request of its own, to any replica).
var errStateless = errors.New("mcpmux serves stateless HTTP (--stateless), where it cannot send requests to its clients")

func (c *sessionCaller) ID() string { return c.id }

func (c *sessionCaller) capabilities() *mcp.ClientCapabilities {
	if p := c.ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

// reqCtx is the client request's context while it runs; a server's message
// arriving after it ended goes out on its own.
func (c *sessionCaller) reqCtx(ctx context.Context) context.Context {
	if c.ctx.Err() == nil {
		return c.ctx
	}
	return ctx
}

func (c *sessionCaller) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if c.stateless {
		return nil, errStateless
	}
	if c.capabilities().Sampling == nil {
		return nil, fmt.Errorf("the client does not support sampling")
	}
	return c.ss.CreateMessageWithTools(c.reqCtx(ctx), p)
}

func (c *sessionCaller) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if c.stateless {
		return nil, errStateless
	}
	return c.ss.Elicit(c.reqCtx(ctx), p) // the SDK checks the client's elicitation modes
}

func (c *sessionCaller) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if c.stateless {
		return nil, errStateless
	}
	caps := c.capabilities()
	if caps.RootsV2 == nil {
		return nil, fmt.Errorf("the client does not support roots")
	}
	return c.ss.ListRoots(c.reqCtx(ctx), p)
}

// Log sends a server's log message to the client, at or above the level
// the client set with logging/setLevel (none before it sets one).
func (c *sessionCaller) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	_ = c.ss.Log(c.reqCtx(ctx), p)
}

// sessionKey identifies a client session: its HTTP session id, or, on
// stdio, the session itself.
func sessionKey(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return id
	}
	return fmt.Sprintf("session-%p", ss)
}
