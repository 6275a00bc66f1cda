// Command conformanceclient is the client that the MCP conformance suite
// (@modelcontextprotocol/conformance, `client` mode) starts for each of its
// client scenarios:
//
//	conformance client --command conformanceclient --scenario NAME
//
// The suite appends the URL of the scenario's server as the argument,
// names the scenario in MCP_CONFORMANCE_SCENARIO and gives its data (client
// credentials, keys) as JSON in MCP_CONFORMANCE_CONTEXT.
//
// It is not a client of its own. It writes the scenario's server as a url:
// tool file (with the auth: section a user would write for it), loads that
// with package config and runs it with package upstream: the code that
// runs every url: server of a serving mcpmux, its OAuth handling included.
// Where a person would approve the access in a browser, it follows the
// authorization URL itself, as `mcpmux login` expects a browser to. Then
// it makes the call the scenario waits for.
package main

//lint:file-ignore SA1019 the conformance suite's client scenarios exercise sampling, roots and logging of MCP 2025-11-25, where they are not deprecated.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/oauthtest"
	"github.com/mcpmux/mcpmux/oauth"
	"github.com/mcpmux/mcpmux/upstream"
)

// clientMetadataURL is the client ID metadata document the suite's
// authorization servers accept (auth/basic-cimd).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// calls are the tool each scenario waits for a call of, with its
// arguments; auth scenarios not listed call test-tool.
var calls = map[string]*mcp.CallToolParams{
	"initialize":                          nil, // connecting (and listing) is the scenario
	"tools_call":                          {Name: "add_numbers", Arguments: map[string]any{"a": 5, "b": 3}},
	"elicitation-sep1034-client-defaults": {Name: "test_client_elicitation_defaults", Arguments: map[string]any{}},
	"sse-retry":                           {Name: "test_reconnection", Arguments: map[string]any{}},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return errors.New("usage: conformanceclient SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
	}
	serverURL, scenario := os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var scenarioData map[string]any
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &scenarioData); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	call, known := calls[scenario]
	if strings.HasPrefix(scenario, "auth/") {
		call, known = &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}, true
	}
	act, acts := actions[scenario]
	if !known && !acts {
		return fmt.Errorf("unknown scenario %q", scenario)
	}

	cfg, err := toolFile(serverURL, scenario, scenarioData)
	if err != nil {
		return err
	}
	state, err := os.MkdirTemp("", "conformanceclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := upstream.NewPool(&upstream.Options{
		Logger:     log,
		ClientInfo: &mcp.Implementation{Name: "mcpmux-conformance", Version: "1.0.0"},
		Tokens:     oauth.NewStore(state, &oauth.StoreOptions{Logger: log}),
		Authorize:  func(ctx context.Context, _, authURL string) error { return oauthtest.Follow(ctx, authURL) }, // the suite's authorization servers approve at once
	})
	defer pool.Close(context.Background(), time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool.Apply(ctx, []*config.Server{cfg}, time.Minute)
	srv := pool.Get(cfg.Name)
	if st := srv.Status(); st.State != upstream.StateUp {
		return fmt.Errorf("the server did not come up: %s: %s", st.State, st.Error)
	}
	if acts {
		return act(ctx, srv, scenarioData)
	}
	if call == nil {
		return nil
	}
	return callTool(ctx, srv, call)
}

// request is on whose behalf the scenario's requests go: a client with
// every capability.
var request = upstream.Request{Client: "conformance", Caller: caller{}, Features: upstream.AllFeatures}

// callTool calls a tool of srv as a client of mcpmux would and prints the
// result.
func callTool(ctx context.Context, srv *upstream.Server, call *mcp.CallToolParams) error {
	res, err := srv.CallTool(ctx, upstream.CallParams{Request: request, Params: call})
	if err != nil {
		return fmt.Errorf("calling %s: %w", call.Name, err)
	}
	out, _ := json.Marshal(res)
	fmt.Printf("%s: %s\n", call.Name, out)
	return nil
}

