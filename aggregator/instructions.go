package aggregator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initializeWait bounds how long an initialize request waits for the
// servers' first start, so that the instructions it returns are theirs;
// past it, the client is answered with what is known.
const initializeWait = 10 * time.Second

// instructionsMiddleware puts the instructions of p's servers into the
// initialize result, and into server/discover's, its 2026-07-28
// counterpart: a client started together with mcpmux (stdio) initializes
// (or discovers) at once, so it waits for the servers' first start,
// within initializeWait.
func (a *Aggregator) instructionsMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "initialize" && method != "server/discover" {
				return next(ctx, method, req)
			}
			t := time.NewTimer(initializeWait)
			select {
			case <-a.ready:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			v := p.view.Load()
			switch r := res.(type) {
			case *mcp.InitializeResult:
				r.Instructions = mergeInstructions(v, v.settings.Separator)
			case *mcp.DiscoverResult:
				r.Instructions = mergeInstructions(v, v.settings.Separator)
			}
			return res, err
		}
	}
}

// mergeInstructions joins the instructions of the profile's servers, each
// under a heading with its name, servers in config order; "" if none has
// any. The lead says how their names appear here, since a server's
// instructions name its tools as the server knows them.
func mergeInstructions(v *view, sep string) string {
	var b strings.Builder
	for _, si := range v.cat.Instructions {
		if !v.hasServer(si.Server) {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "mcpmux serves the tools and prompts of several servers, each named <server>%s<name> unless said otherwise below. The instructions of those servers follow, one section per server.\n", sep)
		}
		fmt.Fprintf(&b, "\n## %s", si.Server)
		switch si.Prefix {
		case si.Server:
		case "":
			b.WriteString(" (its tools and prompts keep their own names)")
		default:
			fmt.Fprintf(&b, " (its tools and prompts are named %s%s<name>)", si.Prefix, sep)
		}
		b.WriteString("\n\n")
		b.WriteString(strings.TrimSpace(si.Text))
		b.WriteString("\n")
	}
	return b.String()
}
