package journal

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpmux/mcpmux/internal/logs"
)

// maskJSON hides the masker's secrets in the strings (and keys) of raw,
// as a JSON decoder reads them, leaving the rest intact: masking the
// encoded text itself could break the JSON, as a secret may equal a
// keyword ("true") or end in a backslash, and would miss a secret written
// with escapes ("p\u00e4ss", "a\/b"). Values without any secret, the
// usual case, cost a scan or two and come back as they are.
func maskJSON(m *logs.Masker, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	if s := unescapeJSON(raw); m.Mask(s) == s {
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

// unescapeJSON returns raw with every escape of a JSON string replaced by
// what it stands for, ignoring the structure: each string of raw, as a
// decoder reads it, is then a substring of the result, so a secret in none
// of them is not in it either.
func unescapeJSON(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			b.WriteByte(c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n := unescapeU(raw[i+1:])
			if n == 0 {
				b.WriteString(`\u`)
				continue
			}
			b.WriteRune(r)
			i += n
		default: // " \ / and anything else stand for themselves
			b.WriteByte(raw[i])
		}
	}
	return b.String()
}

// unescapeU reads the hex digits after "\u" (and a low surrogate's
// "\uXXXX" after a high one) and returns the rune and the bytes read, 0 if
// there are no four hex digits. A lone surrogate is U+FFFD, as
// encoding/json reads it.
func unescapeU(b []byte) (rune, int) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[:4]), 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if len(b) >= 6 && b[4] == '\\' && b[5] == 'u' {
			if r2, ok := hex4(b[6:]); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return dec, 10
				}
			}
		}
		return utf8.RuneError, 4
	}
	return r, 4
}
