package aggregator

import (
	"encoding/json"
	"net/http"
)

// Draining is what an HTTP replica does between the signal to stop and its
// exit, so that a load balancer moves its clients elsewhere without a call
// failing on the way:
//
//   - /healthz answers 503 with status "draining", so that health checks
//     (HAProxy's, Kubernetes' readiness probe) take the replica out;
//   - a request that would open a session gets 503 with a JSON-RPC error,
//     which a load balancer may retry on another replica (the shipped
//     haproxy.cfg does);
//   - everything else is served as before: the listener stays open, the
//     running calls finish and open sessions go on calling until the
//     process stops (the serve command decides when: see app/shutdown.go).

// StatusDraining is the /healthz status of a draining replica.
const StatusDraining = "draining"

// Drain starts draining; it cannot be undone.
func (a *Aggregator) Drain() { a.draining.Store(true) }

// opensSession reports whether r would open a client session: with
// sessions, any POST without a session id (the SDK makes a session of it);
// stateless, an initialize, where a client starts.
func (a *Aggregator) opensSession(r *http.Request, body []byte) bool {
	if r.Method != http.MethodPost {
		return false
	}
	if !a.stateless {
		return r.Header.Get(sessionIDHeader) == ""
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "initialize"
}

// refuseDraining answers a request that would open a session on a
// draining replica: 503, with a JSON-RPC error saying what to do.
func (a *Aggregator) refuseDraining(w http.ResponseWriter, body []byte) {
	writeRPCError(w, http.StatusServiceUnavailable, peekID(body), codeServerBusy,
		"this mcpmux is shutting down and takes no new sessions: connect again (behind a load balancer, to another replica)")
}
