package aggregator

//lint:file-ignore SA1019 logging is deprecated from MCP 2026-07-28 on, still functional: mcpmux keeps the level a 2026 client sets with the deprecated logging/setLevel as its requests' io.modelcontextprotocol/logLevel.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// ping and logging/setLevel of 2026-07-28 clients over HTTP (see
// docs/protocol.md#ping-and-the-log-level-of-2026-07-28-clients).
//
// MCP 2026-07-28 removed both: a client's log level is a field of each
// request's _meta (io.modelcontextprotocol/logLevel), and a server
// answers either method, sent as a request of 2026-07-28 (with the _meta
// of one), "method not found" (404, -32601). But a go-sdk v1.8.0 client
// that negotiated 2026-07-28 still has ClientSession.Ping and
// SetLoggingLevel, and sends them as before: without that _meta, under the
// MCP-Protocol-Version header of 2026-07-28. The go-sdk's stateless
// handler refuses such a request (400, -32602 "missing or invalid _meta
// field"), a plain go-sdk server's as well as mcpmux's. Over stdio the
// same client's ping and logging/setLevel are answered: the go-sdk takes a
// request without the _meta for one of 2025-11-25. mcpmux answers them
// over HTTP as over stdio:
//
//   - ping gets {}: whoever asks gets an answer from a live mcpmux;
//   - logging/setLevel sets the log level of the client the request names
//     (clientkey.go: its task within its token, else its token): its later
//     requests of 2026-07-28 that carry no level of their own get it as
//     theirs (LiftBody), as a session's later requests got its level. It
//     is forgotten when the client has sent nothing for keptLevelIdle, as
//     a keyed connection is closed. A request that names no client cannot
//     be told apart from any other's: it is answered -32601 (404), saying
//     to send the level with each request.
//
// Over stdio the connection is the client: a level it set is its session's,
// and its requests of 2026-07-28 without a level of their own get it
// (stdioLevel).

// keptLevelIdle is how long a client's level is kept while it sends
// nothing: a keyed connection's default idle_timeout.
const keptLevelIdle = 10 * time.Minute

// maxKeptLevels bounds the clients whose level is kept; beyond it, the
// one idle the longest is forgotten.
const maxKeptLevels = 10000

// keptLevels are the log levels 2026-07-28 clients set with
// logging/setLevel over HTTP, by the key their requests name.
type keptLevels struct {
	mu     sync.Mutex
	levels map[upstream.ClientID]*keptLevel
	idle   time.Duration
}

type keptLevel struct {
	level mcp.LoggingLevel
	used  time.Time
}

// set keeps level for client id.
func (k *keptLevels) set(id upstream.ClientID, level mcp.LoggingLevel) {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sweep(now)
	if k.levels == nil {
		k.levels = map[upstream.ClientID]*keptLevel{}
	}
	if _, ok := k.levels[id]; !ok && len(k.levels) >= maxKeptLevels {
		var oldest upstream.ClientID
		var at time.Time
		for id, l := range k.levels {
			if at.IsZero() || l.used.Before(at) {
				oldest, at = id, l.used
			}
		}
		delete(k.levels, oldest)
	}
	k.levels[id] = &keptLevel{level: level, used: now}
}

// get returns the level kept for id, "" if none, and keeps it for another
// idle period.
func (k *keptLevels) get(id upstream.ClientID) mcp.LoggingLevel {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sweep(now)
	l := k.levels[id]
	if l == nil {
		return ""
	}
	l.used = now
	return l.level
}

// any reports whether a level is kept for some client: until one sets
// one, requests are not read for theirs.
func (k *keptLevels) any() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.levels) > 0
}

// lowest is the lowest kept level, "" if none.
func (k *keptLevels) lowest() mcp.LoggingLevel {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sweep(time.Now())
	var low mcp.LoggingLevel
	for _, l := range k.levels {
		if low == "" || levelRank[l.level] < levelRank[low] {
			low = l.level
		}
	}
	return low
}

// sweep forgets the levels of clients idle for longer than k.idle.
func (k *keptLevels) sweep(now time.Time) {
	idle := k.idle
	if idle <= 0 {
		idle = keptLevelIdle
	}
	for id, l := range k.levels {
		if now.Sub(l.used) > idle {
			delete(k.levels, id)
		}
	}
}

// removedRequest is what AnswerRemoved reads of a POST's body.
type removedRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *struct {
		Meta  map[string]any   `json:"_meta"`
		Level mcp.LoggingLevel `json:"level"`
	} `json:"params"`
}

// AnswerRemoved answers a 2026-07-28 POST of ping or logging/setLevel
// without the request _meta of 2026-07-28, which the go-sdk would refuse
// (see above): it returns the result or the error of the answer, and
// whether it answered (see front.Engine, for which it stays on Aggregator).
func (a *Aggregator) AnswerRemoved(r *http.Request, body []byte) (json.RawMessage, *jsonrpc.Error, bool) {
	return a.clients.answerRemoved(r, body)
}

