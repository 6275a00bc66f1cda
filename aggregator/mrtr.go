package aggregator

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/replica"
)

// Multi round-trip requests (MRTR) towards clients of the sessionless
// protocol. A server of 2025-11-25 asks its client in the middle of a call
// (elicitation/create, sampling/createMessage, roots/list); a client of
// 2026-07-28 can only be asked in a result: an InputRequiredResult, which
// it answers by calling again with inputResponses and the requestState.
// So mcpmux runs such a client's call detached from its request, and when
// the server asks, parks the running call under a state it mints and
// answers the request with the question; the retry that brings the answer
// resumes the parked call, and gets its result (or the next question). A
// call whose client does not come back within inputWait is given up: the
// server's question gets an error that says so (and any it asks after).
//
// The state is the parked call's id and its replica, signed (HMAC-SHA256)
// with the key of package replica, of this process or shared by the
// replicas: a client cannot forge or alter one to reach another's call;
// a retry that reaches another replica is forwarded to this one
// (replicas.go). A 2026-07-28 server's own input_required result is the downstream
// side's (package upstream); it reaches this client as any result does.

// defaultInputWait bounds how long a parked call waits for its client's
// retry.
const defaultInputWait = 5 * time.Minute

// maxParked bounds the calls parked at once; past it a call that would
// park is refused its question (the server gets an error).
const maxParked = 10000

// parkedCalls runs the calls of sessionless clients that their servers
// may ask for input (call), and keeps those waiting for their clients'
// answers.
type parkedCalls struct {
	replicas *replica.Set  // signs states, naming this replica (replicas.go)
	wait     time.Duration // see defaultInputWait
	// callClient gives a call that names no client one of its own for its
	// whole run, and releases it (Aggregator.callClient, clientkey.go).
	callClient func(ctx context.Context, id string) (_ context.Context, release func())

	mu    sync.Mutex
	calls map[string]*parkedCall
}

func newParkedCalls(replicas *replica.Set, callClient func(context.Context, string) (context.Context, func())) *parkedCalls {
	return &parkedCalls{replicas: replicas, callClient: callClient, wait: defaultInputWait, calls: map[string]*parkedCall{}}
}

// A parkedCall is one client call running detached from its requests.
type parkedCall struct {
	id     string
	tool   string             // what it asks for (mrtrRetry.what): a retry must ask for the same
	events chan parkedEvent   // from the running call: a question or its end
	cancel context.CancelFunc // ends the running call
	done   chan struct{}      // closed when nothing waits for events any more
	once   sync.Once          // closes done

	mu      sync.Mutex
	next    int                               // numbers the questions
	pending map[string]chan mcp.InputResponse // questions asked, by key
	timer   *time.Timer                       // runs while parked
	ended   error                             // why it was given up

	// What the call's server sends its client during the call (progress,
	// log messages) goes on the stream of the request that waits on the
	// call: the first, then each retry. The first request's stream ends
	// with the question it is answered; what comes while the call is
	// parked is held for the retry (see notify).
	wmu    sync.Mutex
	waiter *parkWaiter           // nil while parked
	held   []func(w *parkWaiter) // sent to the next waiter
}

// A parkWaiter is a request waiting on a parked call: its context (which
// routes a notification to its response stream, and carries its log
// level), its session and its progress token (nil: it asked for none).
type parkWaiter struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
}

// maxHeld bounds the notifications held for a parked call's retry; past
// it the oldest are dropped (progress is cumulative: the last one says
// as much).
const maxHeld = 100

// attach makes req the request that waits on pc, sends it what was held
// for it, and returns the function that ends its wait.
func (pc *parkedCall) attach(ctx context.Context, req mcp.Request) (detach func()) {
	w := &parkWaiter{ctx: ctx}
	if req != nil {
		w.ss, _ = req.GetSession().(*mcp.ServerSession)
		if p, ok := req.GetParams().(mcp.RequestParams); ok && p != nil {
			w.token = p.GetProgressToken()
		}
	}
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	pc.waiter = w
	if w.ss != nil {
		held := pc.held
		pc.held = nil
		for _, f := range held {
			f(w)
		}
	}
	return func() {
		pc.wmu.Lock()
		if pc.waiter == w {
			pc.waiter = nil
		}
		pc.wmu.Unlock()
	}
}

