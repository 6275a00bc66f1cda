package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// seen is an Event as a test records it.
type seen struct {
	ID, Retry, Data string
	Long, Held      bool
}

// body is a response body read in the given parts, one per Read (the
// last one with the body's error).
type body struct {
	parts  []string
	err    error
	closed bool
}

func (b *body) Read(p []byte) (int, error) {
	for len(b.parts) > 0 && b.parts[0] == "" {
		b.parts = b.parts[1:]
	}
	if len(b.parts) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.parts[0])
	b.parts[0] = b.parts[0][n:]
	return n, nil
}

func (b *body) Close() error { b.closed = true; return nil }

// cuts are the ways a stream is cut into reads: whole, byte by byte, and
// in two at every byte (of a long stream, at every 101st and around the
// multiples of Peek).
func cuts(stream string) map[string][]string {
	c := map[string][]string{"whole": {stream}}
	var bytewise []string
	for i := range len(stream) {
		bytewise = append(bytewise, stream[i:i+1])
		if len(stream) < 1024 || i%101 == 0 || (i+3)%Peek < 6 {
			c[fmt.Sprintf("at %d", i)] = []string{stream[:i], stream[i:]}
		}
	}
	c["byte by byte"] = bytewise
	return c
}

// read reads the stream through a Reader of h (Event recorded, and
// dropping the events whose data has "drop"), and returns what it handed
// on, the events and the error it ended with.
func read(parts []string, bodyErr error, h Handler) (string, []seen, error) {
	var events []seen
	h.Event = func(e *Event) bool {
		events = append(events, seen{string(e.ID), string(e.Retry), string(e.Data), e.Long, e.Held})
		return bytes.Contains(e.Data, []byte("drop"))
	}
	r := NewReader(&body{parts: append([]string(nil), parts...), err: bodyErr}, h)
	out, err := io.ReadAll(r)
	return string(out), events, err
}

func holdAll([]byte) bool { return true }

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 3*Peek)
	for _, tc := range []struct {
		name   string
		hold   func([]byte) bool
		in     string
		out    string // "" for in unchanged
		events []seen
	}{
		{name: "one event", in: "id: 1\nevent: message\ndata: {\"a\":1}\n\n",
			events: []seen{{ID: "1", Data: `{"a":1}`}}},
		{name: "no space after the colon", in: "id:5\nretry:20\ndata:{}\n\n",
			events: []seen{{ID: "5", Retry: "20", Data: `{}`}}},
		{name: "multi-line data", in: "data: [1,\ndata:   2]  \n\n",
			events: []seen{{Data: "[1,\n2]"}}},
		{name: "CRLF", in: "id: 7\r\ndata: x\r\n\r\ndata: y\r\n\r\n",
			events: []seen{{ID: "7", Data: "x"}, {Data: "y"}}},
		{name: "comments and priming", in: ": keepalive\n\n: hi\nid: 0\nretry: 500\ndata:\n\n\n\n",
			events: []seen{{ID: "0", Retry: "500"}}},
		{name: "empty data and id", in: "id:\ndata:\n\n",
			events: []seen{{}}},
		{name: "no data", in: "id: 3\n\n",
			events: []seen{{ID: "3", Held: true}}}, // held until a data line
		{name: "batch", in: "data: [{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},{\"jsonrpc\":\"2.0\",\"method\":\"m\"}]\n\n",
			events: []seen{{Data: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"m"}]`}}},
		{name: "other lines", in: "garbage\nevent: x\ndata : y\ndata: z\n\n",
			events: []seen{{Data: "z"}}},
		{name: "unfinished at the end", in: "data: a\n\nid: 9\ndata: b",
			events: []seen{{Data: "a"}, {ID: "9", Data: "b"}}},
		{name: "unfinished line at the end", in: "data: a\n",
			events: []seen{{Data: "a"}}},
		{name: "long data not held", in: "id: 1\ndata: " + long + "\n\ndata: short\n\n",
			events: []seen{{ID: "1", Long: true}, {Data: "short"}}},
		{name: "long data held", hold: holdAll, in: "data: " + long + "\n\n",
			events: []seen{{Data: long, Held: true}}},
		{name: "held and dropped", hold: func(d []byte) bool { return bytes.HasPrefix(d, []byte(`{"m":"drop`)) },
			in:     "id: 1\ndata: {\"m\":\"dropped\",\ndata: \"x\":1}\nevent: e\n\nid: 2\ndata: {\"m\":\"kept\"}\n\n",
			out:    "id: 1\nevent: e\n\nid: 2\ndata: {\"m\":\"kept\"}\n\n",
			events: []seen{{ID: "1", Data: "{\"m\":\"dropped\",\n\"x\":1}", Held: true}, {ID: "2", Data: `{"m":"kept"}`}}},
		{name: "not held is not dropped", in: "data: drop\n\n",
			events: []seen{{Data: "drop"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.out
			if want == "" {
				want = tc.in
			}
			for cut, parts := range cuts(tc.in) {
				out, events, err := read(parts, nil, Handler{Hold: tc.hold})
				if err != nil || out != want {
					t.Fatalf("%s: handed on %q, %v; want %q", cut, out, err, want)
				}
				if fmt.Sprint(events) != fmt.Sprint(tc.events) {
					t.Fatalf("%s: events\n%v\nwant\n%v", cut, events, tc.events)
				}
			}
		})
	}
}

// An event is seen before the end of it is handed on, so that what Event
// records is recorded before the reader can act on the event.
func TestReaderEventBeforeItsEnd(t *testing.T) {
	const in = "data: 1\n\ndata: 2\r\n\r\ndata: 3"
	ends := []int{len("data: 1\n\n"), len("data: 1\n\ndata: 2\r\n\r\n"), len(in)}
	for _, hold := range []func([]byte) bool{nil, holdAll} {
		var handed []byte
		var at []int
		r := NewReader(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), Handler{Hold: hold, Event: func(*Event) bool {
			at = append(at, len(handed))
			return false
		}})
		for {
			var b [1]byte
			n, err := r.Read(b[:])
			handed = append(handed, b[:n]...)
			if err != nil {
				break
			}
		}
		if len(at) != 3 {
			t.Fatalf("hold %v: %d events, want 3", hold != nil, len(at))
		}
		for i, end := range ends {
			if at[i] >= end {
				t.Errorf("hold %v: event %d seen after %d bytes were handed on, its end is at %d", hold != nil, i+1, at[i], end)
			}
		}
	}
}

