// Package sse reads a server-sent event stream on its way to another
// reader, and tells its owner of each event before that reader can act
// on it.
//
// mcpmux reads the HTTP responses of its remote servers beside the
// go-sdk, which parses them itself: it counts the notifications an answer
// must wait for, takes the answers of its raw requests and the requests
// it answers itself off the stream, and follows a call's stream to resume
// it (package upstream). A Reader is the one parser of a response for all
// of that: it sits between the body and the go-sdk, reads each line once,
// and calls Handler.Event with each event before handing on the event's
// end, so that whatever Event records is recorded before the go-sdk
// dispatches the event.
//
// Events are read as the go-sdk reads them, so that both see the same
// ones: a line ends with "\n" (white space before it is dropped), a blank
// line ends an event, a data field's values are trimmed of white space
// and joined with "\n", and at the end of the body an unfinished event
// counts as ended. Lines without a colon (which end the go-sdk's stream)
// and fields other than data, id and retry are passed on and ignored.
//
// Memory is bounded whatever the server sends: a line is read Peek bytes
// at a time, an event handed on as it comes keeps no more than Peek bytes
// of its data for Event, and a held one no more than Handler.Max bytes.
package sse

import (
	"bufio"
	"bytes"
	"io"
	"unicode"
)

// Peek is the most of a line read at once, the start of an event's data
// Handler.Hold decides on, and the most of the data of an event not held
// that Event is shown.
const Peek = 8 << 10

// Handler is what a Reader tells of the events it reads.
type Handler struct {
	// Event is told of each event that has a data, id or retry field,
	// once it has ended and before its end is handed on. It returns
	// whether to hand on a held event without its data lines: its other
	// lines go on (its id, so that a stream resumed after it does not
	// bring it again). The Event and its slices are valid during the call
	// only.
	Event func(*Event) (drop bool)

	// Hold decides, from the start (up to Peek bytes) of the value of an
	// event's first data line, whether the event is held: handed on only
	// once it has ended, so that Event sees all of its data and may drop
	// it. Nil holds none. Until its first data line every event is held
	// (so that Hold decides before any of it is handed on).
	Hold func(data []byte) bool

	// Max bounds a held event, in bytes as received. One that grows past
	// it is handed on as it comes from then on (its data beyond Peek is
	// not kept) — unless TooLarge is set: then the reader hands on a data
	// line of the message TooLarge returns in its place, closes the body,
	// and ends (io.EOF). Zero means no bound.
	Max      int
	TooLarge func() []byte

	// End, if set, is told the error that ended the body (io.EOF at its
	// end) when reading it returns one; not when the reader stops
	// reading it (TooLarge).
	End func(error)
}

// Event is what an event says.
type Event struct {
	ID    []byte // its last id field, trimmed (empty for none)
	Retry []byte // its last retry field, trimmed (empty for none)
	// Data is its data lines' values, trimmed, joined with "\n"; empty
	// if it has none, or if they were too long to keep (Long).
	Data []byte
	Long bool // its data was longer than Peek, and it was not held
	Held bool // it was held: Event may drop it
}

// Reader reads an event stream from a body and hands it on, telling its
// Handler of each event. It is not safe for concurrent reads; Close may
// be called while a Read waits.
type Reader struct {
	h    Handler
	body io.ReadCloser
	br   *bufio.Reader

	out []byte // to be read from off on
	off int
	err error // returned once out has been read

	midLine bool // the last fragment read did not end its line
	inData  bool // the current line is a data line

	// The current event.
	held    []byte // its bytes so far, while held
	holding bool
	decided bool   // its first data line has been seen
	data    []byte // its data so far (see Event.Data)
	hasData bool
	long    bool
	valAt   int // where the current data line's value starts in data
	id      []byte
	retry   []byte
	ev      Event // what Event is told
}

// NewReader returns a Reader of body.
func NewReader(body io.ReadCloser, h Handler) *Reader {
	return &Reader{h: h, body: body, br: bufio.NewReaderSize(body, Peek), holding: true}
}

func (r *Reader) Close() error { return r.body.Close() }

