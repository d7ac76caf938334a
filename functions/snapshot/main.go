// Command snapshot is the snapshot Lambda: the steps of a full snapshot (open, plan, read,
// commit, close) that the bootstrap state machine calls, for the table spec in its
// environment (MSSQLCDC_SPEC, the JSON document Terraform writes). The input names the
// step: {"step": "open"|"plan"|"read"|"commit"|"close", ...} (docs/handlers.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

// SpecEnv names the environment variable holding the table spec JSON.
const SpecEnv = "MSSQLCDC_SPEC"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	spec, err := config.Parse([]byte(os.Getenv(SpecEnv)))
	if err != nil {
		log.Error("invalid table spec", "env", SpecEnv, "err", err.Error())
		os.Exit(1)
	}
	h := &Handler{Spec: spec, Open: openAWS, Log: log}
	lambda.Start(h.Handle)
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

// openAWS opens SQL Server and the spec's bronze, facts and checkpoint locations.
func openAWS(ctx context.Context, spec *config.Spec) (*snapshot.Job, func(), error) {
	var getter config.SecretGetter
	if spec.Source.PasswordSecretARN != "" {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("aws config: %w", err)
		}
		getter = secrets{secretsmanager.NewFromConfig(cfg)}
	}
	pw, err := spec.Source.Password(ctx, os.Getenv, getter)
	if err != nil {
		return nil, nil, err
	}
	dsn, err := spec.Source.ConnString(pw)
	if err != nil {
		return nil, nil, err
	}
	src, err := mssql.Open(mssql.Options{DSN: dsn, SourceTimeZone: spec.Options.SourceTimeZone})
	if err != nil {
		return nil, nil, err
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
	var t snapshot.Tables
	if t.Bronze, err = open(spec.Bronze); err == nil {
		if spec.FactsTable != "" {
			t.Facts, err = open(spec.FactsTable)
		}
	}
	if err == nil {
		t.Checkpoint, _, err = location.Open(ctx, spec.Checkpoint, loc)
	}
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return snapshot.FromSpec(spec, src, t), func() { src.Close() }, nil
}
