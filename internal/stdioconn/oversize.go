package stdioconn

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// oversize is a line over the bound, read past without being kept. As it
// streams by, its top-level "id" and whether it has a "method" are noted
// (a streaming scan of the outer object's keys, strings and nesting), so
// that the request it answers, or its sender, can be told.
type oversize struct {
	size int   // bytes read, end of line included
	err  error // what ended the stream with it (io.EOF), if anything

	depth     int
	inStr     bool
	esc       bool
	expectKey bool   // at depth 1, a key comes next
	inKey     bool   // reading a top-level key
	key       []byte // the top-level key being read (its first bytes)
	keyLong   bool
	cur       string // the top-level key whose value is being read
	inValue   bool
	id        []byte // the raw value of the top-level "id"
	idDone    bool
	idBad     bool
	method    bool // a top-level "method" was seen
}

// maxSniffedID bounds the id kept from an oversized line.
const maxSniffedID = 256

func (o *oversize) feed(p []byte) {
	for i := 0; i < len(p); i++ {
		if o.inStr && !o.esc && !o.inKey && !o.capturing() {
			// Inside a string nobody needs: on to its next quote or
			// backslash at memchr speed (such strings are most of a
			// large message).
			j := stringSpan(p[i:])
			if j < 0 {
				return
			}
			i += j
		}
		b := p[i]
		if o.inStr {
			if o.capturing() {
				o.keepID(b)
			}
			switch {
			case o.esc:
				o.esc = false
			case b == '\\':
				o.esc = true
			case b == '"':
				o.inStr = false
				if o.inKey {
					o.inKey = false
					o.cur = ""
					if !o.keyLong {
						o.cur = string(o.key)
					}
				}
				continue
			}
			if o.inKey {
				if len(o.key) < 16 {
					o.key = append(o.key, b)
				} else {
					o.keyLong = true
				}
			}
			continue
		}
		switch b {
		case '"':
			o.inStr = true
			if o.depth == 1 && o.expectKey {
				o.inKey, o.expectKey, o.keyLong = true, false, false
				o.key = o.key[:0]
				continue
			}
		case '{', '[':
			o.depth++
			if o.depth == 1 && b == '{' {
				o.expectKey = true
			}
		case '}', ']':
			if o.depth == 1 {
				o.endValue()
			}
			o.depth--
		case ',':
			if o.depth == 1 {
				o.endValue()
				o.expectKey = true
			}
		case ':':
			if o.depth == 1 && !o.inValue {
				o.inValue = true
				if o.cur == "method" {
					o.method = true
				}
				continue
			}
		}
		if o.capturing() {
			o.keepID(b)
		}
	}
}

// stringSpan is the index of the first quote or backslash in p, or -1.
func stringSpan(p []byte) int {
	q := bytes.IndexByte(p, '"')
	end := q
	if end < 0 {
		end = len(p)
	}
	if b := bytes.IndexByte(p[:end], '\\'); b >= 0 {
		return b
	}
	return q
}

func (o *oversize) capturing() bool { return o.inValue && o.cur == "id" && !o.idDone }

func (o *oversize) keepID(b byte) {
	if len(o.id) >= maxSniffedID {
		o.idBad = true
		return
	}
	o.id = append(o.id, b)
}

func (o *oversize) endValue() {
	if o.inValue && o.cur == "id" {
		o.idDone = true
	}
	o.inValue, o.cur = false, ""
}

// requestID is the line's top-level id, if it had a valid one.
func (o *oversize) requestID() (jsonrpc.ID, bool) {
	if !o.idDone || o.idBad {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(trimSpace(o.id), &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}

// oversized deals with a line over the bound: an answer becomes an error
// answer of its request, so that the call fails and nothing else; a
// request of the peer gets an error reply; anything else is dropped. The
// connection goes on.
func (c *Conn) oversized(o *oversize) {
	id, ok := o.requestID()
	switch {
	case ok && !o.method:
		msg := fmt.Sprintf("the answer has %d bytes or more, over the bound of a message on stdio (%d bytes), so it was not read", o.size, c.max)
		c.log.Warn("stdio: an answer over the bound was not read", "id", id.Raw(), "bytes", o.size, "bound", c.max)
		c.deliver(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}}, nil)
	case ok:
		msg := fmt.Sprintf("the request has %d bytes or more, over the bound of a message on stdio (%d bytes), so it was not read", o.size, c.max)
		c.log.Warn("stdio: a request over the bound was refused", "id", id.Raw(), "bytes", o.size, "bound", c.max)
		c.reply(errorLine(&id, jsonrpc.CodeInvalidRequest, msg), "request over the bound")
	default:
		c.log.Warn("stdio: a message over the bound was dropped (no id found in it)", "bytes", o.size, "bound", c.max)
	}
}
