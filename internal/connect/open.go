package connect

import (
	"context"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// SQLServer opens the spec's SQL Server: its DSN with the password Password resolves (nil
// secrets: Secrets Manager from the default AWS chain). The caller closes it.
//
// No error carries the password: each is passed through config.Redact with the resolved
// password and the DSN (and the password written in it).
//
// With a password from password_env or password_secret_arn, a login refused later (the
// secret rotated while a warm Lambda kept its pool) reads the password again once and
// retries (mssql.Options.PasswordFunc).
func SQLServer(ctx context.Context, spec *config.Spec, getenv func(string) string, secrets config.SecretGetter) (*mssql.DB, error) {
	secrets, err := secretGetter(ctx, spec, secrets)
	if err != nil {
		return nil, config.Redact(err, spec.Source.DSN)
	}
	pw, err := spec.Source.Password(ctx, getenv, secrets)
	if err != nil {
		return nil, config.Redact(err, spec.Source.DSN)
	}
	o, err := spec.MSSQL(pw)
	if err != nil {
		return nil, config.Redact(err, pw, spec.Source.DSN)
	}
	o.PasswordFunc = passwordFunc(spec, getenv, secrets, pw)
	db, err := mssql.Open(o)
	return db, config.Redact(err, pw, o.DSN, spec.Source.DSN)
}

// Location is how the spec's table URLs are opened (config.Storage → location.Config).
func Location(spec *config.Spec) location.Config {
	st := spec.Storage
	return location.Config{Region: st.Region, Endpoint: st.S3Endpoint, PathStyle: st.S3PathStyle,
		DynamoTable: st.DynamoTable, DynamoRegion: st.DynamoRegion, DynamoEndpoint: st.DynamoEndpoint,
		TablePathScheme: st.TablePathScheme}
}

// Table opens the Delta table at url.
func Table(ctx context.Context, url string, cfg location.Config) (*deltalog.Table, error) {
	st, ls, err := location.Open(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	return deltalog.Open(st, ls, deltalog.Options{}), nil
}

// Tables are the spec's bronze, facts and plans tables and its checkpoint prefix.
type Tables struct {
	Bronze *deltalog.Table
	// Facts is nil when the spec names no facts table.
	Facts *deltalog.Table
	// Plans is the plans table next to bronze (config.Spec.PlansTable), opened for every
	// spec: only a chunked snapshot writes it.
	Plans      *deltalog.Table
	Checkpoint storage.Store
}

// OpenTables opens the spec's tables (no network I/O: location.Open makes clients only).
func OpenTables(ctx context.Context, spec *config.Spec) (Tables, error) {
	cfg := Location(spec)
	var t Tables
	var err error
	if t.Bronze, err = Table(ctx, spec.Bronze, cfg); err != nil {
		return Tables{}, err
	}
	if spec.FactsTable != "" {
		if t.Facts, err = Table(ctx, spec.FactsTable, cfg); err != nil {
			return Tables{}, err
		}
	}
	if t.Plans, err = Table(ctx, spec.PlansTable(), cfg); err != nil {
		return Tables{}, err
	}
	if t.Checkpoint, _, err = location.Open(ctx, spec.Checkpoint, cfg); err != nil {
		return Tables{}, err
	}
	return t, nil
}

// StreamDeps are the stream's connections for spec around src.
func StreamDeps(ctx context.Context, spec *config.Spec, src source.Source) (stream.Deps, error) {
	t, err := OpenTables(ctx, spec)
	if err != nil {
		return stream.Deps{}, err
	}
	return stream.Deps{Source: src, Bronze: t.Bronze, Facts: t.Facts, Plans: t.Plans, Checkpoint: checkpoint.New(t.Checkpoint, spec.AppID)}, nil
}

// SnapshotDeps are the full snapshot steps' connections for spec around src: bronze, the
// facts table and the checkpoint prefix as the staging area.
func SnapshotDeps(ctx context.Context, spec *config.Spec, src source.Source) (snapshot.Deps, error) {
	t, err := OpenTables(ctx, spec)
	if err != nil {
		return snapshot.Deps{}, err
	}
	return snapshot.Deps{Spec: spec, Source: src, Bronze: t.Bronze, Facts: t.Facts, Plans: t.Plans, Staging: t.Checkpoint}, nil
}

// Stream opens SQL Server and the stream's tables for spec; close closes the source.
func Stream(ctx context.Context, spec *config.Spec, getenv func(string) string) (deps stream.Deps, close func(), err error) {
	src, err := SQLServer(ctx, spec, getenv, nil)
	if err != nil {
		return stream.Deps{}, nil, err
	}
	if deps, err = StreamDeps(ctx, spec, src); err != nil {
		src.Close()
		return stream.Deps{}, nil, err
	}
	return deps, func() { src.Close() }, nil
}

// Snapshot opens SQL Server and the snapshot steps' connections of spec; close closes the
// source.
func Snapshot(ctx context.Context, spec *config.Spec, getenv func(string) string) (deps snapshot.Deps, close func(), err error) {
	src, err := SQLServer(ctx, spec, getenv, nil)
	if err != nil {
		return snapshot.Deps{}, nil, err
	}
	if deps, err = SnapshotDeps(ctx, spec, src); err != nil {
		src.Close()
		return snapshot.Deps{}, nil, err
	}
	return deps, func() { src.Close() }, nil
}

// SeedDeps are the seed steps' connections for spec around src (nil for the convert step,
// which reads no SQL Server): bronze, the facts table, the checkpoint prefix as the staging
// area, and the copy's URL opened with the spec's storage settings.
func SeedDeps(ctx context.Context, spec *config.Spec, src source.Source) (seed.Deps, error) {
	t, err := OpenTables(ctx, spec)
	if err != nil {
		return seed.Deps{}, err
	}
	cfg := Location(spec)
	return seed.Deps{Spec: spec, Source: src, Bronze: t.Bronze, Facts: t.Facts, Staging: t.Checkpoint,
		OpenCopy: func(ctx context.Context, url string) (*deltalog.Table, error) { return Table(ctx, url, cfg) }}, nil
}

// Seed opens the seed steps' connections of spec, with SQL Server when withSource (every
// step but convert); close closes the source.
func Seed(ctx context.Context, spec *config.Spec, getenv func(string) string, withSource bool) (deps seed.Deps, close func(), err error) {
	if !withSource {
		deps, err = SeedDeps(ctx, spec, nil)
		return deps, func() {}, err
	}
	src, err := SQLServer(ctx, spec, getenv, nil)
	if err != nil {
		return seed.Deps{}, nil, err
	}
	if deps, err = SeedDeps(ctx, spec, src); err != nil {
		src.Close()
		return seed.Deps{}, nil, err
	}
	return deps, func() { src.Close() }, nil
}
