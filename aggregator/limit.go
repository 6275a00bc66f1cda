package aggregator

import (
	"fmt"
	"net/http"

	"github.com/mcpmux/mcpmux/config"
)

// limitBody caps the request body at limit bytes. A request announcing a
// bigger body gets 413 at once; one that sends more than it announced (or
// is chunked) has its read fail with *http.MaxBytesError, which the SDK's
// handler answers with 413 too.
//
// The SDK applies its own MaxRequestBodyBytes (4 MiB by default) only as
// configured when the handler is made; mcpmux disables that and applies
// this one, which follows max_request_bytes across reloads.
func limitBody(w http.ResponseWriter, r *http.Request, limit config.Size) bool {
	if limit <= 0 {
		limit = config.DefaultMaxRequestBytes
	}
	if r.ContentLength > int64(limit) {
		http.Error(w, fmt.Sprintf("413 request body of %d bytes exceeds max_request_bytes (%v)", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
		return false
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, int64(limit))
	}
	return true
}
