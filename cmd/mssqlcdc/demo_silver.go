package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// demoSilverPath is the demo's silver table: <lake>/silver/orders, beside bronze.
func demoSilverPath(spec *config.Spec) string {
	return filepath.Join(filepath.Dir(filepath.Dir(spec.Bronze)), "silver", "orders")
}

// applyDemoSilver brings the demo's silver table up to bronze (docs/silver.md), with
// deletion vectors, and prints what the apply did.
func applyDemoSilver(ctx context.Context, spec *config.Spec, out io.Writer) error {
	cfg := connect.Location(spec)
	b, err := connect.Table(ctx, spec.Bronze, cfg)
	if err != nil {
		return err
	}
	s, err := connect.Table(ctx, demoSilverPath(spec), cfg)
	if err != nil {
		return err
	}
	res, err := silver.Apply(ctx, silver.Tables{Bronze: b, Silver: s}, silver.Options{AppID: spec.AppID, Keys: []string{"id"}})
	if err != nil {
		return fmt.Errorf("silver: %w", err)
	}
	if res.Commits > 0 {
		fmt.Fprintf(out, "silver     v%d  +%d ~%d -%d rows  %d files rewritten  %d deletion vectors\n",
			res.SilverVersion, res.Inserted, res.Updated, res.Deleted, res.FilesRemoved, res.DeletionVectors)
	}
	return nil
}

// demoSilver is what the demo found in silver: its live rows keyed like the source table,
// the live files and those with a deletion vector, and its differences from the source.
type demoSilver struct {
	state       *rebuild.State
	Rows, Files int
	WithDV      int
	Diffs       []string
}

// verifyDemoSilver applies what bronze holds to silver and compares silver with the
// simulator's table want.
func verifyDemoSilver(ctx context.Context, spec *config.Spec, want *rebuild.State) (demoSilver, error) {
	if err := applyDemoSilver(ctx, spec, io.Discard); err != nil {
		return demoSilver{}, err
	}
	s, err := readSilver(ctx, spec, demoSilverPath(spec))
	if err != nil {
		return s, err
	}
	s.Diffs = rebuild.Diff(want, s.state, 20)
	return s, nil
}

// readSilver reads the silver table at url (keyed by id, as the demo's orders table is)
// through deltalog's reader, deletion vectors applied.
func readSilver(ctx context.Context, spec *config.Spec, url string) (demoSilver, error) {
	var out demoSilver
	t, err := connect.Table(ctx, url, connect.Location(spec))
	if err != nil {
		return out, err
	}
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return out, err
	}
	for _, a := range snap.Files() {
		out.Files++
		if a.DeletionVector != nil {
			out.WithDV++
		}
	}
	sc, err := snap.ArrowSchema()
	if err != nil {
		return out, err
	}
	var cols []string
	for _, f := range sc.Fields() {
		if f.Name != silver.ColStartLSN && f.Name != silver.ColCommitTS {
			cols = append(cols, f.Name)
		}
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: cols})
	if err != nil {
		return out, err
	}
	defer it.Close()
	if out.state, err = rebuild.FromRows(ctx, scanRows{it}, []string{"id"}); err != nil {
		return out, err
	}
	out.Rows = len(out.state.Rows)
	return out, nil
}

// scanRows adapts a scan to the rows rebuild.FromRows reads.
type scanRows struct{ deltalog.RecordIterator }