// notify sends the client of pc a notification of its server's, on the
// stream of the request that waits on the call, or holds it for the next
// request while the call is parked. Sent in order: the answer a call's
// server gives after a notification reaches the waiting request after it.
func (pc *parkedCall) notify(f func(w *parkWaiter)) {
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	if w := pc.waiter; w != nil && w.ctx.Err() == nil && w.ss != nil {
		f(w)
		return
	}
	if len(pc.held) >= maxHeld {
		pc.held = pc.held[1:]
	}
	pc.held = append(pc.held, f)
}

// A parkedEvent is what a running call tells the request waiting on it.
type parkedEvent struct {
	key    string     // a question, under this key ("" for the end)
	method string     // its method
	params any        // its params
	result mcp.Result // or the call's result
	err    error      // or its error
}

type parkedKey struct{}

// parkedFrom returns the parked call a request's context runs, if any.
func parkedFrom(ctx context.Context) *parkedCall {
	pc, _ := ctx.Value(parkedKey{}).(*parkedCall)
	return pc
}

// mrtrRetry is what a request that may be parked says of itself: what it
// asks for (its method and the tool, prompt or resource it names), and
// on a retry, its answers and the state it was given.
type mrtrRetry struct {
	what      string
	responses mcp.InputResponseMap
	state     string
}

// call runs a sessionless client's tools/call, prompts/get or
// resources/read: a first request starts the call detached and waits for
// its first event; a retry (with requestState) hands its answers to the
// parked call and waits for the next.
func (pk *parkedCalls) call(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request, r mrtrRetry) (mcp.Result, error) {
	if r.responses != nil && r.state == "" {
		// mcpmux gives every question with a state (the questions of a
		// 2026-07-28 server's own included, whose state it wraps): these
		// answers answer nothing.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses without requestState: mcpmux sends every inputRequest with a requestState, which the retry must carry"}
	}
	if state := r.state; state != "" {
		id, err := pk.verify(state)
		if err != nil {
			return nil, err
		}
		pk.mu.Lock()
		pc, wait := pk.calls[id], pk.wait
		pk.mu.Unlock()
		if pc == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState names no call waiting for input: it has ended, was given up after waiting for input (mcpmux waits " + wait.String() + "), or ran on another mcpmux; call the tool again without it"}
		}
		if r.what != pc.tool {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState belongs to a request of %q, not %q", pc.tool, r.what)}
		}
		if err := pc.answer(r.responses); err != nil {
			return nil, err
		}
		// Running again: a second retry with this state finds nothing.
		pk.forget(pc)
		return pk.await(ctx, pc, req)
	}
	id := rand.Text()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pc := &parkedCall{id: id, tool: r.what, events: make(chan parkedEvent), cancel: cancel, done: make(chan struct{}), pending: map[string]chan mcp.InputResponse{}}
	runCtx = context.WithValue(runCtx, parkedKey{}, pc)
	runCtx, release := pk.callClient(runCtx, id)
	go func() {
		res, err := next(runCtx, method, req)
		defer cancel()
		defer release()
		select {
		case pc.events <- parkedEvent{result: res, err: err}:
		case <-pc.done: // given up: nobody is left to tell
		}
	}()
	return pk.await(ctx, pc, req)
}

// await waits for pc's next event: its result, which is the request's;
// or a question, which parks it and is answered as an
// InputRequiredResult. A request that ends meanwhile ends the call. What
// the call's server sends meanwhile goes to req's stream (notify).
func (pk *parkedCalls) await(ctx context.Context, pc *parkedCall, req mcp.Request) (mcp.Result, error) {
	defer pc.attach(ctx, req)()
	select {
	case ev := <-pc.events:
		if ev.key == "" {
			pk.forget(pc)
			pc.cancel()
			return ev.result, ev.err
		}
		if !pk.park(pc) {
			pc.giveUp(fmt.Errorf("mcpmux already has %d calls waiting for their clients' input", maxParked))
			pc.cancel()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpmux already has %d calls waiting for input; try again later", maxParked)}
		}
		ir, err := json.Marshal(map[string]any{"method": ev.method, "params": ev.params})
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(map[string]any{
			"resultType":    "input_required",
			"inputRequests": map[string]json.RawMessage{ev.key: ir},
			"requestState":  pk.replicas.Sign(pc.id),
		})
		if err != nil {
			return nil, err
		}
		return &rawResult{raw: raw}, nil
	case <-ctx.Done():
		pk.forget(pc)
		pc.giveUp(fmt.Errorf("the client's request ended: %w", context.Cause(ctx)))
		pc.cancel()
		return nil, ctx.Err()
	}
}

