// Command stream is the stream Lambda: it runs core/stream for the table spec in its
// environment (MSSQLCDC_SPEC, the JSON document Terraform writes) and returns
// {"caught_up", "batches", "rows", "offset"}. EventBridge Scheduler invokes it every N
// minutes; reserved concurrency 1 keeps one invocation per table.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	spec, err := connect.SpecFromEnv(os.Getenv)
	open := func(ctx context.Context, s *config.Spec) (stream.Deps, func(), error) {
		return connect.Stream(ctx, s, os.Getenv)
	}
	h := &Handler{Spec: spec, SpecErr: err, Open: (&warm{open: open}).Open, Log: log, Metrics: os.Stdout}
	lambda.Start(h.Handle)
}
