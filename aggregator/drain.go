package aggregator

// Draining is what an HTTP replica does between the signal to stop and its
// exit, so that a load balancer moves its clients elsewhere without a call
// failing on the way:
//
//   - /healthz answers 503 with status "draining", so that health checks
//     (HAProxy's, Kubernetes' readiness probe) take the replica out;
//   - a request that would open a session gets 503 with a JSON-RPC error,
//     which a load balancer may retry on another replica (the shipped
//     haproxy.cfg does; see package front);
//   - everything else is served as before: the listener stays open, the
//     running calls finish and open sessions go on calling until the
//     process stops (the serve command decides when: see app/shutdown.go).

// StatusDraining is the /healthz status of a draining replica.
const StatusDraining = "draining"

// Drain starts draining; it cannot be undone.
func (a *Aggregator) Drain() { a.draining.Store(true) }

// Draining reports whether Drain was called.
func (a *Aggregator) Draining() bool { return a.draining.Load() }