// park registers pc as waiting for its client, for at most the bound.
func (pk *parkedCalls) park(pc *parkedCall) bool {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if _, ok := pk.calls[pc.id]; !ok && len(pk.calls) >= maxParked {
		return false
	}
	pk.calls[pc.id] = pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.timer != nil {
		pc.timer.Stop()
	}
	wait := pk.wait
	pc.timer = time.AfterFunc(wait, func() {
		pk.forget(pc)
		pc.giveUp(fmt.Errorf("the client did not answer within %s (a 2026-07-28 client answers by calling again with the requestState mcpmux gave it)", wait))
	})
	return true
}

// forget drops pc from the parked calls.
func (pk *parkedCalls) forget(pc *parkedCall) {
	pk.mu.Lock()
	delete(pk.calls, pc.id)
	pk.mu.Unlock()
	pc.mu.Lock()
	if pc.timer != nil {
		pc.timer.Stop()
	}
	pc.mu.Unlock()
}

// giveUp fails every question of pc, now and to come, with err: its
// server learns why, and may end the call as it sees fit (its result
// reaches nobody; the call's timeout still applies).
func (pc *parkedCall) giveUp(err error) {
	pc.mu.Lock()
	pc.ended = err
	pending := pc.pending
	pc.pending = map[string]chan mcp.InputResponse{}
	pc.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	pc.once.Do(func() { close(pc.done) })
}

func (pc *parkedCall) endedErr() error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.ended
}

// setWait sets how long a parked call waits for its client.
func (pk *parkedCalls) setWait(d time.Duration) {
	pk.mu.Lock()
	pk.wait = d
	pk.mu.Unlock()
}

// answer hands a retry's inputResponses to the questions waiting for them;
// a retry that answers none of them is an error.
func (pc *parkedCall) answer(responses mcp.InputResponseMap) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	n := 0
	for key, ch := range pc.pending {
		if r, ok := responses[key]; ok && r != nil {
			ch <- r
			delete(pc.pending, key)
			n++
		}
	}
	if n == 0 {
		// Still parked: the client may yet answer within the bound.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses answer none of the inputRequests of this requestState"}
	}
	return nil
}

// ask puts a server's question to the client of the parked call, and
// waits for the answer that a retry brings.
func (pc *parkedCall) ask(ctx context.Context, method string, params any) (mcp.InputResponse, error) {
	pc.mu.Lock()
	if pc.ended != nil {
		pc.mu.Unlock()
		return nil, pc.ended
	}
	pc.next++
	key := fmt.Sprintf("mcpmux-%d", pc.next)
	ch := make(chan mcp.InputResponse, 1)
	pc.pending[key] = ch
	pc.mu.Unlock()
	ev := parkedEvent{key: key, method: method, params: params}
	select {
	case pc.events <- ev:
	case <-pc.done:
		return nil, pc.endedErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, pc.endedErr()
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// askFor puts a question to the client of a parked call and decodes the
// answer as R.
func askFor[R any](ctx context.Context, pc *parkedCall, method string, params any) (*R, error) {
	r, err := pc.ask(ctx, method, params)
	if err != nil {
		return nil, err
	}
	if res, ok := any(r).(*R); ok {
		return res, nil
	}
	// Answered with another kind of result (an elicitation's answer to a
	// sampling request): re-decoded, it fails or fits.
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	out := new(R)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("the client's answer to %s: %w", method, err)
	}
	return out, nil
}
