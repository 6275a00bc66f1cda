package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/oauth"
	"github.com/mcpmux/mcpmux/tracing"
)

// A client's request to a server: on which connection it runs, how it is
// sent (once more if the server did not get it), and what its failure
// means.

// Request says on whose behalf a request runs.
type Request struct {
	Client ClientID // caller's session, for per-client servers
	RunID  string   // caller's evaluation task id (TASK_ID of a per-client child)
	Caller Caller   // receives the server's requests and logs meanwhile; may be nil
	// Features are the caller's capabilities, which its own connection to a
	// per-client server declares; the zero value declares none (use
	// AllFeatures for a caller without known capabilities).
	Features ClientFeatures
	// ClientInfo is the caller's clientInfo, which a 2026-07-28 request
	// carries (era.go); nil: mcpmux's own.
	ClientInfo *mcp.Implementation
	// LogLevel is the log level of a 2026-07-28 caller's request (its
	// _meta's io.modelcontextprotocol/logLevel, "" for none), if OwnLevel:
	// a 2026 server is asked for it with the request (era.go), instead of
	// the level of the callers of 2025-11-25 sessions.
	//lint:ignore SA1019 deprecated from 2026-07-28 on, still functional.
	LogLevel mcp.LoggingLevel
	OwnLevel bool
}

// CallParams is one tool call for a server.
type CallParams struct {
	Request
	Params *mcp.CallToolParams
	// Progress, if set, receives the server's progress notifications for
	// the call (with mcpmux's token; the caller maps it back).
	Progress func(context.Context, *mcp.ProgressNotificationParams)
	// StreamClosed, if set, is called when a Streamable HTTP server closed
	// the call's response stream before answering and mcpmux reconnects to
	// resume it, with the retry delay the server asked for (see resume.go).
	// It returns whether the caller can no longer be reached for this call
	// (its own stream closed for good): the server's requests during the
	// rest of the call are then not its.
	StreamClosed func(retry time.Duration) (unreachable bool)
	// MCPTask, if set, is the client's params.task: the call is
	// task-augmented (MCP 2025-11-25), and the result is what the server
	// answers, a CreateTaskResult if it took the task (see mcptasks.go).
	MCPTask json.RawMessage
	// RunTask makes mcpmux run the tool as a task for a caller that called
	// it plainly (a tool whose execution.taskSupport is "required"): the
	// result is the task's.
	RunTask bool
	// TasksExtension: the caller declared the tasks extension of MCP
	// 2026-07-28, and takes a 2026 server's task handle as it is (see
	// tasks2026.go); else mcpmux finishes the task for it.
	TasksExtension bool
	// ExtensionTool: the tool is a 2026 server's that may answer with a
	// task of the extension, and MCPTask asks for it as a 2025 task
	// (tasks2026.go). Without it, MCPTask and RunTask on a 2026 connection
	// are 2025 tasks of a server that still speaks them.
	ExtensionTool bool
}

// hooks are what a request's caller wants to hear about while it runs.
type hooks struct {
	progress     func(context.Context, *mcp.ProgressNotificationParams)
	streamClosed func(retry time.Duration) (unreachable bool)
}

// CallTool calls a tool on the server and returns its result as the server
// sent it: a raw request (raw.go), whose result is neither decoded nor
// re-encoded on its way to the client. Errors are of the types in
// errors.go or the context's error; a tool's own failure is a result with
// isError. The arguments go as given: the aggregator, which checks a
// client's, makes absent or null ones {} (aggregator.callArguments).
func (s *Server) CallTool(ctx context.Context, p CallParams) (json.RawMessage, error) {
	return run(ctx, s, p.Request, hooks{p.Progress, p.StreamClosed}, func(ctx context.Context, c *conn, token string) (json.RawMessage, error) {
		params := *p.Params
		if p.Progress != nil {
			params.Meta = withProgressToken(params.Meta, token)
		}
		return c.tasks.callTool(ctx, &params, &p, token) // plain, task-augmented or run as a task
	})
}

// GetPrompt gets a prompt from the server.
func (s *Server) GetPrompt(ctx context.Context, r Request, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (*mcp.GetPromptResult, error) {
		if c.stateless() {
			// Raw, so that its _meta and input requests are the caller's.
			return decodeRaw[mcp.GetPromptResult](c.rawCall(ctx, "prompts/get", p))
		}
		return c.cs.GetPrompt(ctx, p)
	})
}

