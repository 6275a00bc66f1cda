package upstream

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// bounds are the waits and sizes a server's settings and the pool's
// options come to, defaults filled in. They are read where a connection
// is made or a call waits, and need nothing of the Server but its
// configuration, so they are kept apart from it.
type bounds struct {
	cfg  *config.Server
	opts *Options
}

// resumeTimeout is how long a resumed stream may stay silent (see
// resume.go).
func (b bounds) resumeTimeout() time.Duration {
	if b.cfg.ResumeTimeout > 0 {
		return b.cfg.ResumeTimeout
	}
	return config.DefaultResumeTimeout
}

// maxResultBytes is the bound of a message read from a url: server.
func (b bounds) maxResultBytes() int64 {
	if f := b.opts.MaxResultBytes; f != nil {
		if n := f(); n > 0 {
			return int64(n)
		}
	}
	return int64(config.DefaultMaxResultBytes)
}

// maxEventSize is the go-sdk's bound of an event on the connection: its
// own (16 MiB) must not end the connection before mcpmux refuses an
// answer over max_result_bytes.
func (b bounds) maxEventSize() int {
	return max(mcp.DefaultMaxEventSize, int(b.maxResultBytes())+2*eventSlack)
}

// connectTimeout bounds a connection attempt: the server's own, else the
// pool's, else mcpmux's default.
func (b bounds) connectTimeout() time.Duration {
	switch {
	case b.cfg.ConnectTimeout > 0:
		return b.cfg.ConnectTimeout
	case b.opts.ConnectTimeout > 0:
		return b.opts.ConnectTimeout
	}
	return config.DefaultConnectTimeout
}

// liveness is how often a server with calls waiting is pinged (see
// liveness.go).
func (b bounds) liveness() time.Duration {
	if b.opts.Liveness > 0 {
		return b.opts.Liveness
	}
	return DefaultLiveness
}
