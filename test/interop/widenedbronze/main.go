// Command widenedbronze writes a bronze table whose columns were widened in place (Delta's
// type widening, docs/stream.md "Schema changes"), for the interop tests to read with
// DuckDB: a cdcsim table streamed into bronze, then, with delta.enableTypeWidening set on
// bronze, every column SQL Server widens and Delta allows widened on the source (int →
// bigint, smallint → int, decimal(9,2) → decimal(12,4), real → float, date → datetime2)
// and streamed again. Files written before the widening keep the narrow Parquet types;
// the log's schema has the wide ones, each change in the column's delta.typeChanges.
//
// Usage: widenedbronze DIR
//
// It writes DIR/bronze, DIR/facts and DIR/checkpoint and prints {"bronze": "DIR/bronze"}.
// The rows (id, then qty, small, amount, ratio, day):
//
//	before the widening: insert 1 (2147483647, 7, 1234567.89, 1.5, 2024-03-01),
//	                     insert 2 (-1, NULL, -0.01, NULL, NULL)
//	after:               insert 3 (2^40, 100000, 12345678.1234, 1e300, 2024-03-02 10:11:12.5),
//	                     update 1 (ratio 2.25)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: widenedbronze DIR")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "widenedbronze:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	db := cdcsim.New(cdcsim.Config{Seed: 5})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "qty", DataType: "int", Nullable: true},
		{Name: "small", DataType: "smallint", Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 9, Scale: 2, Nullable: true},
		{Name: "ratio", DataType: "real", Nullable: true},
		{Name: "day", DataType: "date", Nullable: true},
	}}); err != nil {
		return err
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		return err
	}
	spec := &config.Spec{AppID: "orders-widened", Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"},
		Bronze: filepath.Join(dir, "bronze"), FactsTable: filepath.Join(dir, "facts"), Checkpoint: filepath.Join(dir, "checkpoint")}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		return err
	}
	exec := func(fn func(tx *cdcsim.Txn) error) error {
		db.Advance(time.Second)
		_, err := db.Exec(fn)
		return err
	}
	for _, r := range []cdcsim.Row{
		{"id": 1, "qty": 2147483647, "small": 7, "amount": "1234567.89", "ratio": 1.5, "day": "2024-03-01"},
		{"id": 2, "qty": -1, "small": nil, "amount": "-0.01", "ratio": nil, "day": nil},
	} {
		if err := exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("orders", r); return err }); err != nil {
			return err
		}
	}
	deps, err := connect.StreamDeps(ctx, spec, db)
	if err != nil {
		return err
	}
	if err := drain(ctx, spec, deps, db); err != nil {
		return err
	}
	// ALTER TABLE bronze SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true').
	snap, err := deps.Bronze.Snapshot(ctx)
	if err != nil {
		return err
	}
	tx := deps.Bronze.Begin(snap)
	tx.SetProperties(map[string]string{deltalog.PropEnableTypeWidening: "true"})
	if _, err := tx.Commit(ctx); err != nil {
		return err
	}
	for _, c := range []source.Column{
		{Name: "qty", DataType: "bigint", Nullable: true},
		{Name: "small", DataType: "int", Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 12, Scale: 4, Nullable: true},
		{Name: "ratio", DataType: "float", Nullable: true},
		{Name: "day", DataType: "datetime2", DatetimePrecision: 7, Nullable: true},
	} {
		if _, err := db.AlterColumn("orders", c); err != nil {
			return fmt.Errorf("alter %s: %w", c.Name, err)
		}
	}
	if err := exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 3, "qty": int64(1) << 40, "small": 100000, "amount": "12345678.1234",
			"ratio": 1e300, "day": "2024-03-02T10:11:12.5"})
		return err
	}); err != nil {
		return err
	}
	if err := exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{1}, cdcsim.Row{"ratio": 2.25}) }); err != nil {
		return err
	}
	if err := drain(ctx, spec, deps, db); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]string{"bronze": spec.Bronze})
}

// drain runs the stream until it caught up.
func drain(ctx context.Context, spec *config.Spec, deps stream.Deps, db *cdcsim.DB) error {
	for range 100 {
		res, err := stream.Run(ctx, spec, deps, stream.Options{Now: db.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return err
		}
		if res.CaughtUp {
			return nil
		}
	}
	return fmt.Errorf("the stream never caught up")
}