// ReadResource reads a resource from the server.
func (s *Server) ReadResource(ctx context.Context, r Request, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (*mcp.ReadResourceResult, error) {
		if c.stateless() {
			return decodeRaw[mcp.ReadResourceResult](c.rawCall(ctx, "resources/read", p))
		}
		return c.cs.ReadResource(ctx, p)
	})
}

// decodeRaw decodes the result of a raw request.
func decodeRaw[T any](raw json.RawMessage, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("reading the server's result: %w", err)
	}
	return v, nil
}

// Complete asks the server for completions, and returns its result as it
// sent it (a raw request, raw.go).
func (s *Server) Complete(ctx context.Context, r Request, p *mcp.CompleteParams) (json.RawMessage, error) {
	return run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (json.RawMessage, error) {
		return c.rawCall(ctx, "completion/complete", p)
	})
}

// Subscribe subscribes to updates of a resource, on the caller's
// connection (the shared one, or the caller's own).
func (s *Server) Subscribe(ctx context.Context, r Request, uri string) error {
	_, err := run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (struct{}, error) {
		return struct{}{}, c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	return err
}

// Unsubscribe ends a subscription made with Subscribe.
func (s *Server) Unsubscribe(ctx context.Context, r Request, uri string) error {
	_, err := run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (struct{}, error) {
		return struct{}{}, c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	return err
}

// run sends one request on a connection for r, registered as in flight so
// that what the server asks or says meanwhile reaches r.Caller.
//
// An HTTP server that answers "unknown session" has not run the request:
// it restarted and forgot us. Then the request is sent once more, on the
// new session, so that the client never sees that restart. So is a request
// whose POST never reached the server (its connection broke, as when the
// server restarts).
//
// Each of the two causes resends at most once, and they may come one after
// the other: a server that restarts breaks the POST in flight, and then
// refuses the request sent again on the old session as unknown.
func run[R any](ctx context.Context, s *Server, r Request, h hooks, send func(context.Context, *conn, string) (R, error)) (R, error) {
	var resentLost, resentUndelivered bool
	for {
		res, err := runOnce(ctx, s, r, h, send)
		switch {
		case errors.Is(err, errSessionLost) && !resentLost:
			resentLost = true
			s.log.Info("resending the request on a new session")
			tracing.Event(ctx, "mcpmux.resend", "reason", "session lost")
		case errors.Is(err, errNotDelivered) && !resentUndelivered:
			resentUndelivered = true
			s.log.Info("resending the request: it did not reach the server")
			tracing.Event(ctx, "mcpmux.resend", "reason", "not delivered")
		default:
			return res, err
		}
	}
}

func runOnce[R any](ctx context.Context, s *Server, r Request, h hooks, send func(context.Context, *conn, string) (R, error)) (R, error) {
	var zero R
	perClient := s.PerClient()
	if !perClient {
		free, err := s.limit.take(ctx)
		if err != nil {
			return zero, err
		}
		defer free()
	}
	c, err := s.acquire(ctx, r)
	if err != nil {
		return zero, err
	}
	defer c.release()
	if perClient && c.limit != nil {
		free, err := c.limit.take(ctx)
		if err != nil {
			return zero, err
		}
		defer free()
	}
	// Stop cancels the request with a *StoppedError as the cause when it
	// runs past the grace period; a resumed stream that stays silent, with
	// a *ResultLostError.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req := &inflight{caller: r.Caller, progress: h.progress, cancel: cancel}
	if s.cfg.IsRemote() {
		var closed func(time.Duration)
		if h.streamClosed != nil {
			closed = func(retry time.Duration) {
				if h.streamClosed(retry) {
					c.detach(req)
				}
			}
		}
		var w *streamWatch
		cctx, w = watchCall(cctx, s.cfg.Name, s.bounds.resumeTimeout(), closed, cancel)
		defer w.finish()
	}
	cctx = withRequest(cctx, &r)
	token := newProgressToken()
	defer c.begin(token, req)()
	res, err := send(cctx, c, token)
	if err != nil {
		return zero, s.callError(ctx, cctx, c, err)
	}
	c.gate.wait(ctx)
	c.lists.wait(ctx)
	return res, nil
}

// withProgressToken returns a copy of m with our progress token.
func withProgressToken(m mcp.Meta, token string) mcp.Meta {
	out := make(mcp.Meta, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out["progressToken"] = token
	return out
}

// callError classifies a failed call; cctx is the request's own context,
// below the caller's ctx.
func (s *Server) callError(ctx, cctx context.Context, c *conn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var stopped *StoppedError
	if errors.As(context.Cause(cctx), &stopped) {
		return stopped
	}
	if lost := lostCause(cctx); lost != nil {
		return lost
	}
	var unresponsive *UnresponsiveError
	if errors.As(context.Cause(cctx), &unresponsive) {
		return &LostError{Server: s.cfg.Name, Err: unresponsive}
	}
	if nl := asNeedsLogin(err); nl != nil {
		s.loginLost(c, nl)
		return &UnavailableError{Server: s.cfg.Name, Err: nl}
	}
	var refresh *oauth.RefreshError
	if errors.As(err, &refresh) {
		return &UnavailableError{Server: s.cfg.Name, Err: refresh}
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The HTTP server forgot our session (it restarted): reconnect. No
		// new call may take this connection meanwhile. (Checked before
		// JSON-RPC errors: writing a request the server refuses so wraps
		// the transport's own "rejected" error too.)
		s.log.Warn("server lost our session; reconnecting")
		c.stopTaking()
		go c.close()
		return &LostError{Server: s.cfg.Name, Err: errSessionLost}
	}
	var notSent *notSentError
	if errors.As(err, &notSent) && s.cfg.IsRemote() && !isClosed(c) {
		// The POST failed before the server had it (the transport wraps
		// that in its own JSON-RPC "rejected" error, which is not the
		// server's answer): nothing ran, so it may be sent again.
		return &LostError{Server: s.cfg.Name, Err: errNotDelivered}
	}
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return tooLarge // the connection goes on
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		if perr := eraError(s.cfg.Name, rpcErr.Code, rpcErr.Message, rpcErr.Data); perr != nil {
			if rpcErr.Code == codeUnsupportedProtocol {
				// The server changed its protocol under us: a new
				// connection negotiates again.
				s.log.Warn("server no longer speaks the protocol of its connection; reconnecting", "protocol", c.era)
				c.stopTaking()
				go c.close()
			}
			return perr
		}
		return &RPCError{Server: s.cfg.Name, Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	if connGone(err) || isClosed(c) {
		// The connection is gone: later calls must wait for the next one
		// rather than find this one before the supervisor notices.
		c.stopTaking()
		return &LostError{Server: s.cfg.Name, Err: c.lostReason(err)}
	}
	if w := watchOf(cctx); w != nil {
		if lost := w.failure(); lost != nil {
			return lost
		}
	}
	return &LostError{Server: s.cfg.Name, Err: err}
}

// errSessionLost is the cause of a call refused by an HTTP server that no
// longer knows the session: the server did not run it.
var errSessionLost = errors.New("the server restarted and lost the session")

// errNotDelivered is the cause of a request whose HTTP POST failed before
// it reached the server.
var errNotDelivered = errors.New("the request did not reach the server: its connection broke")

// connGone reports whether err says the connection itself broke: the
// child's pipes closed (a write to a dead child fails with EPIPE) or the
// session ended.
func connGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, mcp.ErrConnectionClosed)
}

func isClosed(c *conn) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// acquire returns a connection for a call, registered as in flight.
func (s *Server) acquire(ctx context.Context, r Request) (*conn, error) {
	if s.PerClient() {
		return s.clients.acquire(ctx, r.Client, r.RunID, r.Features, r.Caller)
	}
	var patience <-chan time.Time // started at the first wait for a restart
	for {
		s.mu.Lock()
		if c := s.cur; c != nil && c.acquire() {
			s.mu.Unlock()
			return c, nil
		}
		state, lastErr, changed := s.state, s.lastErr, s.changed
		s.mu.Unlock()
		switch state {
		case StateFailed, StateNeedsLogin:
			return nil, &UnavailableError{Server: s.cfg.Name, Err: lastErr}
		case StateStopped:
			return nil, &UnavailableError{Server: s.cfg.Name, Err: ErrStopped}
		}
		// Starting, restarting, or up on a connection that is going away:
		// wait for the outcome; for a restart, only briefly.
		if patience == nil && state != StateStarting {
			t := time.NewTimer(s.opts.Timing.restartWait())
			defer t.Stop()
			patience = t.C
		}
		select {
		case <-changed:
		case <-patience:
			why := "it is restarting"
			if lastErr != nil {
				why = fmt.Sprintf("it is restarting after: %v;", lastErr)
			}
			return nil, &UnavailableError{Server: s.cfg.Name, Err: fmt.Errorf("%s it was not back within %v", why, s.opts.Timing.restartWait())}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
