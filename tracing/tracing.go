// Package tracing follows each client request through mcpmux to the tool
// servers as OpenTelemetry spans, exported over OTLP (HTTP or gRPC).
//
// It is off unless configured, and free when off: the front middleware
// finds no provider and calls the next handler; every other helper first
// asks whether the context's span records, and returns at once when it
// does not (no allocation on the call path; see BenchmarkCallTracingOff).
//
// Spans started in the pipeline take their tracer from their parent span's
// provider, so a hot reload that replaces the provider leaves the requests
// in flight on the one they started with; the old provider is shut down,
// flushing their spans, once the last of them ends (Switch).
package tracing

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of mcpmux's spans.
const scope = "github.com/mcpmux/mcpmux"

// propagator carries the W3C trace context and baggage, in _meta (MCP
// 2026-07-28 names the keys traceparent, tracestate and baggage) and in
// HTTP headers.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Provider is one configured exporter and sampler.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	what   string // the exporter, for the log

	inflight sync.WaitGroup // requests whose root span this provider started
}

// newProvider wraps tp.
func newProvider(tp *sdktrace.TracerProvider, what string) *Provider {
	return &Provider{tp: tp, tracer: tp.Tracer(scope), what: what}
}

// String says where the spans go.
func (p *Provider) String() string { return p.what }

// Shutdown flushes the provider's spans and stops its exporter.
func (p *Provider) Shutdown(ctx context.Context) error { return p.tp.Shutdown(ctx) }

// Switch holds the current provider; nil means tracing is off. Its zero
// value is off.
type Switch struct {
	cur atomic.Pointer[Provider]
}

// Load returns the current provider, nil when tracing is off.
func (s *Switch) Load() *Provider {
	if s == nil {
		return nil
	}
	return s.cur.Load()
}

// Swap makes p (nil: off) current. The provider it replaces is shut down
// in the background once the requests that started spans on it have
// ended, so that none of their spans is lost; done, if not nil, is called
// with the result of that shutdown.
func (s *Switch) Swap(p *Provider, done func(*Provider, error)) {
	old := s.cur.Swap(p)
	if old == nil || old == p {
		return
	}
	go func() {
		old.inflight.Wait()
		err := old.Shutdown(context.Background())
		if done != nil {
			done(old, err)
		}
	}()
}

// Close turns tracing off and flushes the spans of the provider it held,
// waiting for the requests in flight on it until ctx ends.
func (s *Switch) Close(ctx context.Context) error {
	old := s.cur.Swap(nil)
	if old == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { old.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return old.Shutdown(ctx)
}

// Request is the root span of one client request; its zero value (tracing
// off) does nothing.
type Request struct {
	span trace.Span
	p    *Provider
}

// StartRequest starts the server span of a client request named name
// (method and target), continuing the trace of the client's _meta or,
// failing that, of its HTTP headers. With tracing off it returns ctx and
// a zero Request.
func (s *Switch) StartRequest(ctx context.Context, name string, meta map[string]any, header map[string][]string) (context.Context, Request) {
	p := s.Load()
	if p == nil {
		return ctx, Request{}
	}
	if hasTraceContext(meta) {
		ctx = propagator.Extract(ctx, MetaCarrier(meta))
	} else if header != nil {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(header))
	}
	p.inflight.Add(1)
	ctx, span := p.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	return ctx, Request{span: span, p: p}
}

// Set sets a string attribute on r's span.
func (r Request) Set(key, value string) {
	if r.span != nil && value != "" {
		r.span.SetAttributes(attribute.String(key, value))
	}
}

// End ends the request's span; errMsg, if not empty, marks it failed with
// errType as its error.type.
func (r Request) End(errType, errMsg string) {
	if r.span == nil {
		return
	}
	if errMsg != "" {
		r.span.SetAttributes(attribute.String("error.type", errType))
		r.span.SetStatus(codes.Error, errMsg)
	}
	r.span.End()
	r.p.inflight.Done()
}

// Span is a span of the pipeline; its zero value does nothing.
type Span struct{ span trace.Span }