func (c *clientSessions) answerRemoved(r *http.Request, body []byte) (json.RawMessage, *jsonrpc.Error, bool) {
	if r.Method != http.MethodPost || !(bytes.Contains(body, []byte(`"ping"`)) || bytes.Contains(body, []byte(`"logging/setLevel"`))) {
		return nil, nil, false
	}
	var req removedRequest
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 || string(req.ID) == "null" {
		return nil, nil, false // not one request; a notification is no call
	}
	var meta map[string]any
	if req.Params != nil {
		meta = req.Params.Meta
	}
	if _, ok := meta[mcp.MetaKeyProtocolVersion]; ok {
		return nil, nil, false // a request of 2026-07-28: the go-sdk answers it as the spec says
	}
	switch req.Method {
	case "ping":
		return json.RawMessage(`{}`), nil, true
	case "logging/setLevel":
		var level mcp.LoggingLevel
		if req.Params != nil {
			level = req.Params.Level
		}
		if _, ok := levelRank[level]; !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("logging/setLevel: invalid level %q", level)}, true
		}
		id, ok := httpClientKey(r, meta)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: `logging/setLevel is not a method of MCP 2026-07-28: send the level in each request's _meta ("io.modelcontextprotocol/logLevel"). mcpmux keeps a level set with logging/setLevel only for a client that names itself, with an X-Task-Id header or a bearer token`}, true
		}
		c.levels.set(id, level)
		c.pushLogLevel(context.WithoutCancel(r.Context()), c.lowestLevel())
		return json.RawMessage(`{}`), nil, true
	}
	return nil, nil, false
}

// httpClientKey is the key of the client an HTTP request names, as
// withClientKey finds it in a request the go-sdk has read: its task, in
// _meta or X-Task-Id, within its principal; else its principal.
func httpClientKey(r *http.Request, meta map[string]any) (upstream.ClientID, bool) {
	var task, principal string
	if v, ok := meta[taskMetaKey].(string); ok && v != "" {
		task = cleanTaskID(v)
	}
	if v := r.Header.Get(TaskHeader); task == "" && v != "" {
		task = cleanTaskID(v)
	}
	if info := auth.TokenInfoFromContext(r.Context()); info != nil {
		principal = info.UserID
	}
	return clientKey(task, principal)
}

// withKeptLevel gives body, a 2026-07-28 request over HTTP without a log
// level of its own, the level its client set with logging/setLevel, if it
// did; else returns body.
func (c *clientSessions) withKeptLevel(r *http.Request, body []byte) []byte {
	if !c.levels.any() || !bytes.Contains(body, []byte(mcp.MetaKeyProtocolVersion)) || bytes.Contains(body, []byte(mcp.MetaKeyLogLevel)) {
		return body
	}
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return body
	}
	if v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string); v < firstSessionlessVersion {
		return body
	}
	id, ok := httpClientKey(r, msg.Params.Meta)
	if !ok {
		return body
	}
	level := c.levels.get(id)
	if level == "" {
		return body
	}
	return withMetaLevel(body, level)
}

// withMetaLevel returns msg, a JSON-RPC request, with level as its
// params._meta's io.modelcontextprotocol/logLevel; msg if it cannot.
func withMetaLevel(msg []byte, level mcp.LoggingLevel) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil || params == nil {
		return msg
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil || meta == nil {
		return msg
	}
	b, _ := json.Marshal(level)
	meta[mcp.MetaKeyLogLevel] = b
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	if m["params"], err = json.Marshal(params); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// stdioLevel gives line, a request of 2026-07-28 a stdio client sends
// without a log level of its own, the level the client set with
// logging/setLevel on the connection (session ss), if it did.
func (c *clientSessions) stdioLevel(ss *mcp.ServerSession, line []byte) []byte {
	if ss == nil || !bytes.Contains(line, []byte(mcp.MetaKeyProtocolVersion)) || bytes.Contains(line, []byte(mcp.MetaKeyLogLevel)) {
		return line
	}
	cs := c.lookup(ss)
	if cs == nil {
		return line
	}
	cs.mu.Lock()
	level := cs.level
	cs.mu.Unlock()
	if level == "" {
		return line
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || len(msg.ID) == 0 {
		return line
	}
	if v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string); v < firstSessionlessVersion {
		return line
	}
	return withMetaLevel(line, level)
}

// requestLevel is the log level of a sessionless request's _meta, "" for
// none (then it gets no log messages).
func requestLevel(req mcp.Request) mcp.LoggingLevel {
	params := req.GetParams()
	if params == nil || reflect.ValueOf(params).IsNil() {
		return ""
	}
	v, _ := params.GetMeta()[mcp.MetaKeyLogLevel].(string)
	if _, ok := levelRank[mcp.LoggingLevel(v)]; !ok {
		return ""
	}
	return mcp.LoggingLevel(v)
}

// ownLevel is the log level of a sessionless request of ctx, and whether
// ctx is one's (see upstream.Request.OwnLevel).
func ownLevel(ctx context.Context) (mcp.LoggingLevel, bool) {
	level, ok := ctx.Value(requestLevelKey{}).(mcp.LoggingLevel)
	return level, ok
}
