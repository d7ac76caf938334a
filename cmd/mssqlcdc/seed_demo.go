package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// The demo's --bootstrap seed: instead of a snapshot, a copy of dbo.orders is exported
// while the workload runs, the way a user's nightly export is (a key range at a time, over
// a span of time), and bronze is seeded from it with as_of taken before the export started
// (docs/seed.md).

// demoCopyParts is how many key ranges (Parquet files) the demo's export writes.
const demoCopyParts = 4

// demoCopyPause is the pause between two ranges of the export, so the workload commits
// between its reads: commits after as_of are partly in the copy, as in a real export.
const demoCopyPause = 150 * time.Millisecond

// demoCopyDir is where the demo's export goes under the lake.
func demoCopyDir(spec *config.Spec) string {
	return filepath.Join(filepath.Dir(filepath.Dir(spec.Bronze)), "copy", "orders")
}

// exportCopy writes dbo.orders of src into Parquet files under dir (created, emptied
// first): ids split at bounds into len(bounds)+1 key ranges, one file each, with pause
// between two reads (between, when not nil, runs there instead of sleeping). The files hold
// the table's columns as the source reads them, zstd-compressed (as Databricks and
// DuckDB exports often are): the seed copies the chunks bronze takes as they are, so the
// demo's bronze mixes zstd chunks with its own Snappy ones (docs/seed.md § Conversion),
// which every reader of the demo's tables must read. It returns
// the rows written.
func exportCopy(ctx context.Context, src source.Source, dir string, bounds []int64, between func() error) (int64, error) {
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	cols, err := src.CapturedColumns(ctx, "dbo_orders")
	if err != nil {
		return 0, err
	}
	var id source.Column
	for _, c := range cols {
		if c.Name == "id" {
			id = c
		}
	}
	var total int64
	for i := 0; i <= len(bounds); i++ {
		if i > 0 && between != nil {
			if err := between(); err != nil {
				return total, err
			}
		}
		r := source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols, Keys: []source.Column{id}}
		if i > 0 {
			r.Range.Lo = source.Key{bounds[i-1]}
		}
		if i < len(bounds) {
			r.Range.Hi = source.Key{bounds[i]}
		}
		n, err := exportRange(ctx, src, r, filepath.Join(dir, fmt.Sprintf("part-%05d.zstd.parquet", i)))
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// exportRange writes one key range into the Parquet file path.
func exportRange(ctx context.Context, src source.Source, r source.TableRead, path string) (int64, error) {
	rows, err := src.ReadTable(ctx, r)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var buf bytes.Buffer
	var w *pqarrow.FileWriter
	var n int64
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		if w == nil {
			w, err = pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
				pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			if err != nil {
				rec.Release()
				return n, err
			}
		}
		err = w.Write(rec)
		n += rec.NumRows()
		rec.Release()
		if err != nil {
			return n, err
		}
	}
	if w == nil { // an empty range: no file, as an export writes none
		return 0, nil
	}
	if err := w.Close(); err != nil {
		return n, err
	}
	return n, os.WriteFile(path, buf.Bytes(), 0o644)
}

