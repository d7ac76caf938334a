// Command snapshot is the snapshot Lambda: the steps of a full snapshot (open, plan, read,
// commit, close) that the bootstrap state machine calls, for the table spec in its
// environment (MSSQLCDC_SPEC, the JSON document Terraform writes). The input names the
// step: {"step": "open"|"plan"|"read"|"commit"|"close", ...} (docs/handlers.md).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	spec, err := connect.SpecFromEnv(os.Getenv)
	open := func(ctx context.Context, s *config.Spec) (snapshot.Deps, func(), error) {
		return connect.Snapshot(ctx, s, os.Getenv)
	}
	h := &Handler{Spec: spec, SpecErr: err, Open: open, Log: log}
	lambda.Start(h.Handle)
}
