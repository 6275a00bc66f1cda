// Package stdioconn is an mcp.Connection for newline-delimited JSON-RPC
// (MCP's stdio transport) that decodes each message once and writes each
// message as it is.
//
// The go-sdk's own (mcp.IOTransport, mcp.CommandTransport, mcp.StdioTransport)
// decodes every line three times — encoding/json's Decoder to find the
// value, an attempt at a batch, then the message — each of the latter two
// through a segmentio Decoder that allocates 32 KiB, and compacts every
// message it writes once more. This Connection reads a line, checks its
// nesting depth, and parses it once into the exported jsonrpc types; a
// message is written with its params or result as they are. The SDK still
// does all of the protocol on top of it, in both eras (2025-11-25 with
// initialize, 2026-07-28 with per-request _meta).
//
// It also does what the go-sdk's ioConn does not:
//
//   - a line over the bound (Options.MaxMessageBytes) is not buffered: its
//     top-level id is found as it streams past, and an answer gets an
//     error answer in its place, a request an error reply to its sender,
//     so that one call fails and the connection goes on;
//   - batches are refused once the protocol version forbids them
//     (2025-06-18 and later), on both sides: the version is learnt from
//     the initialize exchange, or the _meta of a 2026-07-28 request, that
//     pass through the connection; each request of a refused batch gets an
//     error reply;
//   - a line that is not JSON-RPC ends nothing: a server-side connection
//     answers it with a parse error (JSON-RPC 2.0 §5.1), a client-side one
//     drops it with a log line (a child server's stray print).
package stdioconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes bounds a message when Options.MaxMessageBytes is
// 0: the go-sdk's bound of a line (mcp.DefaultMaxLineLength).
const DefaultMaxMessageBytes = mcp.DefaultMaxLineLength

// Role is the side of MCP a connection serves.
type Role int

const (
	// Client: the connection of a client session (to a server that mcpmux
	// started). A line that is not JSON-RPC is dropped.
	Client Role = iota
	// Server: the connection of a server session (mcpmux serving a client
	// on its stdin and stdout). A line that is not JSON-RPC is answered
	// with a parse error.
	Server
)

// Options shape a connection.
type Options struct {
	Role Role
	// MaxMessageBytes bounds one line (0: DefaultMaxMessageBytes).
	MaxMessageBytes int
	// Logger hears of lines dropped or refused (nil: slog.Default()).
	Logger *slog.Logger
	// Rewrite, if set, is given each line (without its newline) before it
	// is parsed, and returns the line to parse; it may return line itself.
	Rewrite func(line []byte) []byte
}

// IOTransport connects over a reader and a writer (mcpmux's own stdin and
// stdout), as mcp.IOTransport does. Close closes both.
type IOTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	Options
}

// Connect implements mcp.Transport.
func (t *IOTransport) Connect(context.Context) (mcp.Connection, error) {
	return newConn(t.Reader, t.Writer, func() error {
		return errors.Join(t.Reader.Close(), t.Writer.Close())
	}, t.Options), nil
}

// Conn is the connection. Read and Close may be called concurrently, and
// Write by many goroutines at once.
type Conn struct {
	opts    Options
	max     int
	log     *slog.Logger
	in      *bufio.Reader
	closeFn func() error

	incoming  chan incoming // from the read loop
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error

	writeMu sync.Mutex
	out     io.Writer
	buf     []byte // reused for writes under writeMu

	proto protocol
	batch batches
}

type incoming struct {
	msg jsonrpc.Message
	err error
}

// readBufferSize is the buffer of the reader: a line that fits is copied
// once, into the message it becomes.
const readBufferSize = 64 << 10

func newConn(r io.Reader, w io.Writer, closeFn func() error, opts Options) *Conn {
	c := &Conn{
		opts:     opts,
		max:      opts.MaxMessageBytes,
		log:      opts.Logger,
		in:       bufio.NewReaderSize(r, readBufferSize),
		closeFn:  closeFn,
		incoming: make(chan incoming),
		closed:   make(chan struct{}),
		out:      w,
	}
	if c.max <= 0 {
		c.max = DefaultMaxMessageBytes
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	// Reads happen on a goroutine of their own, so that Close unblocks a
	// Read at once (as the go-sdk's ioConn does; a reader that does not
	// return after its Close leaks that goroutine).
	go c.readLoop()
	return c
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *Conn) SessionID() string { return "" }

// Read implements mcp.Connection.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in := <-c.incoming:
		return in.msg, in.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection: msg as one line, its params or result
// as they are.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	c.proto.sawMessage(msg)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	var err error
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if all, inBatch := c.batch.answered(resp); inBatch {
			if all == nil {
				return nil // the batch waits for more answers
			}
			c.buf, err = appendBatch(c.buf[:0], all)
			return c.flush(err)
		}
	}
	c.buf, err = appendMessage(c.buf[:0], msg)
	return c.flush(err)
}

