package stdioconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	sjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireMessage is the wire form of any JSON-RPC message, as the go-sdk
// decodes it (jsonrpc2.DecodeMessage): method is raw so that a "method"
// key is seen even with an empty value.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// parseFlags: one pass, keys matched exactly as the go-sdk matches them,
// raw values and strings pointing into the line (which each message owns:
// readLine copies it once).
const parseFlags = sjson.ZeroCopy | sjson.DontMatchCaseInsensitiveStructFields

// maxDepth is the go-sdk's bound of JSON nesting (internal/json); it also
// keeps the recursive parser's stack small.
const maxDepth = 1000

var errTooDeep = fmt.Errorf("JSON nested deeper than %d levels", maxDepth)

// decodeMessage parses one message, once.
func decodeMessage(line []byte) (jsonrpc.Message, error) {
	if err := checkDepth(line); err != nil {
		return nil, err
	}
	return parseMessage(line)
}

func parseMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	rest, err := sjson.Parse(data, &w, parseFlags)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("invalid data after the message: %q", excerpt(rest))
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.Version, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if _, err := sjson.Parse(w.Method, &method, parseFlags); err != nil {
			return nil, fmt.Errorf("method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("invalid request: neither a method nor an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error // not a typed nil
	}
	return resp, nil
}

// decodeBatch parses a batch, once.
func decodeBatch(line []byte) ([]jsonrpc.Message, error) {
	if err := checkDepth(line); err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	rest, err := sjson.Parse(line, &raws, parseFlags)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("invalid data after the batch: %q", excerpt(rest))
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, len(raws))
	for i, raw := range raws {
		if msgs[i], err = parseMessage(raw); err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
	}
	return msgs, nil
}

// checkDepth refuses JSON nested deeper than maxDepth, looking at its
// brackets outside strings, as the go-sdk does before every decode.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return errTooDeep
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// appendMessage appends msg in the go-sdk's wire form and key order
// (jsonrpc, id, method, params, result, error; empty ones left out), its
// raw values as they are: they are JSON the SDK encoded or this package
// parsed, so they are neither validated nor compacted again, unless they
// hold a line break, which would end the line.
func appendMessage(b []byte, msg jsonrpc.Message) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0"`...)
	switch m := msg.(type) {
	case *jsonrpc.Request:
		b = appendID(b, m.ID)
		if m.Method != "" {
			b = append(b, `,"method":`...)
			b = appendString(b, m.Method)
		}
		var err error
		if b, err = appendRaw(b, `,"params":`, m.Params); err != nil {
			return b, fmt.Errorf("params of %s: %w", m.Method, err)
		}
	case *jsonrpc.Response:
		b = appendID(b, m.ID)
		var err error
		if b, err = appendRaw(b, `,"result":`, m.Result); err != nil {
			return b, fmt.Errorf("result: %w", err)
		}
		if m.Error != nil {
			if b, err = appendError(b, wireError(m.Error)); err != nil {
				return b, err
			}
		}
	default:
		return b, fmt.Errorf("unknown message type %T", msg)
	}
	return append(b, '}'), nil
}

// appendBatch appends the answers of a batch as one array.
func appendBatch(b []byte, msgs []*jsonrpc.Response) ([]byte, error) {
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMessage(b, m); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// wireError is err as it goes on the wire, as the go-sdk makes it: a
// *jsonrpc.Error as it is, another error as its text with the code of a
// *jsonrpc.Error it wraps.
func wireError(err error) *jsonrpc.Error {
	if we, ok := err.(*jsonrpc.Error); ok {
		return we
	}
	out := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		out.Code = wrapped.Code
	}
	return out
}

func appendError(b []byte, e *jsonrpc.Error) ([]byte, error) {
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	var err error
	if b, err = appendRaw(b, `,"data":`, e.Data); err != nil {
		return b, fmt.Errorf("error data: %w", err)
	}
	return append(b, '}'), nil
}

func appendID(b []byte, id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		b = append(b, `,"id":`...)
		return strconv.AppendInt(b, v, 10)
	case string:
		b = append(b, `,"id":`...)
		return appendString(b, v)
	}
	return b // no id: a notification
}

// appendRaw appends key and raw, unless raw is empty (omitempty).
func appendRaw(b []byte, key string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	b = append(b, key...)
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(b, raw...), nil
	}
	// Whitespace only: JSON strings cannot hold a raw line break.
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}

// appendString appends s as a JSON string as the go-sdk writes it
// (encoding/json without HTML escaping).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendStringSlow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendStringSlow(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// errorLine is an error answer of the connection's own.
func errorLine(id *jsonrpc.ID, code int64, message string) []byte {
	b := []byte(`{"jsonrpc":"2.0"`)
	if id != nil && id.IsValid() {
		b = appendID(b, *id)
	} else {
		b = append(b, `,"id":null`...)
	}
	b, _ = appendError(b, &jsonrpc.Error{Code: code, Message: message})
	return append(b, '}')
}