func (r *Reader) Read(p []byte) (int, error) {
	for r.off == len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		r.out, r.off = r.out[:0], 0 // its array serves again, unless big
		if cap(r.out) > 4*Peek {
			r.out = nil
		}
		r.step()
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

// step reads the next line, or the next Peek bytes of a long one.
func (r *Reader) step() {
	frag, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		err = nil
	}
	start, whole := !r.midLine, bytes.HasSuffix(frag, []byte("\n"))
	r.midLine = !whole && err == nil
	switch {
	case start && whole && len(bytes.TrimRight(frag, "\r\n")) == 0:
		r.endEvent(frag)
	case len(frag) > 0:
		r.line(frag, start, !r.midLine)
	}
	if err != nil && r.err == nil {
		if err == io.EOF {
			r.endEvent(nil) // as the go-sdk reads it
		} else {
			// The go-sdk drops an unfinished event on an error: it goes
			// on as it is.
			r.out = append(r.out, r.held...)
			r.held = nil
		}
		r.err = err
		if r.h.End != nil {
			r.h.End(err)
		}
	}
}

// line takes a fragment of a line that is not blank: its start if start,
// its end if end.
func (r *Reader) line(frag []byte, start, end bool) {
	v := frag
	if start {
		v, r.inData = bytes.CutPrefix(frag, []byte("data:"))
		switch {
		case r.inData:
			v = bytes.TrimLeftFunc(v, unicode.IsSpace)
			if r.hasData {
				r.keep([]byte("\n"))
			}
			r.hasData, r.valAt = true, len(r.data)
			if !r.decided {
				r.decided = true
				if r.h.Hold == nil || !r.h.Hold(v) {
					r.pass()
				}
			}
		case !end: // an id or retry longer than Peek is not one
		case bytes.HasPrefix(frag, []byte("id:")):
			r.id = append(r.id[:0], bytes.TrimSpace(frag[len("id:"):])...)
		case bytes.HasPrefix(frag, []byte("retry:")):
			r.retry = append(r.retry[:0], bytes.TrimSpace(frag[len("retry:"):])...)
		}
	}
	if r.emit(frag); r.err == nil && r.inData {
		r.keep(v)
		if end && !r.long {
			r.data = r.data[:r.valAt+len(bytes.TrimRightFunc(r.data[r.valAt:], unicode.IsSpace))]
		}
	}
}

// keep adds to the current event's data what is to be kept of it.
func (r *Reader) keep(v []byte) {
	switch {
	case r.long:
	case !r.holding && len(r.data)+len(v) > Peek:
		r.long, r.data = true, r.data[:0]
	default:
		r.data = append(r.data, v...)
	}
}

// emit hands on b, a part of the current event, or holds it.
func (r *Reader) emit(b []byte) {
	if !r.holding {
		r.out = append(r.out, b...)
		return
	}
	r.held = append(r.held, b...)
	if r.h.Max <= 0 || len(r.held) <= r.h.Max {
		return
	}
	if r.h.TooLarge == nil {
		r.pass()
		return
	}
	r.body.Close()
	r.out = append(r.out, "data: "...)
	r.out = append(r.out, r.h.TooLarge()...)
	r.out = append(r.out, "\n\n"...)
	r.held, r.data = nil, nil
	r.err = io.EOF
}

// pass hands on what is held of the current event, and the rest of it as
// it comes.
func (r *Reader) pass() {
	r.holding = false
	r.out = append(r.out, r.held...)
	r.held = r.held[:0]
	if len(r.data) > Peek {
		r.long, r.data = true, r.data[:0]
	}
}

// endEvent ends the current event with its blank line (nil: at the end
// of the body).
func (r *Reader) endEvent(blank []byte) {
	if r.hasData || len(r.id) > 0 || len(r.retry) > 0 {
		r.ev = Event{ID: r.id, Retry: r.retry, Long: r.long, Held: r.holding}
		if r.hasData && !r.long {
			r.ev.Data = r.data
		}
		if r.h.Event != nil && r.h.Event(&r.ev) && r.holding {
			r.held = withoutData(r.held)
		}
		r.ev = Event{} // keeps no array
	}
	if len(r.out) == 0 {
		r.out, r.held = r.held, r.out // no copy of a big event
	} else {
		r.out = append(r.out, r.held...)
	}
	r.out = append(r.out, blank...)
	r.held, r.data, r.id, r.retry = r.held[:0], r.data[:0], r.id[:0], r.retry[:0]
	if cap(r.held) > 4*Peek {
		r.held = nil // a big event's array is not kept for the small ones
	}
	if cap(r.data) > 4*Peek {
		r.data = nil
	}
	r.holding, r.decided, r.hasData, r.long = true, false, false, false
}

// withoutData returns the lines of an event but its data lines.
func withoutData(event []byte) []byte {
	var kept []byte
	for line := range bytes.Lines(event) {
		if !bytes.HasPrefix(line, []byte("data:")) {
			kept = append(kept, line...)
		}
	}
	return kept
}
