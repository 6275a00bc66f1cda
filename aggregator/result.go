package aggregator

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpmux/mcpmux/journal"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is a tool call's result on its way through the pipeline. A
// server's result travels as the server sent it, as raw JSON, and is
// decoded only when a step must look inside (a rule that may change it, a
// note to put in front, a result over max_result_bytes): the usual call
// is neither decoded nor re-encoded by mcpmux. Results mcpmux makes itself
// (errors, refusals, meta tools) are decoded from the start.
type result struct {
	raw json.RawMessage     // the server's result; nil once decoded
	res *mcp.CallToolResult // the decoded result; nil until needed
	// rpc is a server's JSON-RPC error the client gets as it is
	// (passedOn in failure.go); res then holds the same as an isError
	// result, for the rules, the journal and mcpmux__call_tool.
	rpc *jsonrpc.Error
}

// wireError is the JSON-RPC error the client is answered with instead of
// the result; nil for a result.
func (r *result) wireError() error {
	if r.rpc == nil {
		return nil
	}
	return r.rpc
}

// decoded returns a result mcpmux made.
func decoded(res *mcp.CallToolResult) *result { return &result{res: res} }

// typed returns the result decoded, for a step that reads or changes it;
// from then on it is encoded anew. A server's result that cannot be
// decoded becomes an error result saying so.
func (r *result) typed() *mcp.CallToolResult {
	if r.res == nil {
		var res mcp.CallToolResult
		if err := json.Unmarshal(r.raw, &res); err != nil {
			res = *toolError("The server's result could not be read: %v. This is a fault of the server; try again, or use another tool.", err)
		}
		r.res, r.raw = &res, nil
	}
	return r.res
}

// isError reports whether the result is an error result, without decoding
// a server's result that has no "isError" field at all.
func (r *result) isError() bool {
	if r.res != nil {
		return r.res.IsError
	}
	if !bytes.Contains(r.raw, []byte(`"isError"`)) {
		return false
	}
	var v struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(r.raw, &v)
	return v.IsError
}

// size is the length of the server's result as sent, or -1 once decoded.
func (r *result) size() int {
	if r.res != nil {
		return -1
	}
	return len(r.raw)
}

// wire is the result as the SDK sends it to the client.
func (r *result) wire() mcp.Result {
	if r.res != nil {
		return r.res
	}
	return &rawResult{raw: r.raw}
}

// journaled is the result as the client gets it, for the journal.
func (r *result) journaled() json.RawMessage {
	if r.res == nil {
		return r.raw
	}
	return journal.EncodeResult(r.res)
}

// rawResult is a server's result handed to the SDK to send as it is.
type rawResult struct {
	mcp.ResultBase
	raw         json.RawMessage
	sessionless bool // see markSessionless
}

// markSessionless has the result carry a resultType, as the SDK's own
// results do on the sessionless protocol.
func (r *rawResult) markSessionless() { r.sessionless = true }

// MarshalJSON writes the server's bytes. The SDK sets _meta on results
// only on the sessionless 2026-07-28 protocol (its serverInfo); there the
// result is decoded to merge it.
func (r *rawResult) MarshalJSON() ([]byte, error) {
	raw := r.raw
	if r.sessionless {
		raw = withResultType(raw)
	}
	if len(r.Meta) == 0 {
		return raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("adding _meta to a tool result: %w", err)
	}
	meta := map[string]any{}
	if old, ok := m["_meta"]; ok {
		_ = json.Unmarshal(old, &meta)
	}
	for k, v := range r.Meta {
		meta[k] = v
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	m["_meta"] = b
	return json.Marshal(m)
}
