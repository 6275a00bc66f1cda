package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/upstream"
)

// failure is one way an upstream call can fail. Each has the outcome label
// metrics count it under and the text the client reads, so the two cannot
// disagree.
type failure struct {
	outcome string
	// text explains the failure for an agent: what happened, and what to
	// do. It gets the tool, the server, the timeout and the error, as
	// %[1]s, %[2]s, %[3]v and %[4]v.
	text string
}

var (
	failTimeout = failure{metrics.OutcomeTimeout,
		"Tool '%[1]s' on server '%[2]s' timed out after %[3]v. The call was cancelled; the server stays available. Try again with a smaller request, or use another tool."}
	failTimeoutOpening = failure{metrics.OutcomeTimeout,
		"Tool '%[1]s' on server '%[2]s' timed out after %[3]v: %[4]v. Try again later, or use another tool."}
	failCancelled = failure{metrics.OutcomeCancelled,
		"Tool '%[1]s' on server '%[2]s' was cancelled by the client."}
	failStopped = failure{metrics.OutcomeStopped,
		"Tool '%[1]s' on server '%[2]s' was stopped before it answered: %[4]v. It may or may not have taken effect."}
	failAtLimit = failure{metrics.OutcomeAtLimit,
		"Tool '%[1]s' on server '%[2]s' was not called: %[4]v, each client session having its own, and this client has none yet. Try again when another client has finished, or use another tool."}
	failUnavailable = failure{metrics.OutcomeUnavailable,
		"Tool '%[1]s' on server '%[2]s' could not be called: the server is not running (%[4]v). mcpmux restarts it automatically; try again shortly, or use another tool."}
	failNeedsLogin = failure{metrics.OutcomeUnavailable,
		"Tool '%[1]s' on server '%[2]s' could not be called: the server %[4]v, where mcpmux runs, then try again. Until then the server's tools fail; the other servers are not affected."}
	failLost = failure{metrics.OutcomeLost,
		"Tool '%[1]s' on server '%[2]s' failed: the server stopped answering during the call: %[4]v. mcpmux is restarting it; the call may or may not have taken effect, so check before repeating it."}
	failResultLost = failure{metrics.OutcomeLost,
		"Tool '%[1]s' on server '%[2]s' failed: the server closed the call's response stream before answering, and %[4]v. The server stays available; the call may or may not have taken effect, so check before repeating it."}
	failTooLarge = failure{metrics.OutcomeFailed,
		"Tool '%[1]s' on server '%[2]s' failed: %[4]v. The server stays available; ask for less (a smaller page or range, a filter), or use another tool."}
	failRejected = failure{metrics.OutcomeRejected,
		"Tool '%[1]s' on server '%[2]s' was rejected by the server: %[4]v. Check the tool name and that the arguments match the tool's input schema."}
	failOther = failure{metrics.OutcomeFailed,
		"Tool '%[1]s' on server '%[2]s' failed: %[4]v."}
)

// classify tells what kind of failure err is, for a call whose context is
// ctx (the client's) and cctx (with the call's timeout), and the part of
// err the failure's text quotes.
func classify(ctx, cctx context.Context, err error) (failure, any) {
	var (
		unavailable *upstream.UnavailableError
		lost        *upstream.LostError
		rpc         *upstream.RPCError
		stopped     *upstream.StoppedError
		atLimit     *upstream.LimitError
		resultLost  *upstream.ResultLostError
		needsLogin  *upstream.NeedsLoginError
		dialEnded   *upstream.DialEndedError
		tooLarge    *upstream.TooLargeError
	)
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil && errors.As(err, &dialEnded):
		return failTimeoutOpening, dialEnded
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return failTimeout, err
	case ctx.Err() != nil:
		return failCancelled, err
	case errors.As(err, &stopped):
		return failStopped, stopped
	case errors.As(err, &atLimit):
		return failAtLimit, fmt.Sprintf("the server is at its limit of %d client connections (max_clients)", atLimit.Max)
	case errors.As(err, &needsLogin):
		return failNeedsLogin, needsLogin
	case errors.As(err, &unavailable):
		return failUnavailable, unavailable.Err
	case errors.As(err, &lost):
		return failLost, lost.Err
	case errors.As(err, &resultLost):
		return failResultLost, resultLost.Reason
	case errors.As(err, &tooLarge):
		return failTooLarge, tooLarge
	case errors.As(err, &rpc):
		return failRejected, fmt.Sprintf("%s (JSON-RPC error %d)", rpc.Message, rpc.Code)
	}
	return failOther, err
}

// passedOn returns the JSON-RPC error a client gets as it is, in place of
// an isError result, for a call that failed with err: a server's error
// whose code is one of MCP's, in the range JSON-RPC leaves to the
// implementation (-32000 to -32099: -32042 URL elicitation required, with
// the URLs in its data; -32002 resource not found; -32021 missing client
// capability), which means something to a client that a result would
// hide. It keeps its code and data; mask hides the config's secrets in
// its message and data, as in every answer. JSON-RPC's own codes (the
// request was wrong) and any other code a server makes up are answered
// as an isError result that says what happened: failure is data. Nil for
// those and for any other failure.
func passedOn(err error, mask func(string) string) *jsonrpc.Error {
	var rpc *upstream.RPCError
	if !errors.As(err, &rpc) || rpc.Code > -32000 || rpc.Code < -32099 {
		return nil
	}
	data := rpc.Data
	if len(data) > 0 {
		data = json.RawMessage(mask(string(data)))
		if !json.Valid(data) {
			data = nil // masking broke it: better no data than a secret
		}
	}
	return &jsonrpc.Error{Code: rpc.Code, Message: mask(rpc.Message), Data: data}
}

// timeout is the limit the call ran into, for a timeout; zero otherwise.
func (f failure) timeout(limit time.Duration) time.Duration {
	if f.outcome != metrics.OutcomeTimeout {
		return 0
	}
	return limit
}

// result is the isError result the client reads for the failure.
func (f failure) result(e *Entry, timeout time.Duration, detail any) *mcp.CallToolResult {
	return toolError(f.text, e.Tool, e.Server, timeout, detail)
}
