package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// defaultHealthURL is where the container images' HEALTHCHECK looks: they
// serve --http 0.0.0.0:8080. A container serving another port sets
// MCPMUX_HEALTHCHECK_URL.
const defaultHealthURL = "http://127.0.0.1:8080/healthz"

// healthcheckCmd asks a serving mcpmux for /healthz and exits 0 if it
// answers 200, 1 otherwise. It exists so that a container HEALTHCHECK works
// in an image without a shell, curl or wget (the distroless slim target).
func healthcheckCmd(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("healthcheck", stdout, stderr)
	timeout := flags.Duration("timeout", 5*time.Second, "how long the request may take")
	positional, code, ok := parseWithPositionals(flags, args)
	if !ok {
		return code
	}
	target := defaultHealthURL
	if env := os.Getenv("MCPMUX_HEALTHCHECK_URL"); env != "" {
		target = env
	}
	switch len(positional) {
	case 0:
	case 1:
		target = positional[0]
	default:
		return flagError(flags, fmt.Errorf("want at most one URL, got %d", len(positional)))
	}
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "mcpmux healthcheck: %q is not an http(s) URL, e.g. %s\n", target, defaultHealthURL)
		return 2
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		fmt.Fprintf(stderr, "mcpmux healthcheck: %v\n", err)
		return 2
	}
	// No proxy from the environment: the target is this host's own mcpmux.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "mcpmux healthcheck: unhealthy: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "mcpmux healthcheck: unhealthy: %s answered %s: %s\n", target, resp.Status, oneLine(string(body)))
		return 1
	}
	fmt.Fprintln(stdout, healthSummary(body))
	return 0
}

// healthSummary is one line about a /healthz body, for docker inspect:
// the status and how many servers are up.
func healthSummary(body []byte) string {
	var h struct {
		Status  string `json:"status"`
		Servers []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status == "" {
		return "healthy: " + truncate(oneLine(string(body)), 200)
	}
	up, down := 0, []string{}
	for _, s := range h.Servers {
		if s.State == "up" {
			up++
		} else {
			down = append(down, s.Name+" "+s.State)
		}
	}
	line := fmt.Sprintf("healthy: %s, %d of %d servers up", h.Status, up, len(h.Servers))
	if len(down) > 0 {
		line += " (" + strings.Join(down, ", ") + ")"
	}
	return line
}
