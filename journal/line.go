// Package journal writes and reads mcpmux's call journal: one JSON Lines
// file per task, a line per tool call a client made, written when the call
// ends, and a line per tool catalog its sessions saw. Subpackage replay
// answers calls from a journal; subpackage report summarises one.
//
// Writing never fails a call: a line that cannot be written is logged and
// counted (Options.OnError), and the call goes on.
package journal

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kinds of lines.
const (
	KindCall    = "call"    // one tool call of a client
	KindCatalog = "catalog" // the tools a session of the task was listed
)

// Header starts every line.
type Header struct {
	Kind    string    `json:"kind"`
	Time    time.Time `json:"time"` // when the call started, or the tools were listed
	Task    string    `json:"task"`
	Session string    `json:"session"`
	Client  *Client   `json:"client,omitempty"` // from the session's initialize
	Profile string    `json:"profile"`
}

// CallLine is the line of one tool call of a client (KindCall).
type CallLine struct {
	Header
	Tool       string          `json:"tool"`   // the exposed name the client called
	Server     string          `json:"server"` // the server it went to ("mcpmux" for meta tools; "" if none)
	Arguments  json.RawMessage `json:"arguments"`
	Result     json.RawMessage `json:"result"` // exactly the result the client got
	IsError    bool            `json:"is_error"`
	DurationMS float64         `json:"duration_ms"`
	// What mcpmux did to the call, and why.
	Rule        string `json:"rule,omitempty"`   // the rule of the first hit
	Action      string `json:"action,omitempty"` // its action: refused, redacted, fallback
	Hits        []Hit  `json:"hits,omitempty"`   // every hit, when there was more than one
	CorrectedTo string `json:"corrected_to,omitempty"`
	Failure     string `json:"failure,omitempty"` // the kind of failure: timeout, lost, unavailable, ...
	Timeout     string `json:"timeout,omitempty"` // the timeout a timed-out call ran into
	Replayed    bool   `json:"replayed,omitempty"`
	// Cost is what the servers' calls cost (cost: of the tool or server),
	// when it has a price; a replayed call costs nothing and says so.
	Cost *Cost `json:"cost,omitempty"`
	// Drift says what changed in the tool's definition since it was
	// pinned (pin: or tool_pinning:), when it did.
	Drift string `json:"drift,omitempty"`
	// Answers are what the run steps of the call answered (a server, or a
	// replay), when that is not simply Result for Tool and Arguments:
	// empty for a call no server answered (refused, unknown tool, a meta
	// tool), several for fallbacks and retries. Replay reads them.
	Answers *[]Answer `json:"answers,omitempty"`
}

// CatalogLine is the line of a tool catalog a session of the task was
// listed (KindCatalog).
type CatalogLine struct {
	Header
	Servers []Server `json:"servers"`
}

// Line is any line, as read back.
type Line struct {
	CallLine
	Servers []Server `json:"servers,omitempty"`
}

// Cost is the price of a call.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
	// Free says why a priced call cost nothing: "replayed" (answered from
	// the journal, no server called).
	Free string `json:"free,omitempty"`
}

// Client names the client of a session.
type Client struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Hit is one action of a rule on a call.
type Hit struct {
	Rule   string `json:"rule"`
	Action string `json:"action"`
}

// Answer is what one run step of a call answered: the server's result
// (or the replayed one) for a call of Tool, by its exposed name, with
// Arguments.
type Answer struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result"`
}

// Server is one server of a recorded catalog: its name, the prefix of its
// exposed names, and its tools as the server defines them (their own
// names).
type Server struct {
	Name   string      `json:"name"`
	Prefix string      `json:"prefix"`
	Tools  []*mcp.Tool `json:"tools"`
	// Hashes are ToolHash of each tool's definition, by its own name.
	Hashes map[string]string `json:"hashes,omitempty"`
}

// EncodeResult is the JSON of a tool result, as the client gets it; the
// one place the journal encodes results.
func EncodeResult(res *mcp.CallToolResult) json.RawMessage {
	if res == nil {
		return json.RawMessage("null")
	}
	// Its own MarshalJSON: json.Marshal would compact the whole result
	// once more.
	b, err := res.MarshalJSON()
	if err != nil {
		b, _ = json.Marshal(map[string]string{"mcpmux/unencodable": err.Error()})
	}
	return b
}

// DecodeResult reads a result EncodeResult wrote.
func DecodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
