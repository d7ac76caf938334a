// Command stream is the stream Lambda: it runs core/stream for the table spec in its
// environment (MSSQLCDC_SPEC, the JSON document Terraform writes) and returns
// {"caught_up", "batches", "rows", "offset"}. EventBridge Scheduler invokes it every N
// minutes; reserved concurrency 1 keeps one invocation per table.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

// SpecEnv names the environment variable holding the table spec JSON.
const SpecEnv = "MSSQLCDC_SPEC"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	spec, err := config.Parse([]byte(os.Getenv(SpecEnv)))
	if err != nil {
		// Every invocation fails with the ConfigError itself, so Step Functions sees its
		// name (an exit would surface as Runtime.ExitError).
		log.Error("invalid table spec", "env", SpecEnv, "err", err.Error())
		lambda.Start(func(context.Context, Event) (Output, error) { return Output{}, mapError(err) })
		return
	}
	h := &Handler{Spec: spec, Open: (&warm{open: openAWS}).Open, Log: log, Metrics: os.Stdout}
	lambda.Start(h.Handle)
}

// warm keeps the connections of a successful open for the next invocations of this
// execution environment (a warm Lambda): the SQL Server pool and its login, the secret and
// the AWS clients are reused. database/sql replaces broken connections by itself.
type warm struct {
	mu   sync.Mutex
	open Opener
	deps *stream.Deps
}

func (w *warm) Open(ctx context.Context, spec *config.Spec) (stream.Deps, func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deps == nil {
		d, _, err := w.open(ctx, spec)
		if err != nil {
			return d, nil, err
		}
		w.deps = &d
	}
	return *w.deps, func() {}, nil
}

// secrets is Secrets Manager behind config.SecretGetter.
type secrets struct{ c *secretsmanager.Client }

func (s secrets) SecretString(ctx context.Context, arn string) (string, error) {
	out, err := s.c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
	if err != nil {
		return "", err
	}
	if out.SecretString == nil {
		return "", fmt.Errorf("secret %s has no string value", arn)
	}
	return *out.SecretString, nil
}

// openAWS opens SQL Server and the three locations named by the spec.
func openAWS(ctx context.Context, spec *config.Spec) (stream.Deps, func(), error) {
	var deps stream.Deps
	var getter config.SecretGetter
	if spec.Source.PasswordSecretARN != "" {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return deps, nil, fmt.Errorf("aws config: %w", err)
		}
		getter = secrets{secretsmanager.NewFromConfig(cfg)}
	}
	pw, err := spec.Source.Password(ctx, os.Getenv, getter)
	if err != nil {
		return deps, nil, err
	}
	dsn, err := spec.Source.ConnString(pw)
	if err != nil {
		return deps, nil, err
	}
	src, err := mssql.Open(mssql.Options{DSN: dsn, SourceTimeZone: spec.Options.SourceTimeZone})
	if err != nil {
		return deps, nil, err
	}
	loc := location.Config{Region: spec.Storage.Region, Endpoint: spec.Storage.S3Endpoint, PathStyle: spec.Storage.S3PathStyle,
		DynamoTable: spec.Storage.DynamoTable, DynamoEndpoint: spec.Storage.DynamoEndpoint,
		DynamoRegion: spec.Storage.DynamoRegion, TablePathScheme: spec.Storage.TablePathScheme}
	open := func(url string) (*deltalog.Table, error) {
		st, ls, err := location.Open(ctx, url, loc)
		if err != nil {
			return nil, err
		}
		return deltalog.Open(st, ls, deltalog.Options{}), nil
	}
	if deps.Bronze, err = open(spec.Bronze); err != nil {
		src.Close()
		return deps, nil, err
	}
	if deps.Facts, err = open(spec.FactsTable); err != nil {
		src.Close()
		return deps, nil, err
	}
	cp, _, err := location.Open(ctx, spec.Checkpoint, loc)
	if err != nil {
		src.Close()
		return deps, nil, err
	}
	deps.Source, deps.Checkpoint = src, checkpoint.New(cp, spec.AppID)
	return deps, func() { src.Close() }, nil
}
