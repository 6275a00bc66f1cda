package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/upstream"
)

// Each failure of an upstream call has one classification: the text the
// client reads and the outcome metrics count it under come from it.
func TestClassifyFailures(t *testing.T) {
	live := context.Background()
	timedOut, cancel := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel()
	gone, cancelClient := context.WithCancel(live)
	cancelClient()
	e := &Entry{Name: "s__t", Server: "s", Tool: "t"}
	for _, c := range []struct {
		ctx, cctx context.Context
		err       error
		outcome   string
		text      string
	}{
		{live, timedOut, context.DeadlineExceeded, metrics.OutcomeTimeout, "Tool 't' on server 's' timed out after 1m0s."},
		{live, timedOut, &upstream.UnavailableError{Server: "s", Err: &upstream.DialEndedError{Cause: context.DeadlineExceeded}}, metrics.OutcomeTimeout,
			"Tool 't' on server 's' timed out after 1m0s: the server had not answered initialize for this client's connection; the call was not sent."},
		{gone, gone, context.Canceled, metrics.OutcomeCancelled, "Tool 't' on server 's' was cancelled by the client."},
		{live, live, &upstream.StoppedError{Server: "s", Reason: upstream.ErrShuttingDown, Grace: 2 * time.Second}, metrics.OutcomeStopped,
			"Tool 't' on server 's' was stopped before it answered: mcpmux is shutting down, and the call to server \"s\" did not finish within the grace period of 2s."},
		{live, live, &upstream.LimitError{Server: "s", Max: 3}, metrics.OutcomeAtLimit, "the server is at its limit of 3 client connections (max_clients)"},
		{live, live, &upstream.UnavailableError{Server: "s", Err: errors.New("exit status 1")}, metrics.OutcomeUnavailable, "the server is not running (exit status 1)"},
		{live, live, &upstream.LostError{Server: "s", Err: errors.New("EOF")}, metrics.OutcomeLost, "stopped answering during the call: EOF."},
		{live, live, &upstream.ResultLostError{Server: "s", Reason: "it lost the answer"}, metrics.OutcomeLost, "closed the call's response stream before answering, and it lost the answer."},
		{live, live, fmt.Errorf("calling: %w", &upstream.RPCError{Server: "s", Code: -32602, Message: "bad params"}), metrics.OutcomeRejected, "rejected by the server: bad params (JSON-RPC error -32602)."},
		{live, live, &upstream.TooLargeError{Server: "s", Limit: 1 << 20}, metrics.OutcomeFailed, "failed: the server's answer exceeds max_result_bytes = 1MiB, so mcpmux stopped reading it. The server stays available"},
		{live, live, errors.New("boom"), metrics.OutcomeFailed, "Tool 't' on server 's' failed: boom."},
	} {
		f, detail := classify(c.ctx, c.cctx, c.err)
		res := f.result(e, time.Minute, detail)
		if f.outcome != c.outcome || !res.IsError || !strings.Contains(text(res), c.text) || strings.Contains(text(res), "%!") {
			t.Errorf("%v: outcome %q, text %q\nwant outcome %q, text containing %q", c.err, f.outcome, text(res), c.outcome, c.text)
		}
	}
}

// TestPassedOn: a server's JSON-RPC error with a code that means something
// to clients reaches them as it is (data too); JSON-RPC's own codes and
// other failures become isError results.
func TestPassedOn(t *testing.T) {
	data := json.RawMessage(`{"elicitations":[{"mode":"url","url":"https://example.com"}]}`)
	for _, tc := range []struct {
		err  error
		want int64 // 0: not passed on
	}{
		{fmt.Errorf("calling: %w", &upstream.RPCError{Server: "s", Code: -32042, Message: "open this", Data: data}), -32042},
		{&upstream.RPCError{Server: "s", Code: -32002, Message: "resource not found"}, -32002},
		{&upstream.RPCError{Server: "s", Code: 42, Message: "the server's own"}, 0},
		{&upstream.RPCError{Server: "s", Code: 0, Message: "upstream refused"}, 0},
		{&upstream.RPCError{Server: "s", Code: -32000, Message: "server error"}, -32000},
		{&upstream.RPCError{Server: "s", Code: -32602, Message: "bad params"}, 0},
		{&upstream.RPCError{Server: "s", Code: -32603, Message: "internal"}, 0},
		{&upstream.LostError{Server: "s", Err: errors.New("gone")}, 0},
	} {
		got := passedOn(tc.err, func(s string) string { return s })
		switch {
		case tc.want == 0 && got != nil:
			t.Errorf("%v: passed on as %v, want an isError result", tc.err, got)
		case tc.want != 0 && (got == nil || got.Code != tc.want):
			t.Errorf("%v: passed on as %v, want code %d", tc.err, got, tc.want)
		case tc.want == -32042 && string(got.Data) != string(data):
			t.Errorf("-32042 passed on with data %s, want %s", got.Data, data)
		}
	}
}
