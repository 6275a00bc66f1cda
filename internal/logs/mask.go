package logs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MaskText replaces a secret wherever it appears.
const MaskText = "****"

// MinSecretLen is the shortest value masked: shorter ones would mask
// ordinary words and numbers all over the logs.
const MinSecretLen = 4

// Masker replaces known secret values in text. It only learns secrets,
// never forgets them: a child started from an older config may still print
// an older key. The zero value masks nothing; a nil *Masker is valid too.
type Masker struct {
	mu      sync.Mutex
	secrets map[string]bool
	r       atomic.Pointer[strings.Replacer]
	gen     atomic.Uint64 // counts changes of r
}

func (m *Masker) generation() uint64 {
	if m == nil {
		return 0
	}
	return m.gen.Load()
}

// Add makes the masker hide each of values that has at least MinSecretLen
// bytes.
func (m *Masker) Add(values ...string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < MinSecretLen || m.secrets[v] {
			continue
		}
		if m.secrets == nil {
			m.secrets = map[string]bool{}
		}
		m.secrets[v] = true
		// Also as it appears inside a JSON string (a /healthz body, a
		// child's JSON log line).
		if b, err := json.Marshal(v); err == nil && string(b[1:len(b)-1]) != v {
			m.secrets[string(b[1:len(b)-1])] = true
		}
		changed = true
	}
	if !changed {
		return
	}
	// Longest first, so that a secret containing another is hidden whole
	// (a Replacer tries its pairs in order at each position).
	all := make([]string, 0, len(m.secrets))
	for s := range m.secrets {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, MaskText)
	}
	m.r.Store(strings.NewReplacer(pairs...))
	m.gen.Add(1)
}

// Mask returns s with every known secret replaced by MaskText.
func (m *Masker) Mask(s string) string {
	if m == nil {
		return s
	}
	if r := m.r.Load(); r != nil {
		return r.Replace(s)
	}
	return s
}

// Masked returns log with every record's message and attributes masked by
// m, including attributes given earlier with With: they are masked again
// whenever m learns a secret. Attributes that are not strings (errors,
// Stringers, structs) are masked as their text when it holds a secret.
func Masked(log *slog.Logger, m *Masker) *slog.Logger {
	return slog.New(&maskHandler{base: log.Handler(), m: m})
}

// maskHandler applies With and WithGroup to base itself, so that it can
// redo them, masked anew, when the masker learns a secret.
type maskHandler struct {
	base  slog.Handler
	ops   []handlerOp // With and WithGroup calls, in order
	m     *Masker
	built atomic.Pointer[builtHandler]
}

type handlerOp struct {
	group string
	attrs []slog.Attr
}

type builtHandler struct {
	gen uint64
	h   slog.Handler
}

// handler returns base with ops applied, masked as of the masker's
// current secrets.
func (h *maskHandler) handler() slog.Handler {
	if len(h.ops) == 0 {
		return h.base
	}
	gen := h.m.generation()
	if b := h.built.Load(); b != nil && b.gen == gen {
		return b.h
	}
	out := h.base
	for _, op := range h.ops {
		if op.attrs == nil {
			out = out.WithGroup(op.group)
			continue
		}
		masked := make([]slog.Attr, len(op.attrs))
		for i, a := range op.attrs {
			masked[i] = h.attr(a)
		}
		out = out.WithAttrs(masked)
	}
	h.built.Store(&builtHandler{gen: gen, h: out})
	return out
}

func (h *maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	inner := h.handler()
	if h.m == nil || h.m.r.Load() == nil {
		return inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, h.m.Mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return inner.Handle(ctx, out)
}

func (h *maskHandler) with(op handlerOp) *maskHandler {
	return &maskHandler{base: h.base, ops: append(slices.Clip(h.ops), op), m: h.m}
}

func (h *maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: slices.Clone(as)})
}

func (h *maskHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}

func (h *maskHandler) attr(a slog.Attr) slog.Attr {
	if h.m == nil || h.m.r.Load() == nil {
		return a
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.m.Mask(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]any, len(group))
		for i, g := range group {
			masked[i] = h.attr(g)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		text := fmt.Sprint(v.Any())
		if m := h.m.Mask(text); m != text {
			return slog.String(a.Key, m)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
