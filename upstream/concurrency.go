package upstream

import (
	"context"
	"fmt"

	"github.com/mcpmux/mcpmux/tracing"
)

// limiter bounds the calls running at once (max_concurrency): a call
// beyond the limit waits for a slot, within its own deadline, instead of
// piling onto a child that cannot take more. A nil limiter is unlimited.
type limiter chan struct{}

func newLimiter(n int) limiter {
	if n <= 0 {
		return nil
	}
	return make(limiter, n)
}

// take waits for a free slot; the returned func gives it back.
func (l limiter) take(ctx context.Context) (func(), error) {
	if l == nil {
		return func() {}, nil
	}
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	default:
	}
	// Waiting: a span of its own when the call is traced.
	_, span := tracing.StartInternal(ctx, "mcpmux.wait_slot")
	defer span.End("", "")
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of the server's %d call slots (max_concurrency): %w", cap(l), ctx.Err())
	}
}
