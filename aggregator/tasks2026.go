package aggregator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// The tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks)
// towards clients of 2026-07-28 that declare it in a request's
// capabilities (see docs/protocol.md#tasks). Servers' side: see
// upstream/tasks2026.go.
//
//   - server/discover declares the extension when a server of the profile
//     does (a 2026 server with it);
//   - such a client's tools/call that its server answers with a task
//     handle gets the handle, its taskId replaced by one of mcpmux's: the
//     profile, the server, the tool and the server's task id, signed with
//     the key of the parked calls' states (mrtr.go). A client can neither
//     forge one nor alter one to reach another server or tool; no state
//     is kept for it, so a handle is good as long as the server keeps
//     the task;
//   - a handle is its client's: it names, hashed, the client the request
//     that made the task named (taskOwner), and tasks/get, tasks/update
//     and tasks/cancel of any other client find no such task. A client
//     that named none (no task, no token, over HTTP) owns nothing: its
//     handle, unforgeable and seen by nobody else, is the capability;
//   - its tasks/get, tasks/update and tasks/cancel go to the server the
//     handle names, with the server's task id; a completed task's result
//     gets what a call's result gets after the server answered
//     (max_result_bytes, the rules that act on results), as tasks/result
//     of 2025 tasks does (taskResult);
//   - a client without the extension never sees a task: mcpmux finishes
//     it (upstream), asking the client what the task asks as the parked
//     calls of mrtr.go ask it.

// requestTasksExtension reports whether a sessionless request declared
// the tasks extension in its capabilities.
func requestTasksExtension(ctx context.Context) bool {
	caps, _ := ctx.Value(requestCapsKey{}).(*mcp.ClientCapabilities)
	return caps != nil && caps.Extensions[upstream.TasksExtension] != nil
}

// taskHandle is what mcpmux's taskId of a 2026 server's task says.
type taskHandle struct {
	Profile string `json:"p"`
	Server  string `json:"s"`
	Tool    string `json:"t"`           // the exposed name
	TaskID  string `json:"i"`           // the server's
	Owner   string `json:"o,omitempty"` // taskOwner of the request that made it; "" for none
}

// taskOwner returns who owns a task a request of ctx makes, as a task
// handle names it; "" for a request that names no client.
//
// Over HTTP a 2026 client has no session: it is who its request says it
// is, as for its per-client connections (clientkey.go): its task
// (_meta.task_id, X-Task-Id) within its principal, else its principal
// (the bearer token it was authenticated with). A request that names
// neither (loopback without tokens, no task) owns nothing. Over stdio the
// connection is the client. The key is hashed: a handle's payload is
// readable, and need not show a client's task or principal.
func taskOwner(ctx context.Context, ss *mcp.ServerSession, ownClient bool) string {
	var key string
	switch id, ok := namedClient(ctx); {
	case ok:
		key = string(id)
	case ownClient || ss == nil:
		return ""
	default:
		// A session's key names it within this process only.
		key = "session:" + processNonce + "/" + sessionKey(ss)
	}
	sum := sha256.Sum256([]byte(key))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// processNonce tells this process's sessions from another's that shares
// the signing key (replicas, MCPMUX_STATE_KEY).
var processNonce = rand.Text()

// handleSigner signs task handles and checks them: a *replica.Set, whose
// key any replica that shares it verifies with.
type handleSigner interface {
	Sign(id string) string
	Verify(state string) (id, replica string, err error)
}

// mintTaskHandle returns the taskId a client gets for h.
func (m *mcpTasks) mintTaskHandle(h taskHandle) (string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	return m.signer.Sign(base64.RawURLEncoding.EncodeToString(b)), nil
}

// readTaskHandle returns what a client's taskId says, or false if mcpmux
// did not mint it.
func (m *mcpTasks) readTaskHandle(id string) (taskHandle, bool) {
	var h taskHandle
	// Any replica that shares the key serves a task handle: the task
	// lives on its server, not on the replica that minted the handle.
	payload, _, err := m.signer.Verify(id)
	if err != nil {
		return h, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &h) != nil || h.TaskID == "" {
		return h, false
	}
	return h, true
}

// extensionTaskCreated gives a client of the extension the task handle
// its server answered c with, under mcpmux's taskId, and reports whether
// res was one: then nothing after the run step applies to it (they apply
// to the task's result).
func (m *mcpTasks) extensionTaskCreated(ctx context.Context, p *profile, c *toolCall, e *Entry, res *result) bool {
	if res.raw == nil || !upstream.IsTaskHandle(res.raw) {
		return false
	}
	var t struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(res.raw, &t)
	owner := taskOwner(ctx, c.session, requestIsItsOwnClient(ctx))
	id, err := m.mintTaskHandle(taskHandle{Profile: p.name, Server: e.Server, Tool: e.Name, TaskID: t.TaskID, Owner: owner})
	if err == nil {
		var out json.RawMessage
		if out, err = withTaskID(res.raw, id); err == nil {
			res.raw = out
		}
	}
	if err != nil {
		// Unreachable for a result that decoded as a handle; never pass
		// on a server's id that mcpmux could not route back.
		res.raw = nil
		res.res = toolError("Tool '%s' on server '%s' answered with a task mcpmux could not hand on: %v", e.Tool, e.Server, err)
	}
	return true
}

func withTaskID(obj json.RawMessage, id string) (json.RawMessage, error) {
	b, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	return withField(obj, "taskId", b)
}

// errMissingTasksExtension answers a request about tasks of a client that
// did not declare the extension, as the extension says.
var errMissingTasksExtension = &jsonrpc.Error{Code: -32021, Message: "Missing required client capability: declare the extension io.modelcontextprotocol/tasks in the request's clientCapabilities",
	Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)}

