package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// UnavailableError is returned for a call to a server that is not running.
type UnavailableError struct {
	Server string
	Err    error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("server %q is not available: %v", e.Server, e.Err)
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// LostError is returned for a call whose connection ended before it was
// answered: the server exited, crashed or lost the session.
type LostError struct {
	Server string
	Err    error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("server %q stopped answering during the call: %v", e.Server, e.Err)
}
func (e *LostError) Unwrap() error { return e.Err }

// RPCError is a JSON-RPC error answer of a server, for instance an unknown
// tool or invalid parameters.
type RPCError struct {
	Server  string
	Code    int64
	Message string
	Data    json.RawMessage // the error's data, if any
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("server %q answered with error %d: %s", e.Server, e.Code, e.Message)
}

// StoppedError is returned for a call cut short because the server was
// stopped (mcpmux shutting down, or the server removed by a reload) and the
// call ran past the grace period it was given.
type StoppedError struct {
	Server string
	Reason error
	Grace  time.Duration
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%v, and the call to server %q did not finish within the grace period of %v", e.Reason, e.Server, e.Grace)
}
func (e *StoppedError) Unwrap() error { return e.Reason }

// LimitError is returned for a call of a client that has no connection to a
// session: per-client server whose max_clients connections are all taken
// by other clients.
type LimitError struct {
	Server string
	Max    int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("server %q is at its limit of %d client connections (max_clients)", e.Server, e.Max)
}

var (
	// ErrStopped is why a stopped server refuses calls.
	ErrStopped = errors.New("the server was removed or mcpmux is shutting down")
	// ErrShuttingDown is why calls are cut short by Pool.Close.
	ErrShuttingDown = errors.New("mcpmux is shutting down")
	errRetired      = errors.New("the server was removed or changed by a config reload")
)