// A held event over Max is replaced by TooLarge's message, and the rest
// of the body is not read; without TooLarge it is handed on as it comes.
func TestReaderMax(t *testing.T) {
	big := strings.Repeat("y", 2*Peek)
	in := "data: small\n\nid: 2\ndata: " + big + "\n\ndata: after\n\n"
	for cut, parts := range cuts(in) {
		b := &body{parts: append([]string(nil), parts...)}
		var events []string
		r := NewReader(b, Handler{Hold: holdAll, Max: 100,
			TooLarge: func() []byte { return []byte(`{"error":1}`) },
			Event:    func(e *Event) bool { events = append(events, string(e.Data)); return false },
		})
		out, err := io.ReadAll(r)
		if want := "data: small\n\ndata: {\"error\":1}\n\n"; err != nil || string(out) != want || !b.closed {
			t.Fatalf("%s: handed on %q, %v (body closed %v); want %q and the body closed", cut, out, err, b.closed, want)
		}
		if fmt.Sprint(events) != "[small]" {
			t.Fatalf("%s: events %q", cut, events)
		}
	}
	for _, max := range []int{100, 2 * Peek} {
		out, events, err := read([]string{in}, nil, Handler{Hold: holdAll, Max: max})
		if err != nil || out != in {
			t.Fatalf("max %d without TooLarge: handed on %q, %v", max, out, err)
		}
		if want := fmt.Sprint([]seen{{Data: "small", Held: true}, {ID: "2", Long: true}, {Data: "after", Held: true}}); fmt.Sprint(events) != want {
			t.Errorf("max %d: events %v, want %v", max, events, want)
		}
	}
}

// End is told how the body ended; on an error the unfinished event is
// handed on unseen.
func TestReaderEnd(t *testing.T) {
	broken := errors.New("broken")
	for _, tc := range []struct {
		err    error
		out    string
		events int
	}{{nil, "data: a\n\ndata: b", 2}, {broken, "data: a\n\ndata: b", 1}} {
		var ended []error
		out, events, err := read([]string{"data: a\n\nda", "ta: b"}, tc.err, Handler{Hold: holdAll, End: func(err error) { ended = append(ended, err) }})
		want := tc.err
		if want == nil {
			want = io.EOF
		}
		if out != tc.out || len(events) != tc.events || len(ended) != 1 || ended[0] != want || (tc.err != nil && err != tc.err) {
			t.Errorf("body error %v: handed on %q, %d events, ended %v, read error %v", tc.err, out, len(events), ended, err)
		}
	}
}

// BenchmarkReader measures what a Reader adds to reading a stream of tool
// results (1 KiB each), against reading it as it is.
func BenchmarkReader(b *testing.B) {
	event := "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"mcpmux-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + strings.Repeat("x", 1024) + "\"}]}}\n\n"
	stream := strings.Repeat(event, 100)
	event1 := func(*Event) bool { return false }
	for _, tc := range []struct {
		name string
		wrap func(io.ReadCloser) io.Reader
	}{
		{"plain", func(r io.ReadCloser) io.Reader { return struct{ io.Reader }{r} }},
		{"passed", func(r io.ReadCloser) io.Reader { return NewReader(r, Handler{Event: event1}) }},
		{"held", func(r io.ReadCloser) io.Reader { return NewReader(r, Handler{Event: event1, Hold: holdAll}) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.Copy(io.Discard, tc.wrap(io.NopCloser(strings.NewReader(stream)))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
