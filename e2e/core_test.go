package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestStdioMergedCatalogAndRouting(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/echo.yaml":    fixture("echo", "echo"),
		"tool/collide.yaml": fixture("collide", "collide"),
	})
	cs, _ := startStdio(t, dir)
	names := toolNames(t, cs)
	for _, want := range []string{"echo__echo", "echo__env", "echo__pid", "collide__echo", "collide__get_data"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool list %v lacks %s", names, want)
		}
	}
	// get.data and get_data sanitise alike: both must be listed, apart.
	var getData []string
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for _, n := range names {
		if !valid.MatchString(n) {
			t.Errorf("%q is not a valid client tool name", n)
		}
		if strings.HasPrefix(n, "collide__get_data") {
			getData = append(getData, n)
		}
	}
	if len(getData) != 2 {
		t.Errorf("get.data and get_data exposed as %v, want two distinct names", getData)
	}
	if got := resultText(callTool(t, cs, "echo__echo", map[string]any{"text": "hello"})); got != "echo: hello" {
		t.Errorf("echo__echo = %q", got)
	}
	if got := resultText(callTool(t, cs, "collide__echo", nil)); got != "collide echo" {
		t.Errorf("collide__echo = %q, want the collide server's echo", got)
	}
	for _, n := range getData {
		res := callTool(t, cs, n, nil)
		if !strings.HasPrefix(resultText(res), "collide get") {
			t.Errorf("%s = %q", n, resultText(res))
		}
	}
}