// Start starts a child of ctx's span, of the kind given; nothing (ctx and a
// zero Span) when ctx's span does not record.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, span := parent.TracerProvider().Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind))
	return ctx, Span{span: span}
}

// StartClient starts the span of a request mcpmux sends a server, named
// after the MCP method and its target (a tool's or prompt's name; may be
// empty).
func StartClient(ctx context.Context, method, target, server string) (context.Context, Span) {
	if !Recording(ctx) {
		return ctx, Span{}
	}
	name := method
	if target != "" {
		name += " " + target
	}
	ctx, s := Start(ctx, name, trace.SpanKindClient)
	s.span.SetAttributes(attribute.String("mcp.method.name", method), attribute.String("mcpmux.server", server))
	if method == "tools/call" {
		s.span.SetAttributes(attribute.String("gen_ai.tool.name", target), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	return ctx, s
}

// StartInternal starts a span of mcpmux's own work: a rule step, the wait
// for a call slot, a replay.
func StartInternal(ctx context.Context, name string) (context.Context, Span) {
	return Start(ctx, name, trace.SpanKindInternal)
}

// FromContext returns ctx's span, to annotate later without its context;
// a zero Span when it does not record.
func FromContext(ctx context.Context) Span {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return Span{}
	}
	return Span{span: span}
}

// Recording reports whether ctx's span records: the guard for work done
// only to describe a span.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Set sets a string attribute on ctx's span, if it records.
func Set(ctx context.Context, key, value string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() && value != "" {
		span.SetAttributes(attribute.String(key, value))
	}
}

// Event adds an event with one string attribute to ctx's span, if it
// records.
func Event(ctx context.Context, name, key, value string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(attribute.String(key, value)))
	}
}

// On reports whether s records.
func (s Span) On() bool { return s.span != nil }

// Set sets a string attribute on s.
func (s Span) Set(key, value string) {
	if s.span != nil && value != "" {
		s.span.SetAttributes(attribute.String(key, value))
	}
}

// Event adds an event with one string attribute to s.
func (s Span) Event(name, key, value string) {
	if s.span != nil {
		s.span.AddEvent(name, trace.WithAttributes(attribute.String(key, value)))
	}
}

// Fail marks s failed: errType is its error.type (mcpmux's failure class,
// or tool_error for a tool's isError result), msg the status description.
func (s Span) Fail(errType, msg string) {
	if s.span != nil {
		s.span.SetAttributes(attribute.String("error.type", errType))
		s.span.SetStatus(codes.Error, Truncate(msg))
	}
}

// End ends s; errMsg, if not empty, marks it failed with errType as its
// error.type.
func (s Span) End(errType, errMsg string) {
	if s.span == nil {
		return
	}
	if errMsg != "" {
		s.span.SetAttributes(attribute.String("error.type", errType))
		s.span.SetStatus(codes.Error, errMsg)
	}
	s.span.End()
}

// Inject returns meta with ctx's trace context in it (traceparent,
// tracestate, baggage), for a downstream request: a copy when it adds
// anything, meta itself when ctx's span does not record. Keys the client
// sent under those names are replaced: the server's parent is mcpmux's
// span, which is the client's span's child.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !Recording(ctx) {
		return meta
	}
	out := make(map[string]any, len(meta)+3)
	for k, v := range meta {
		out[k] = v
	}
	for _, k := range propagator.Fields() {
		delete(out, k)
	}
	propagator.Inject(ctx, MetaCarrier(out))
	return out
}

// hasTraceContext reports whether meta carries a W3C traceparent.
func hasTraceContext(meta map[string]any) bool {
	_, ok := meta["traceparent"].(string)
	return ok
}

// MetaCarrier reads and writes trace context in a request's _meta.
type MetaCarrier map[string]any

// Get returns the string under key, "" if none.
func (m MetaCarrier) Get(key string) string {
	v, _ := m[key].(string)
	return v
}

// Set sets key.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the keys (the propagators ask only for their own).
func (m MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Truncate bounds a status message taken from a tool's text.
func Truncate(s string) string {
	const max = 200
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
