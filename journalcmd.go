package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpmux/mcpmux/journal/report"
)

// journalCmd summarises a journal directory (mcpmux.yaml's journal.dir)
// per task: text, --json, or an HTML page with --html.
func journalCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("journal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: mcpmux journal DIR [--json] [--html FILE]\n\nSummarises the call journal in DIR per task: calls, errors, refusals,\nfallbacks, corrections, timeouts, replays, and total and slowest time per tool.")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	htmlFile := fs.String("html", "", "also write a self-contained HTML page (a table and a timeline per task) to `FILE`")
	// DIR may come before or after the flags.
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) != 1 {
		fmt.Fprintln(stderr, "mcpmux journal: name one journal directory (journal.dir of mcpmux.yaml)")
		fs.Usage()
		return 2
	}
	r, err := report.Read(dirs[0])
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux journal:", err)
		return 1
	}
	if *htmlFile != "" {
		if err := writeHTML(r, *htmlFile); err != nil {
			fmt.Fprintln(stderr, "mcpmux journal:", err)
			return 1
		}
	}
	if *asJSON {
		err = r.WriteJSON(stdout)
	} else {
		err = r.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux journal:", err)
		return 1
	}
	return 0
}

// writeHTML writes the page, readable only by its owner as the journal
// is: it shows the calls' arguments and results.
func writeHTML(r *report.Report, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing the HTML page: %w", err)
	}
	if err := r.WriteHTML(f); err != nil {
		f.Close()
		return fmt.Errorf("writing the HTML page: %w", err)
	}
	return f.Close()
}
