package stdioconn

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CommandTransport starts a command and connects to it over its stdin and
// stdout, as mcp.CommandTransport does, with a client-side Conn.
type CommandTransport struct {
	Command *exec.Cmd
	// TerminateDuration is how long Close waits for the command to exit
	// after closing its stdin before sending SIGTERM, and after SIGTERM
	// before SIGKILL (0: 5 s, as the go-sdk).
	TerminateDuration time.Duration
	Options
}

// defaultTerminateDuration is the go-sdk's.
const defaultTerminateDuration = 5 * time.Second

// Connect implements mcp.Transport.
func (t *CommandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.Command.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.Command.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.Command.Start(); err != nil {
		return nil, err
	}
	td := t.TerminateDuration
	if td <= 0 {
		td = defaultTerminateDuration
	}
	opts := t.Options
	opts.Role = Client
	// Closing ends the connection by closing the child's stdin, as MCP's
	// stdio transport says, not its stdout.
	return newConn(stdout, stdin, func() error { return terminate(t.Command, stdin, td) }, opts), nil
}

// terminate closes the child's stdin and waits for it to exit; past td it
// is sent SIGTERM, past td more SIGKILL (MCP's stdio shutdown, as the
// go-sdk does it).
func terminate(cmd *exec.Cmd, stdin io.Closer, td time.Duration) error {
	if err := stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(td)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	// If SIGTERM cannot be sent, on to SIGKILL at once.
	if cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return fmt.Errorf("unresponsive subprocess")
}