// actions are what the 2026-07-28 client scenarios wait for, once the
// server is up (connected and listed, which is all that request-metadata
// and json-schema-ref-no-deref look at).
var actions = map[string]func(context.Context, *upstream.Server, map[string]any) error{
	"request-metadata":         func(context.Context, *upstream.Server, map[string]any) error { return nil },
	"json-schema-ref-no-deref": func(context.Context, *upstream.Server, map[string]any) error { return nil },
	// MRTR: two tools ask for input, one between them must carry none of
	// it, one answers without a resultType.
	"sep-2322-client-request-state": func(ctx context.Context, srv *upstream.Server, _ map[string]any) error {
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
			if err := callTool(ctx, srv, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil {
				return err
			}
		}
		return nil
	},
	// Every method, to show its Mcp-Method (and Mcp-Name) header.
	"http-standard-headers": func(ctx context.Context, srv *upstream.Server, _ map[string]any) error {
		f := srv.Features()
		for _, t := range f.Tools {
			if err := callTool(ctx, srv, &mcp.CallToolParams{Name: t.Name, Arguments: map[string]any{}}); err != nil {
				return err
			}
		}
		for _, r := range f.Resources {
			if _, err := srv.ReadResource(ctx, request, &mcp.ReadResourceParams{URI: r.URI}); err != nil {
				return fmt.Errorf("reading %s: %w", r.URI, err)
			}
		}
		for _, p := range f.Prompts {
			if _, err := srv.GetPrompt(ctx, request, &mcp.GetPromptParams{Name: p.Name}); err != nil {
				return fmt.Errorf("getting prompt %s: %w", p.Name, err)
			}
		}
		return nil
	},
	// The calls the scenario names, whose x-mcp-header arguments must
	// show as Mcp-Param-* headers.
	"http-custom-headers": func(ctx context.Context, srv *upstream.Server, data map[string]any) error {
		calls, _ := data["toolCalls"].([]any)
		if len(calls) == 0 {
			return errors.New("http-custom-headers: no toolCalls in the scenario's context")
		}
		for _, c := range calls {
			b, _ := json.Marshal(c)
			var call mcp.CallToolParams
			if err := json.Unmarshal(b, &call); err != nil {
				return fmt.Errorf("a tool call of the scenario's context: %w", err)
			}
			if err := callTool(ctx, srv, &call); err != nil {
				return err
			}
		}
		return nil
	},
	// Every tool mcpmux kept: those with an invalid x-mcp-header must not
	// be among them.
	"http-invalid-tool-headers": func(ctx context.Context, srv *upstream.Server, _ map[string]any) error {
		for _, t := range srv.Tools() {
			if err := callTool(ctx, srv, &mcp.CallToolParams{Name: t.Name, Arguments: map[string]any{"region": "us-west1"}}); err != nil {
				return err
			}
		}
		return nil
	},
	// The focal tool's inputSchema, as mcpmux lists it to its clients,
	// echoed back: every JSON Schema 2020-12 keyword must have survived.
	"json-schema-2020-12-preservation": func(ctx context.Context, srv *upstream.Server, _ map[string]any) error {
		raw, ok := srv.Features().ToolJSON["json_schema_2020_12_tool"]
		if !ok {
			return errors.New("json_schema_2020_12_tool is not listed")
		}
		var tool struct {
			InputSchema map[string]any `json:"inputSchema"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			return err
		}
		return callTool(ctx, srv, &mcp.CallToolParams{Name: "json_schema_echo", Arguments: map[string]any{"schema": tool.InputSchema}})
	},
}

// toolFile is the scenario's server as a user would configure it, read by
// package config; the secrets come from the environment, as a user's do.
func toolFile(serverURL, scenario string, data map[string]any) (*config.Server, error) {
	env := map[string]string{}
	str := func(key string) string { s, _ := data[key].(string); return s }
	yaml := fmt.Sprintf("name: conformance\nprefix: \"\"\nurl: %q\n", serverURL)
	switch {
	case scenario == "auth/client-credentials-basic":
		env["CLIENT_SECRET"] = str("client_secret")
		yaml += fmt.Sprintf("auth:\n  type: client_credentials\n  client_id: %q\n  client_secret: ${oc.env:CLIENT_SECRET}\n", str("client_id"))
	case scenario == "auth/client-credentials-jwt":
		env["PRIVATE_KEY"] = str("private_key_pem")
		yaml += fmt.Sprintf("auth:\n  type: client_credentials\n  client_id: %q\n  private_key: ${oc.env:PRIVATE_KEY}\n  signing_algorithm: %q\n", str("client_id"), str("signing_algorithm"))
	case strings.HasPrefix(scenario, "auth/"):
		yaml += fmt.Sprintf("auth:\n  type: oauth\n  client_metadata_url: %s\n", clientMetadataURL)
		if id := str("client_id"); id != "" {
			yaml += fmt.Sprintf("  client_id: %q\n", id)
		}
		if secret := str("client_secret"); secret != "" {
			env["CLIENT_SECRET"] = secret
			yaml += "  client_secret: ${oc.env:CLIENT_SECRET}\n"
		}
	}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	cfg, ferr := config.ParseServer("tool/conformance.yaml", []byte(yaml), lookup)
	if ferr != nil {
		return nil, ferr
	}
	return cfg, nil
}

// caller is the client on whose behalf the scenario's call runs. It
// accepts an elicitation without filling anything in, and answers with
// the requested schema's defaults, as a go-sdk client does (SEP-1034;
// elicitation-sep1034-client-defaults checks it): mcpmux passes a client's
// answer on as it is, so filling them in is the client's part.
type caller struct{}

func (caller) ID() string { return "conformance" }

func (caller) CreateMessage(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, errors.New("the conformance client does no sampling")
}

func (caller) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	content := map[string]any{}
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, err
		}
		var schema jsonschema.Schema
		if err := json.Unmarshal(b, &schema); err != nil {
			return nil, fmt.Errorf("reading the requested schema: %w", err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("resolving the requested schema: %w", err)
		}
		if err := resolved.ApplyDefaults(&content); err != nil {
			return nil, fmt.Errorf("applying the requested schema's defaults: %w", err)
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

func (caller) ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
}

func (caller) Log(_ context.Context, p *mcp.LoggingMessageParams) {
	fmt.Fprintf(os.Stderr, "server log (%s): %v\n", p.Level, p.Data)
}

// TaskStatus: the scenarios' calls are plain, so no task is the client's.
func (caller) TaskStatus(context.Context, json.RawMessage) {}
func (caller) ResourcesChanged()                           {}
