package aggregator

import (
	"bytes"
	"encoding/json"
	"errors"
)

// withField returns the JSON object obj with its top-level field key set
// to value, a JSON value: where the field is, or appended. Every other
// byte, and so the order and form of the other fields, stays as it was,
// so that a definition a server listed reaches clients as the server
// wrote it, under the name mcpmux gives it.
func withField(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if name != key {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		out := make([]byte, 0, len(obj)-len(v)+len(value))
		out = append(out, obj[:start]...)
		out = append(out, value...)
		return append(out, obj[end:]...), nil
	}
	// Not there: before the closing brace.
	end := bytes.LastIndexByte(obj, '}')
	head := bytes.TrimRight(obj[:end], " \t\r\n")
	k, _ := json.Marshal(key)
	out := make([]byte, 0, len(obj)+len(k)+len(value)+2)
	out = append(out, head...)
	if !bytes.HasSuffix(head, []byte("{")) {
		out = append(out, ',')
	}
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[end:]...), nil
}

// listedAs is a definition as clients get it: the server's own JSON (raw,
// may be nil) with key set to the exposed name or URI, or, without it or
// if it is not an object, def encoded.
func listedAs(raw json.RawMessage, key, exposed string, def any) json.RawMessage {
	if raw != nil {
		v, _ := json.Marshal(exposed)
		if out, err := withField(raw, key, v); err == nil {
			return out
		}
	}
	b, err := json.Marshal(def)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}
