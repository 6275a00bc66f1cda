package journal

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Canonical is the canonical JSON of a call's arguments, by which replay
// matches calls: object keys sorted, no insignificant space, numbers by
// their value (1, 1.0 and 1e0 are one number), and absent or null
// arguments as {} (what the server gets for them). ok is false if raw is
// not JSON.
func Canonical(raw json.RawMessage) (canon []byte, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return []byte("{}"), true
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	b, err := json.Marshal(canonicalNumbers(v))
	if err != nil {
		return nil, false
	}
	return b, true
}

// canonicalNumbers rewrites every number of v in one spelling: integers
// that fit in 64 bits as such, any other number as the shortest
// float64 that reads back the same.
func canonicalNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return v // beyond float64: keep it as written
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case []any:
		for i, e := range v {
			v[i] = canonicalNumbers(e)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = canonicalNumbers(e)
		}
	}
	return v
}