// demoSeed exports the copy while the workload runs, then seeds bronze from it with as_of
// the simulated server's time before the export started, and returns the seed's LSN: the
// stream starts after it.
func demoSeed(ctx context.Context, o demoOptions, spec *config.Spec, ds *demoSource, out io.Writer) (lsn.LSN, error) {
	dir := demoCopyDir(spec)
	asOf, err := exportAsOf(ctx, ds.db)
	if err != nil {
		return lsn.Zero, err
	}
	began := time.Now()
	var bounds []int64
	for i := 1; i < demoCopyParts; i++ {
		bounds = append(bounds, int64(o.Rows*i/demoCopyParts))
	}
	rows, err := exportCopy(ctx, ds.db, dir, bounds, func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(demoCopyPause):
			return nil
		}
	})
	if err != nil {
		return lsn.Zero, fmt.Errorf("export the copy: %w", err)
	}
	fmt.Fprintf(out, "copy:     %d rows of dbo.orders exported to %s in %.1fs while the workload ran (as a nightly export; as_of %s, before it started)\n",
		rows, dir, time.Since(began).Seconds(), asOf.Format(time.RFC3339Nano))
	deps, err := connect.SeedDeps(ctx, spec, ds.db)
	if err != nil {
		return lsn.Zero, err
	}
	began = time.Now()
	res, err := seed.Run(ctx, deps, seed.Request{Copy: dir, AsOf: asOf.Format(time.RFC3339Nano)})
	if err != nil {
		return lsn.Zero, fmt.Errorf("seed: %w", err)
	}
	n := int64(0)
	if res.Commit.Rows != nil {
		n = *res.Commit.Rows
	}
	fmt.Fprintf(out, "seed:     %d rows of %d files at %s in %.1fs, one Delta commit; the stream starts after it\n",
		n, res.Plan.Files, res.Offset, time.Since(began).Seconds())
	return res.Offset.LSN, nil
}

// exportAsOf is the as_of of an export starting now on db: the simulated server's time
// (SQL Server's own clock, docs/seed.md § as_of). A time maps to the last commit at or
// before it to the second, so when no commit is that old yet (the rows were loaded before
// CDC was enabled, or within this second), the capture job's idle entry of a quiet
// database is written first and the clock moves a second on. The export's first read
// starts a second after as_of: as_of promises that every commit at or before it is in the
// copy, and a workload commit at the very instant of as_of (the simulated clock can sit on
// a whole second) would break that promise.
func exportAsOf(ctx context.Context, db *cdcsim.DB) (time.Time, error) {
	if _, ok, err := db.LSNAtOrBefore(ctx, db.Now()); err != nil {
		return time.Time{}, err
	} else if !ok {
		db.Idle()
		db.Advance(time.Second)
	}
	asOf := db.Now().UTC()
	db.Advance(time.Second)
	return asOf, nil
}

// exportRequest is the event of invoke's _export (--sim): the copy's folder (a local
// path), how many key ranges (files) it is read in, and the workload transactions
// committed between two reads.
type exportRequest struct {
	To    string `json:"to"`
	Parts int    `json:"parts"`
	Steps int    `json:"steps"`
}

// export (only with --sim) writes a copy of the simulated dbo.orders as a nightly export
// does, the workload committing between its reads, and returns what a seed of it needs:
// as_of (the simulated server's time before the first read), max_lsn before and after the
// export, the rows written and the table reads it made.
func (inv *invoker) export(ctx context.Context, raw []byte) (any, error) {
	if inv.ds == nil {
		return nil, &RequestError{Reason: "_export needs --sim"}
	}
	var req exportRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, &RequestError{Reason: "_export: " + err.Error()}
	}
	if req.To == "" || strings.Contains(req.To, "://") || req.Parts < 1 || req.Steps < 0 {
		return nil, &RequestError{Reason: `_export wants {"to": a local directory, "parts": n >= 1, "steps": n >= 0}`}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	db := inv.ds.db
	asOf, err := exportAsOf(ctx, db)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	before, err := db.MaxLSN(ctx)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	var bounds []int64
	for i := 1; i < req.Parts; i++ {
		bounds = append(bounds, int64(simRows*i/req.Parts))
	}
	reads := db.Calls("ReadTable")
	rows, err := exportCopy(ctx, db, req.To, bounds, func() error { return inv.ds.gen.Step(req.Steps) })
	inv.exportReads += db.Calls("ReadTable") - reads
	if err != nil {
		return nil, &SimulatorError{Err: fmt.Errorf("_export: %w", err)}
	}
	after, err := db.MaxLSN(ctx)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	return map[string]any{"as_of": asOf.Format(time.RFC3339Nano), "max_lsn_before": before, "max_lsn_after": after,
		"rows": rows, "reads": db.Calls("ReadTable") - reads}, nil
}
