package main

import (
	"context"
	"fmt"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

// loadSpec reads and validates a table spec file (docs/spec.md).
func loadSpec(path string) (*config.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return config.Parse(data)
}

// locationConfig is how the spec's table URLs are opened.
func locationConfig(spec *config.Spec) location.Config {
	return location.Config{Region: spec.Storage.Region, Endpoint: spec.Storage.S3Endpoint, PathStyle: spec.Storage.S3PathStyle,
		DynamoTable: spec.Storage.DynamoTable, DynamoEndpoint: spec.Storage.DynamoEndpoint,
		DynamoRegion: spec.Storage.DynamoRegion, TablePathScheme: spec.Storage.TablePathScheme}
}

// openTable opens a Delta table at url.
func openTable(ctx context.Context, url string, cfg location.Config) (*deltalog.Table, error) {
	st, ls, err := location.Open(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	return deltalog.Open(st, ls, deltalog.Options{}), nil
}

// openStreamDeps opens bronze, facts and the checkpoint of spec around src.
func openStreamDeps(ctx context.Context, spec *config.Spec, src source.Source) (stream.Deps, error) {
	cfg := locationConfig(spec)
	bronzeT, err := openTable(ctx, spec.Bronze, cfg)
	if err != nil {
		return stream.Deps{}, err
	}
	factsT, err := openTable(ctx, spec.FactsTable, cfg)
	if err != nil {
		return stream.Deps{}, err
	}
	cp, _, err := location.Open(ctx, spec.Checkpoint, cfg)
	if err != nil {
		return stream.Deps{}, err
	}
	return stream.Deps{Source: src, Bronze: bronzeT, Facts: factsT, Checkpoint: checkpoint.New(cp, spec.AppID)}, nil
}

// secretsManager is AWS Secrets Manager behind config.SecretGetter.
type secretsManager struct{ c *secretsmanager.Client }

func (s secretsManager) SecretString(ctx context.Context, arn string) (string, error) {
	out, err := s.c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
	if err != nil {
		return "", err
	}
	if out.SecretString == nil {
		return "", fmt.Errorf("secret %s has no string value", arn)
	}
	return *out.SecretString, nil
}

// openSQLServer opens the spec's SQL Server, the password resolved from the environment
// or Secrets Manager.
func openSQLServer(ctx context.Context, spec *config.Spec) (*mssql.DB, error) {
	var getter config.SecretGetter
	if spec.Source.PasswordSecretARN != "" {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("aws config: %w", err)
		}
		getter = secretsManager{secretsmanager.NewFromConfig(cfg)}
	}
	pw, err := spec.Source.Password(ctx, os.Getenv, getter)
	if err != nil {
		return nil, err
	}
	dsn, err := spec.Source.ConnString(pw)
	if err != nil {
		return nil, err
	}
	return mssql.Open(mssql.Options{DSN: dsn, SourceTimeZone: spec.Options.SourceTimeZone})
}
