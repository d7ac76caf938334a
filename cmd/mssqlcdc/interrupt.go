package main

import (
	"context"
	"fmt"
	"sync"
)

// Interrupts. main cancels the context on SIGINT or SIGTERM; a command stops at its next
// step and returns. run then prints one line, "mssqlcdc stream: interrupted after batch 9;
// rerun to continue", and exits exitInterrupted, whatever error chain the command returned:
// every step is idempotent, so rerunning the same command continues where it stopped.

// exitInterrupted is the exit status of an interrupted command (128 + SIGINT, as shells
// report it).
const exitInterrupted = 130

// progress is what a command has done so far, for the interrupted line: the last thing it
// finished ("batch 9", "3 of 8 ranges of the snapshot").
type progress struct {
	mu   sync.Mutex
	last string
	// rerun replaces "rerun to continue" for a command whose rerun does not continue
	// (setRerun).
	rerun string
}

type progressKey struct{}

// withProgress returns ctx carrying a fresh progress.
func withProgress(ctx context.Context) (context.Context, *progress) {
	p := &progress{}
	return context.WithValue(ctx, progressKey{}, p), p
}

// recordDone records that the command finished step (printf-style).
func recordDone(ctx context.Context, format string, args ...any) {
	if p, ok := ctx.Value(progressKey{}).(*progress); ok {
		p.mu.Lock()
		p.last = fmt.Sprintf(format, args...)
		p.mu.Unlock()
	}
}

// setRerun says what to do after an interrupt instead of "rerun to continue" (export:
// its partial target must be deleted first).
func setRerun(ctx context.Context, what string) {
	if p, ok := ctx.Value(progressKey{}).(*progress); ok {
		p.mu.Lock()
		p.rerun = what
		p.mu.Unlock()
	}
}

// interruptedLine is the one line an interrupted command prints.
func (p *progress) interruptedLine(cmd string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	rerun := "rerun to continue"
	if p.rerun != "" {
		rerun = p.rerun
	}
	if p.last == "" {
		return fmt.Sprintf("mssqlcdc %s: interrupted; %s", cmd, rerun)
	}
	return fmt.Sprintf("mssqlcdc %s: interrupted after %s; %s", cmd, p.last, rerun)
}
