package stdioconn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// firstVersionWithoutBatches is the first MCP version that forbids
// JSON-RPC batches.
const firstVersionWithoutBatches = "2025-06-18"

// metaProtocolVersion is the _meta key with which a 2026-07-28 request
// says its version (there is no initialize).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// protocol learns the protocol version of a connection from the messages
// that pass through it either way: the initialize request's id, then the
// protocolVersion of its answer; or the _meta of a 2026-07-28 request.
// Only the initialize exchange, and requests while no version is known,
// are looked into.
type protocol struct {
	v           atomic.Pointer[string] // nil until learnt
	initPending atomic.Bool            // an initialize request awaits its answer
	mu          sync.Mutex
	initID      jsonrpc.ID // of that request
}

func (p *protocol) version() string {
	if v := p.v.Load(); v != nil {
		return *v
	}
	return ""
}

func (p *protocol) sawMessage(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "initialize" && m.IsCall() {
			p.mu.Lock()
			p.initID = m.ID
			p.mu.Unlock()
			p.initPending.Store(true)
			return
		}
		if p.v.Load() == nil && bytes.Contains(m.Params, []byte(metaProtocolVersion)) {
			var params struct {
				Meta map[string]any `json:"_meta"`
			}
			if json.Unmarshal(m.Params, &params) == nil {
				if v, ok := params.Meta[metaProtocolVersion].(string); ok {
					p.v.Store(&v)
				}
			}
		}
	case *jsonrpc.Response:
		if !p.initPending.Load() {
			return
		}
		p.mu.Lock()
		isInit := m.ID == p.initID
		if isInit {
			p.initID = jsonrpc.ID{}
			p.initPending.Store(false)
		}
		p.mu.Unlock()
		if isInit && m.Error == nil {
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(m.Result, &res) == nil && res.ProtocolVersion != "" {
				p.v.Store(&res.ProtocolVersion)
			}
		}
	}
}

// batches tracks the requests of incoming batches, whose answers go back
// as one array once all are ready (JSON-RPC 2.0 §6), as the go-sdk does.
type batches struct {
	n       atomic.Int64 // len(pending): answers skip the lock while 0
	mu      sync.Mutex
	pending map[jsonrpc.ID]*batch
}

type batch struct {
	unresolved map[jsonrpc.ID]int // request id → index in answers
	answers    []*jsonrpc.Response
}

// add records the requests of an incoming batch.
func (bs *batches) add(msgs []jsonrpc.Message) error {
	var b *batch
	for _, m := range msgs {
		r, ok := m.(*jsonrpc.Request)
		if !ok || !r.IsCall() {
			continue
		}
		if b == nil {
			b = &batch{unresolved: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.unresolved[r.ID]; dup {
			return fmt.Errorf("invalid request: the batch has request id %v twice", r.ID.Raw())
		}
		b.unresolved[r.ID] = len(b.answers)
		b.answers = append(b.answers, nil)
	}
	if b == nil {
		return nil
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for id := range b.unresolved {
		if _, dup := bs.pending[id]; dup {
			return fmt.Errorf("invalid request: request id %v is already in flight in another batch", id.Raw())
		}
	}
	if bs.pending == nil {
		bs.pending = map[jsonrpc.ID]*batch{}
	}
	for id := range b.unresolved {
		bs.pending[id] = b
	}
	bs.n.Store(int64(len(bs.pending)))
	return nil
}

// answered records resp if it answers a request of a batch: inBatch says
// whether it does, and all is the batch's answers once resp completed it.
func (bs *batches) answered(resp *jsonrpc.Response) (all []*jsonrpc.Response, inBatch bool) {
	if bs.n.Load() == 0 {
		return nil, false
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.pending[resp.ID]
	if !ok {
		return nil, false
	}
	delete(bs.pending, resp.ID)
	bs.n.Store(int64(len(bs.pending)))
	b.answers[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	if len(b.unresolved) > 0 {
		return nil, true
	}
	return b.answers, true
}