func TestResultTransparency(t *testing.T) {
	t.Parallel()
	// The same call directly to the fixture and through mcpmux must give
	// the same result, field by field.
	direct := exec.Command(fixtureBin)
	direct.Env = append(direct.Environ(), fixtureEnv+"=rich")
	ctx := testContext(t)
	opts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	dcs, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(ctx, &mcp.CommandTransport{Command: direct}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dcs.Close()
	want, err := dcs.CallTool(ctx, &mcp.CallToolParams{Name: "report", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	dtools, err := dcs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	dir := writeConfig(t, map[string]string{"tool/rich.yaml": fixture("rich", "rich")})
	cmd := exec.Command(mcpmuxBin, "--config", dir)
	vcs, err := mcp.NewClient(&mcp.Implementation{Name: "via"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer vcs.Close()
	got := callTool(t, vcs, "rich__report", map[string]any{})
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Errorf("result differs through mcpmux:\n  via %s\ndirect %s", g, w)
	}
	if !got.IsError || len(got.Content) != 5 {
		t.Errorf("want isError and 5 content items, got %s", jsonOf(t, got))
	}
	vtools, err := vcs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vtools.Tools) != 1 || len(dtools.Tools) != 1 {
		t.Fatalf("tools: via %d, direct %d", len(vtools.Tools), len(dtools.Tools))
	}
	vt := *vtools.Tools[0]
	if vt.Name != "rich__report" {
		t.Errorf("name %q", vt.Name)
	}
	vt.Name = dtools.Tools[0].Name
	if g, w := jsonOf(t, vt), jsonOf(t, dtools.Tools[0]); g != w {
		t.Errorf("tool definition differs:\n  via %s\ndirect %s", g, w)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFailingServersAreIsolated(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/good.yaml":   fixture("good", "echo"),
		"tool/crash.yaml":  fixture("crash", "crash-start"),
		"tool/banner.yaml": fixture("banner", "banner", "connect_timeout: 2s"),
		"tool/nocmd.yaml":  "name: nocmd\ntool_command: /nonexistent/server\n",
		"tool/broken.yaml": "name: broken\n  tool_command: [\n",
	})
	cs, p := startStdio(t, dir)
	for _, name := range toolNames(t, cs) {
		if !strings.HasPrefix(name, "good__") {
			t.Errorf("tool %s listed: only the good server is up", name)
		}
	}
	if got := resultText(callTool(t, cs, "good__echo", map[string]any{"text": "x"})); got != "echo: x" {
		t.Errorf("good__echo = %q", got)
	}
	logs := p.logs.String()
	for _, want := range []string{"broken.yaml", "line=2", "missing API key", "/nonexistent/server"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log does not mention %q", want)
		}
	}

	out, _, code := runMcpmux(t, "check", "--config", dir)
	if code == 0 {
		t.Errorf("check exited 0 with failing servers:\n%s", out)
	}
	for _, want := range []string{"good", "up", "crash", "failed", "exit status 3", "missing API key", "banner", "no answer to initialize", "broken.yaml:2:"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

func TestHTTPProfilesBlacklistAndHealth(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml": `tool_blacklist: [["echo", "env"]]
profiles:
  narrow:
    tool_config: [collide]
    tool_blacklist: [["collide", "get.data"]]
`,
		"tool/echo.yaml":    fixture("echo", "echo"),
		"tool/collide.yaml": fixture("collide", "collide"),
	})
	p := startHTTP(t, dir)
	all, err := connectHTTP(t, p, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(t, all)
	if slices.Contains(names, "echo__env") || !slices.Contains(names, "echo__pid") || !slices.Contains(names, "collide__echo") {
		t.Errorf("/mcp tools = %v: want all but the blacklisted echo__env", names)
	}
	if res := callTool(t, all, "echo__env", map[string]any{"name": "PATH"}); !res.IsError || !strings.Contains(resultText(res), "disabled") {
		t.Errorf("blacklisted call answered %q", resultText(res))
	}
	if got := resultText(callTool(t, all, "echo__echo", map[string]any{"text": "over http"})); got != "echo: over http" {
		t.Errorf("echo over HTTP = %q", got)
	}

	narrow, err := connectHTTP(t, p, "/mcp/narrow", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, narrow); !slices.Equal(got, []string{"collide__echo", "collide__get_data"}) {
		t.Errorf("/mcp/narrow tools = %v", got)
	}
	if res := callTool(t, narrow, "echo__pid", nil); !res.IsError {
		t.Errorf("narrow profile reached a server outside it: %q", resultText(res))
	}
	// echo__echo names a server outside the profile; the one server in it
	// with that tool answers, and says so.
	if got := resultText(callTool(t, narrow, "echo__echo", nil)); !strings.HasPrefix(got, "[Auto-corrected: Server 'echo' not found") || !strings.HasSuffix(got, "collide echo") {
		t.Errorf("narrow echo__echo = %q", got)
	}

	resp, err := http.Post(p.url+"/mcp/nope", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "narrow") {
		t.Errorf("unknown profile: %d %q", resp.StatusCode, body)
	}

	resp, err = http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Status  string
		Ready   bool
		Servers []struct {
			Name  string
			State string
			Tools int
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || health.Status != "ok" || !health.Ready || len(health.Servers) != 2 || health.Servers[0].State != "up" {
		t.Errorf("healthz = %d %+v", resp.StatusCode, health)
	}
}

func TestRealNpmServer(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/everything.yaml": npmServer(t, "everything", "mcp-server-everything", "stdio"),
		"tool/echo.yaml":       fixture("echo", "echo"),
	})
	cs, _ := startStdio(t, dir)
	names := toolNames(t, cs)
	for _, want := range []string{"everything__echo", "everything__get-sum", "echo__echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if got := resultText(callTool(t, cs, "everything__echo", map[string]any{"message": "from e2e"})); !strings.Contains(got, "from e2e") {
		t.Errorf("everything__echo = %q", got)
	}
	res := callTool(t, cs, "everything__get-sum", map[string]any{"a": 2, "b": 40})
	if !strings.Contains(resultText(res), "42") {
		t.Errorf("get-sum = %q", resultText(res))
	}
	// Invalid arguments are the server's to reject; the answer is a result.
	if res := callTool(t, cs, "everything__get-sum", map[string]any{"a": "two"}); !res.IsError {
		t.Errorf("bad arguments were accepted: %q", resultText(res))
	}
}

func TestShutdownStopsChildren(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/echo.yaml": fixture("echo", "echo")})

	// The client leaves (stdin closes): mcpmux exits and so does its child.
	cs, p := startStdio(t, dir)
	pid, err := strconv.Atoi(resultText(callTool(t, cs, "echo__pid", nil)))
	if err != nil || !alive(pid) {
		t.Fatalf("child pid %d: %v", pid, err)
	}
	cs.Close()
	if err := p.wait(t); err != nil {
		t.Errorf("mcpmux exited with %v after the client left", err)
	}
	waitGone(t, pid)

	// SIGTERM: the same.
	cs, p = startStdio(t, dir)
	pid, _ = strconv.Atoi(resultText(callTool(t, cs, "echo__pid", nil)))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	waitGone(t, pid)
}

// A stdio client that closes its end of mcpmux's stdout before its stdin
// (or dies) has left: the write that fails with a broken pipe ends mcpmux
// as a closed stdin does, with exit 0 and no ERROR in its log.
func TestStdioClientClosingStdoutFirst(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/echo.yaml": fixture("echo", "echo")})
	p, stdin, stdout := startStdioPipes(t, dir)

	send := func(msg string) {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	for r := bufio.NewReader(stdout); ; { // notifications may come first
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("initialize: %v", err)
		}
		if strings.Contains(line, `"id":1`) {
			break
		}
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The client stops reading; its next request's answer meets a closed
	// pipe. Its stdin stays open: the broken pipe alone must end mcpmux.
	_ = stdout.Close()
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if err := p.wait(t); err != nil {
		t.Errorf("mcpmux exited with %v after its client closed stdout, want 0", err)
	}
	if strings.Contains(p.logs.String(), "level=ERROR") {
		t.Errorf("a client that left is logged as an error:\n%s", p.logs.String())
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/echo.yaml": fixture("echo", "echo"),
		"mcpmux.yaml":    "profiles:\n  p: {tool_config: [echo]}\n",
	})
	out, _, code := runMcpmux(t, "tools", "--config", dir, "--json")
	if code != 0 {
		t.Fatalf("tools --json exited %d", code)
	}
	var tools []struct {
		Name, Server, Tool, Description string
		InputSchema                     map[string]any
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("tools --json is not JSON: %v\n%s", err, out)
	}
	i := slices.IndexFunc(tools, func(x struct {
		Name, Server, Tool, Description string
		InputSchema                     map[string]any
	}) bool {
		return x.Name == "echo__echo"
	})
	if i < 0 || tools[i].Server != "echo" || tools[i].Tool != "echo" || tools[i].InputSchema["type"] != "object" {
		t.Errorf("tools --json = %+v", tools)
	}
	out, _, _ = runMcpmux(t, "tools", "--config", dir)
	if !strings.Contains(out, "echo__echo") || !strings.Contains(out, "Echoes text.") {
		t.Errorf("tools = %q", out)
	}
	out, _, code = runMcpmux(t, "check", "--config", dir)
	if code != 0 || !strings.Contains(out, "echo") || !strings.Contains(out, "up") {
		t.Errorf("check = %d %q", code, out)
	}
	out, _, code = runMcpmux(t, "version")
	if code != 0 || !strings.HasPrefix(out, "mcpmux ") {
		t.Errorf("version = %d %q", code, out)
	}
	_, errOut, code := runMcpmux(t, "--config", dir, "--http", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errOut, "non-loopback") {
		t.Errorf("non-loopback bind without token: %d %q", code, errOut)
	}
	_, errOut, code = runMcpmux(t, "--config", dir, "--profile", "nope")
	if code != 2 || !strings.Contains(errOut, "unknown profile") {
		t.Errorf("unknown profile: %d %q", code, errOut)
	}
	_, _, code = runMcpmux(t, "frobnicate")
	if code != 2 {
		t.Errorf("unknown command exited %d", code)
	}
}

// mcpmux check names the file and line of every invalid setting.
func TestCheckPointsAtFileAndLine(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":   "timeout: 10s\nmeta_tools: [stats]\n",
		"tool/bad.yaml": "name: bad\ntool_command: x\nsession: sometimes\n",
	})
	out, _, code := runMcpmux(t, "check", "--config", dir)
	if code == 0 {
		t.Errorf("check exited 0 with invalid files:\n%s", out)
	}
	for _, want := range []string{
		"mcpmux.yaml:2: meta_tools.0: unknown meta tool \"stats\"",
		"bad.yaml:3: session: unknown session mode \"sometimes\"",
		"2 invalid files",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// tools marks the tools a server lists only to clients with a capability
// (server-everything's roots, sampling and elicitation ones) and counts
// what every client gets; check's TOOLS column counts what a client can
// call, not the blacklisted tools.
func TestToolsAndCheckCountWhatAClientSees(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/everything.yaml": npmServer(t, "everything", "mcp-server-everything", "stdio"),
		"mcpmux.yaml":          "tool_blacklist: [[everything, echo]]\n",
	})
	// tools opens a probe session (a process) per capability: slow when busy.
	out, errOut, code := runMcpmuxIn(t, longTestContext(t), "--config", dir, "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	marked := 0
	for _, l := range lines {
		if strings.Contains(l, "[client needs ") {
			marked++
		}
	}
	for _, want := range []string{"everything__get-roots-list  ", "[client needs roots]", "[client needs sampling]", "[client needs elicitation (form)]"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools lacks %q:\n%s", want, out)
		}
	}
	if want := fmt.Sprintf("%d of them for every client; the %d marked", len(lines)-marked, marked); marked == 0 || !strings.Contains(errOut, want) {
		t.Errorf("tools: stderr %q, want %q", errOut, want)
	}
	if strings.Contains(out, "everything__echo ") {
		t.Errorf("tools lists a blacklisted tool:\n%s", out)
	}
	out, _, code = runMcpmux(t, "--config", dir, "check")
	want := fmt.Sprintf("everything  up     %d ", len(lines))
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "1 more blacklisted (tool_blacklist)") {
		t.Errorf("check: exit %d, want %q and the blacklisted one in DETAIL:\n%s", code, want, out)
	}
}
