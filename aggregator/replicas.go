package aggregator

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Replicas: the state of a parked call names the replica it runs on
// (package replica). The HTTP front forwards a retry whose state names a
// peer to it before it gets here; what gets here with another replica's
// state could not be forwarded, and is refused saying why.

// verify returns the id of the call a retry's state names on this
// replica, or the JSON-RPC error of a state that names none here.
func (pk *parkedCalls) verify(state string) (string, error) {
	id, rep, err := pk.replicas.Verify(state)
	if err != nil {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if !pk.replicas.IsSelf(rep) {
		why := "it has no peers: set --peers and --advertise on every replica (docs/scaling.md)"
		if pk.replicas.Forwards() {
			why = rep + " is not among its peers (--peers) now: that replica is gone, or not listed"
		}
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"requestState names a call waiting for input on the mcpmux replica at %s, and this replica cannot forward the retry there: %s; call the tool again without requestState", rep, why)}
	}
	return id, nil
}
