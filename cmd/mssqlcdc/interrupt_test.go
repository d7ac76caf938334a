package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// cancelOn is stdout or stderr that cancels the run when what it has been written
// contains trigger: an interrupt at a known point, with no timing.
type cancelOn struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	cancel  context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.trigger) {
		c.cancel()
	}
	return n, err
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// runInterrupted runs the CLI with args and interrupts it (as Ctrl-C does: the context
// ends) once its stdout shows trigger; an empty trigger interrupts it before it starts.
func runInterrupted(t *testing.T, trigger string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if trigger == "" {
		cancel()
	}
	out := &cancelOn{trigger: trigger, cancel: cancel}
	var errOut bytes.Buffer
	code = run(ctx, args, out, &errOut)
	return out.String(), errOut.String(), code
}

// Ctrl-C: every command exits 130 with one line saying how far it got and that a rerun
// continues, never exit 0 and never a chain of context errors (issue 12 item 11); the
// rerun does continue.
func TestInterruptedCommandsSayOneLineAndExitNonZero(t *testing.T) {
	// The continuous stream (from the earliest change, no snapshot), interrupted once its
	// first batch is printed.
	spec := writeSimSpec(t)
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, bytes.Replace(b, []byte(`"bootstrap":true`), []byte(`"bootstrap":false`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runInterrupted(t, "batch ", "stream", "--spec", spec, "--sim")
	line := regexp.MustCompile(`^mssqlcdc stream: interrupted after batch \d+ \(offset 0x[0-9A-F]{20}\); rerun to continue\n$`)
	if code != exitInterrupted || !line.MatchString(errOut) {
		t.Errorf("stream: exit %d, stderr %q; want %d and one line saying the batch", code, errOut, exitInterrupted)
	}
	// The rerun continues from the checkpoint and finishes.
	if out, errOut, code := runCLI(t, "stream", "--spec", spec, "--sim", "--available-now"); code != 0 || !strings.Contains(out, "caught up: true") {
		t.Errorf("rerun: exit %d, %s %s", code, out, errOut)
	}

	// A snapshot interrupted before its first step finished.
	spec2 := writeSimSpec(t)
	_, errOut, code = runInterrupted(t, "", "snapshot", "--spec", spec2, "--sim")
	if code != exitInterrupted || errOut != "mssqlcdc snapshot: interrupted; rerun to continue\n" {
		t.Errorf("snapshot: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(errOut, "context canceled") {
		t.Errorf("snapshot: %q names the context error", errOut)
	}

	// The demo, interrupted at its first batch.
	_, errOut, code = runInterrupted(t, "batch ", "demo", "--lake", t.TempDir(), "--rows", "500", "--seconds", "5")
	if code != exitInterrupted || !strings.HasPrefix(errOut, "mssqlcdc demo: interrupted after batch ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("demo: exit %d, stderr %q", code, errOut)
	}
}

// An interrupted export does not continue on a rerun (its target then holds files
// without the completion marker, which a rerun refuses): its line says what to do instead.
func TestInterruptedExportSaysDeleteFirst(t *testing.T) {
	ctx, p := withProgress(context.Background())
	setRerun(ctx, "/x holds a partial export (no _SUCCESS): delete what is there and export again")
	recordDone(ctx, "%d of %d ranges of the %s", 1, 3, "export")
	want := "mssqlcdc export: interrupted after 1 of 3 ranges of the export; /x holds a partial export (no _SUCCESS): delete what is there and export again"
	if got := p.interruptedLine("export"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
