package journal

import (
	"bytes"
	"encoding/json"

	"github.com/mcpmux/mcpmux/internal/logs"
)

// maskJSON hides the masker's secrets in the strings (and keys) of raw,
// leaving the rest intact: masking the encoded text itself could break
// the JSON, as a secret may equal a keyword ("true") or end in a
// backslash. Values without any secret, the usual case, cost one scan and
// come back as they are.
func maskJSON(m *logs.Masker, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	if s := string(raw); m.Mask(s) == s {
		return raw
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		// Not JSON: nothing a client could have sent; keep it masked as text.
		b, _ := json.Marshal(m.Mask(string(raw)))
		return b
	}
	b, err := json.Marshal(maskValue(m, v))
	if err != nil {
		return raw
	}
	return b
}

func maskValue(m *logs.Masker, v any) any {
	switch v := v.(type) {
	case string:
		return m.Mask(v)
	case []any:
		for i, e := range v {
			v[i] = maskValue(m, e)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[m.Mask(k)] = maskValue(m, e)
		}
		return out
	}
	return v
}
