package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// reload (figure 5, and issue 4): the time from saving a tool file to
// tools/list_changed at the client, and the calls lost while the config
// is reloaded 20 times under continuous load.
func reload(ctx context.Context, e *env, o options) ([]row, error) {
	saves, reloads, clients := 16, 20, 12
	if o.quick {
		saves, reloads, clients = 4, 5, 8
	}
	dir := e.configDir(server{name: "a"})
	mux, err := e.startMuxHTTP(dir, true)
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	changed := make(chan time.Time, 64)
	watcher, err := connectHTTP(ctx, newClient(func() { changed <- time.Now() }), mux.url, httpClient())
	if err != nil {
		return nil, err
	}
	defer watcher.Close()
	if _, err := countTools(ctx, watcher); err != nil {
		return nil, err
	}

	// Save → list_changed: add a server's file, then remove it.
	var lat samples
	present := false
	for i := range saves {
		drain(changed)
		t := time.Now()
		if present {
			removeTool(dir, "b")
		} else {
			e.writeTool(dir, server{name: "b"})
		}
		present = !present
		at, ok := waitFor(changed, 15*time.Second)
		if !ok {
			return nil, fmt.Errorf("save %d: no tools/list_changed within 15s", i)
		}
		lat = append(lat, at.Sub(t))
		time.Sleep(100 * time.Millisecond) // let the notification's debounce pass
	}
	rows := []row{{
		Figure: "Reload: tool file saved → tools/list_changed at the client",
		Median: ms(lat.median()), P99: ms(lat.p99()), Value: ms(lat.median()),
		Command: "go run ./bench -only reload",
		Note:    fmt.Sprintf("%d saves, adding or removing a server; includes the watcher's 150 ms debounce and the new server's start", len(lat)),
	}}

	// Calls across reloads: clients call a__echo without pause while each
	// reload restarts a (its env changes) and adds or removes b.
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		total    atomic.Int64
		lost     atomic.Int64
		mu       sync.Mutex
		examples []string
	)
	for i := range clients {
		cs, err := connectHTTP(ctx, newClient(nil), mux.url, httpClient())
		if err != nil {
			return nil, err
		}
		defer cs.Close()
		wg.Go(func() {
			for j := 0; !stop.Load(); j++ {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := echo(cctx, cs, "a__echo", fmt.Sprintf("r%d-%d", i, j))
				cancel()
				total.Add(1)
				if err != nil {
					lost.Add(1)
					mu.Lock()
					if len(examples) < 3 {
						examples = append(examples, err.Error())
					}
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	pid := serverPID(mux.url, "a")
	restarted := 0
	for i := range reloads {
		drain(changed)
		e.writeTool(dir, server{name: "a", env: map[string]string{"GENERATION": fmt.Sprint(i)}})
		if present {
			removeTool(dir, "b")
		} else {
			e.writeTool(dir, server{name: "b"})
		}
		present = !present
		if _, ok := waitFor(changed, 15*time.Second); !ok {
			stop.Store(true)
			wg.Wait()
			return rows, fmt.Errorf("reload %d: no tools/list_changed within 15s", i)
		}
		// The restart of a is part of the same reload: its new process
		// serves once the catalog has changed.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if p := serverPID(mux.url, "a"); p != 0 && p != pid {
				pid = p
				restarted++
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(150 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	note := fmt.Sprintf("%d clients, %d calls, %d of %d reloads restarted server a", clients, total.Load(), restarted, reloads)
	if len(examples) > 0 {
		note += "; e.g. " + strings.Join(examples, " | ")
	}
	rows = append(rows, row{
		Figure: fmt.Sprintf("Reload: calls lost across %d reloads under load (restart one server, add/remove another)", reloads),
		Value:  fmt.Sprint(lost.Load()),
		Target: "0", Met: met(lost.Load() == 0 && restarted == reloads), Check: true,
		Command: "go run ./bench -only reload",
		Note:    note,
	})
	return rows, nil
}

func drain(c chan time.Time) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func waitFor(c chan time.Time, d time.Duration) (time.Time, bool) {
	select {
	case t := <-c:
		return t, true
	case <-time.After(d):
		return time.Time{}, false
	}
}

// serverPID reads a server's child pid from mcpmux's /healthz.
func serverPID(mcpURL, name string) int {
	resp, err := http.Get(strings.TrimSuffix(mcpURL, "/mcp") + "/healthz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var h struct {
		Servers []struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&h) != nil {
		return 0
	}
	for _, s := range h.Servers {
		if s.Name == name {
			return s.PID
		}
	}
	return 0
}
