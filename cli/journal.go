package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpmux/mcpmux/journal/report"
)

// journalCmd summarises a journal directory (mcpmux.yaml's journal.dir)
// per task: text, --json, or an HTML page with --html.
func journalCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("journal", stdout, stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	htmlFile := fs.String("html", "", "also write a self-contained HTML page (a table of the tasks, then a timeline and the calls of each) to `FILE`")
	order := fs.String("sort", report.SortStart, "order the tasks by `ORDER`: "+strings.Join(report.SortOrders, ", ")+" (errors: most errors first)")
	dirs, code, ok := parseWithPositionals(fs, args)
	if !ok {
		return code
	}
	if len(dirs) != 1 {
		return flagError(fs, fmt.Errorf("name one journal directory (journal.dir of mcpmux.yaml), not %d", len(dirs)))
	}
	r, err := report.Read(dirs[0])
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux journal:", err)
		return 1
	}
	if !r.Sort(*order) {
		return flagError(fs, fmt.Errorf("unknown --sort %q (%s)", *order, strings.Join(report.SortOrders, ", ")))
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