// flush writes c.buf as one line. c.writeMu is held.
func (c *Conn) flush(err error) error {
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	c.buf = append(c.buf, '\n')
	_, err = c.out.Write(c.buf)
	if cap(c.buf) > maxKeptBuffer {
		c.buf = nil // a large message's buffer is not kept for good
	}
	return err
}

// maxKeptBuffer is the largest write buffer kept between writes.
const maxKeptBuffer = 64 << 10

// reply writes a message of the connection's own (an error answer) to
// the peer, and logs why.
func (c *Conn) reply(line []byte, why string) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.buf = append(c.buf[:0], line...)
	if err := c.flush(nil); err != nil {
		c.log.Debug("stdio: could not write an error reply", "reason", why, "error", err)
	}
}

// Close implements mcp.Connection; it may be called many times, at once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.closeFn()
		close(c.closed)
	})
	return c.closeErr
}

// deliver hands msg (or err) to Read; false once the connection is closed.
func (c *Conn) deliver(msg jsonrpc.Message, err error) bool {
	select {
	case c.incoming <- incoming{msg, err}:
		return true
	case <-c.closed:
		return false
	}
}

func (c *Conn) readLoop() {
	for {
		line, over, err := c.readLine()
		switch {
		case over != nil:
			c.oversized(over)
		case len(line) > 0:
			if !c.handleLine(line) {
				return
			}
		}
		if err != nil {
			c.deliver(nil, err) // io.EOF, or why the stream broke
			return
		}
	}
}

// readLine reads the next line, without its end of line. A line over the
// bound is not kept: over describes it instead. err is io.EOF at the end
// (a last line without a newline is returned with it).
func (c *Conn) readLine() (line []byte, over *oversize, err error) {
	for {
		frag, err := c.in.ReadSlice('\n')
		n := len(line) + len(frag)
		if err == nil {
			n = len(line) + len(trimEOL(frag))
		}
		if n > c.max {
			o := c.skipLine(line, frag, err)
			return nil, o, o.err
		}
		switch {
		case err == bufio.ErrBufferFull:
			line = append(line, frag...)
			continue
		case line == nil:
			// The usual case: the whole line was in the buffer. Copied
			// once, exactly: the message parsed from it keeps it.
			line = append(make([]byte, 0, len(frag)), trimEOL(frag)...)
		default:
			line = trimEOL(append(line, frag...))
		}
		return trimSpace(line), nil, err
	}
}

// skipLine reads past the rest of a line over the bound, watching for its
// top-level "id" and "method".
func (c *Conn) skipLine(head, frag []byte, err error) *oversize {
	o := &oversize{}
	o.feed(head)
	o.feed(frag)
	o.size = len(head) + len(frag)
	for err == bufio.ErrBufferFull {
		frag, err = c.in.ReadSlice('\n')
		o.feed(frag)
		o.size += len(frag)
	}
	if err != nil {
		o.err = err
	}
	return o
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// handleLine parses a line and delivers what it holds; false once the
// connection is closed.
func (c *Conn) handleLine(line []byte) bool {
	if c.opts.Rewrite != nil {
		line = c.opts.Rewrite(line)
	}
	if line[0] == '[' {
		return c.handleBatch(line)
	}
	msg, err := decodeMessage(line)
	if err != nil {
		c.badLine(line, err)
		return true
	}
	c.proto.sawMessage(msg)
	return c.deliver(msg, nil)
}

// badLine deals with a line that is not a JSON-RPC message.
func (c *Conn) badLine(line []byte, err error) {
	if c.opts.Role == Server {
		c.reply(errorLine(nil, jsonrpc.CodeParseError, "Parse error: "+err.Error()), "not JSON-RPC")
		return
	}
	c.log.Warn("stdio: dropped a line that is not a JSON-RPC message", "error", err, "line", excerpt(line))
}

// handleBatch delivers the messages of a batch, or refuses it.
func (c *Conn) handleBatch(line []byte) bool {
	msgs, err := decodeBatch(line)
	if err != nil {
		c.badLine(line, err)
		return true
	}
	if v := c.proto.version(); v >= firstVersionWithoutBatches {
		c.refuseBatch(msgs, fmt.Sprintf("JSON-RPC batching is not supported in %s and later (protocol version: %s)", firstVersionWithoutBatches, v))
		return true
	}
	if err := c.batch.add(msgs); err != nil {
		c.refuseBatch(msgs, err.Error())
		return true
	}
	for _, m := range msgs {
		c.proto.sawMessage(m)
		if !c.deliver(m, nil) {
			return false
		}
	}
	return true
}

// refuseBatch answers each request of a batch with an error, and drops
// the rest.
func (c *Conn) refuseBatch(msgs []jsonrpc.Message, why string) {
	answered := 0
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			c.reply(errorLine(&r.ID, jsonrpc.CodeInvalidRequest, why), "batch refused")
			answered++
		}
	}
	c.log.Warn("stdio: refused a batch", "reason", why, "messages", len(msgs), "requests answered", answered)
}

// excerpt is the start of a line, for a log.
func excerpt(line []byte) string {
	const n = 200
	if len(line) > n {
		return string(line[:n]) + "…"
	}
	return string(line)
}
