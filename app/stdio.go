package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"
)

// ServeStdio starts the servers and serves a profile on stdin and stdout
// until the client leaves or ctx ends, reloading on SIGHUP and, if watch
// is set, on every change of the config directory.
//
// When ctx ends first, the servers are closed before the session, giving
// running calls up to grace to finish, so that their answers still reach
// the client (see shutdown.go). When the client leaves first, ServeStdio
// returns with the servers running: the caller closes the instance.
func (in *Instance) ServeStdio(ctx context.Context, profile string, grace time.Duration, watch bool) error {
	if err := in.follow(ctx, watch); err != nil {
		return fmt.Errorf("watching the config directory: %w", err)
	}
	// What the servers ask as they start (their roots) is for the client
	// on stdio, which initializes meanwhile.
	in.agg.ExpectStdioClient()
	go in.Start(ctx)
	in.log.Info("serving MCP on stdio", "config", in.dir, "profile", profile)
	// The session outlives ctx until the running calls are answered.
	session, endSession := context.WithCancel(context.Background())
	defer endSession()
	go func() {
		select {
		case <-ctx.Done():
			in.log.Info("shutting down")
			in.Close(grace)
			endSession()
		case <-session.Done():
		}
	}()
	err := in.agg.RunStdio(session, profile)
	endSession()
	switch {
	case err == nil, ctx.Err() != nil, errors.Is(err, io.EOF):
	case errors.Is(err, syscall.EPIPE):
		// The client closed its end of our stdout before its stdin (or
		// exited): it left, which is a normal end, not a failure.
		in.log.Info("the stdio client closed its end", "error", err)
	default:
		return fmt.Errorf("the stdio session ended with an error: %w", err)
	}
	return nil
}