// taskMethod2026 answers a sessionless client's tasks/get, tasks/update
// or tasks/cancel.
func (m *mcpTasks) taskMethod2026(ctx context.Context, p *profile, method string, req *mcp.ServerRequest[*taskParams]) (mcp.Result, error) {
	if method != "tasks/get" && method != "tasks/update" && method != "tasks/cancel" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s is not a method of MCP 2026-07-28's tasks extension (tasks/get, tasks/update, tasks/cancel)", method)}
	}
	if !requestTasksExtension(ctx) {
		return nil, errMissingTasksExtension
	}
	params := req.Params
	if params == nil {
		params = &taskParams{}
	}
	h, ok := m.readTaskHandle(params.TaskID)
	// Another client's task is not found either: whether it exists is
	// none of this client's business.
	if !ok || h.Profile != p.name || (h.Owner != "" && h.Owner != taskOwner(ctx, req.Session, requestIsItsOwnClient(ctx))) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: Task not found (%q is not a task mcpmux handed out here)", params.TaskID)}
	}
	e := p.view.Load().cat.byName[h.Tool]
	if e == nil || e.Server != h.Server {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: the task's tool %q of server %q is no longer listed", h.Tool, h.Server)}
	}
	srv := m.server(e.Server)
	if srv == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the task's server %q is no longer configured", method, e.Server)}
	}
	cctx, cancel := context.WithTimeout(ctx, srv.Config().CallTimeout(e.Tool, m.settings().Timeout))
	defer cancel()
	call := &toolCall{name: e.Name, session: req.Session, extra: req.Extra, runID: m.runIDOf(nil, req.Extra)}
	raw, err := srv.TaskRequest(cctx, upstream.TaskParams{Request: m.request(ctx, srv, req.Session, call.runID), Method: method, TaskID: h.TaskID, Extension: true, InputResponses: params.InputResponses})
	if err != nil {
		var rpc *upstream.RPCError
		if errors.As(err, &rpc) {
			return nil, &jsonrpc.Error{Code: rpc.Code, Message: m.mask.Mask(rpc.Message), Data: rpc.Data}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: m.mask.Mask(fmt.Sprintf("%s (tool '%s' on server '%s'): %v", method, e.Tool, e.Server, err))}
	}
	if method != "tasks/get" {
		return &rawResult{raw: json.RawMessage(`{}`), sessionless: true}, nil // an acknowledgement
	}
	if raw, err = withTaskID(raw, params.TaskID); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tasks/get: the server's answer is not a task: %v", err)}
	}
	if inner := fieldOf(raw, "result"); len(inner) > 0 && string(inner) != "null" {
		done := m.taskResult(ctx, &clientTask{profile: p, call: call, entry: e}, inner)
		if raw, err = withField(raw, "result", done); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tasks/get: %v", err)}
		}
	}
	return &rawResult{raw: raw, sessionless: true}, nil
}

// offersExtensionTasks reports whether a server of v speaks MCP
// 2026-07-28 with the tasks extension, which server/discover then
// declares.
func offersExtensionTasks(v *view) bool {
	for _, e := range v.toolList {
		if e.extensionTasks {
			return true
		}
	}
	return false
}

// withTasksExtension returns caps with the tasks extension declared.
func withTasksExtension(caps *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	out := &mcp.ServerCapabilities{}
	if caps != nil {
		*out = *caps
	}
	ext := make(map[string]any, len(out.Extensions)+1)
	for k, v := range out.Extensions {
		ext[k] = v
	}
	ext[upstream.TasksExtension] = map[string]any{}
	out.Extensions = ext
	return out
}
