// Command mssqlcdc runs mssqlcdc's steps and flows locally: the demo, the stream, the
// snapshots and table inspection. Each subcommand lives in its own file and registers
// itself in commands.go.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal the command winds down; a second one kills the process
		// (the signals' default action again).
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
