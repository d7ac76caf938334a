package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

func init() {
	register(command{name: "version", summary: "print the build's module version", run: runVersion})
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintln(stdout, "mssqlcdc", v)
	return nil
}
