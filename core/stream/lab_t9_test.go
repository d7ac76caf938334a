package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// The capture-instance switch as the lab ran it (docs/operations.md "Capture-instance
// switch", docs/sql/switch_capture_instance.sql), on cdcsim: under a continuous writer,
// after a bootstrap, ADD COLUMN, then the DBA procedure: enable the new instance (the
// reading login cannot read its change table yet), grant, and once the stream has written
// capture_instance_switched and one more batch, disable the old instance. The running
// stream switches in place (every batch works out its columns: docs/stream.md "Schema
// changes"); before the grant the batch reaching the new instance fails with a
// PermissionError naming the GRANT and writes nothing. Bronze ends with no duplicate
// (_start_lsn, _seqval, _operation); the change rows below S come from the old instance and
// those from S on from the new one, counts equal to each change table's; the rebuild equals
// the table including the new column, but for the rows last changed between ADD COLUMN and
// S (their new column reads NULL until they change); the facts events are exactly snapshot_open and
// bootstrap (the snapshot), one schema_change naming the added column and one
// capture_instance_switched at S.
//
// TestLabT9SnapshotOnSwitch runs it with snapshot_on_switch, TestLabT9ChunkedSnapshotOnSwitch
// with chunked snapshots too.
func TestLabT9CaptureInstanceSwitch(t *testing.T) { labT9(t, false, config.SnapshotFull) }

// The lab's t9 with snapshot_on_switch: the stream that switched asks for the switch
// snapshot (OutcomeSwitchSnapshotRequired, while streaming on), the recover steps append a
// whole snapshot with the new instance's columns, and the rebuild equals the table,
// including the new column of rows unchanged since before S. The facts events are
// snapshot_open and bootstrap twice (the bootstrap's, and the switch snapshot's, kind
// switch), one schema_change and one capture_instance_switched.
func TestLabT9SnapshotOnSwitch(t *testing.T) { labT9(t, true, config.SnapshotFull) }

// The lab's t9 with snapshot_on_switch and snapshot "chunked": the bootstrap is a chunked
// snapshot the backfill completes; the invocation that switches opens a chunked snapshot
// of kind switch itself (no outcome, nothing read from the table) and streams on; the
// backfill's waves read the new instance's columns and complete it with a bootstrap row of
// the switch. The rebuild (from the facts' completed snapshots) equals the table, including
// the new column of rows unchanged since before S; the facts events are those of
// TestLabT9SnapshotOnSwitch, besides the chunked snapshots' snapshot_plan and
// snapshot_chunk progress rows.
func TestLabT9ChunkedSnapshotOnSwitch(t *testing.T) { labT9(t, true, config.SnapshotChunked) }

func labT9(t *testing.T, onSwitch bool, mode string) {
	ctx := context.Background()
	e := newEnv(t, cdcsim.Config{Seed: 9})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	e.spec.SnapshotOnSwitch = onSwitch
	chunked := mode == config.SnapshotChunked
	if chunked {
		e.spec.Snapshot = config.SnapshotChunked
		cr, zero, one := int64(4), 0.0, 1
		e.spec.ChunkRows, e.spec.MinHeadroomHours, e.spec.TargetWaveSeconds, e.spec.MaxWaves = &cr, &zero, &zero, &one
		e.spec.Options.NumPartitions = 1
		e.spec.Defaults()
		if err := e.spec.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	next, region := 1, false
	// last is the LSN of each key's last change, for keys whose region has a value.
	last := map[int]lsn.LSN{}
	// write is the continuous writer: an insert, and an update of an earlier row.
	write := func() {
		t.Helper()
		id := next
		next++
		l := e.exec(func(tx *cdcsim.Txn) error {
			row := cdcsim.Row{"id": id, "amount": id}
			if region {
				row["region"] = "r" + string(rune('a'+id%26))
			}
			_, err := tx.Insert("orders", row)
			return err
		})
		if region {
			last[id] = l
		}
		if id > 3 {
			l := e.exec(func(tx *cdcsim.Txn) error {
				upd := cdcsim.Row{"amount": id * 10}
				if region {
					upd["region"] = "u" + string(rune('a'+id%26))
				}
				return tx.Update("orders", []any{id - 3}, upd)
			})
			if region {
				last[id-3] = l
			}
		}
	}
	for i := 0; i < 8; i++ {
		write()
	}
	var stamp lsn.LSN
	if chunked {
		// The stream's first run opens the chunked bootstrap at S0; the backfill reads it
		// while the writer goes on.
		e.mustDrain(Options{})
		write()
		st := e.backfillDone()
		var err error
		if stamp, err = lsn.Parse(st.Snapshot); err != nil {
			t.Fatal(err)
		}
	} else {
		snapDeps := snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Facts: e.lake.RawTable(e.spec.FactsTable),
			Staging: e.lake.RawStore(e.spec.Checkpoint), Options: snapshot.Options{Now: e.db.Now}}
		snap, err := snapshot.Run(ctx, snapDeps)
		if err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
		stamp = snap.LSN
	}
	write()
	e.mustDrain(Options{})
	write()

	// ADD COLUMN: the old instance goes on without it.
	if _, err := e.db.AddColumn("orders", source.Column{Name: "region", DataType: "varchar", MaxLength: 10, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	region = true
	write()
	e.mustDrain(Options{})
	write()

	// 1. Enable the new instance; the reading login has no SELECT on its change table yet.
	e.db.DenySelect("dbo_orders_v2")
	v2, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v2"})
	if err != nil {
		t.Fatal(err)
	}
	S := v2.StartLSN
	write()
	write()
	before := e.bronzeVersion()
	res, err := e.run(Options{})
	var pe *source.PermissionError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "GRANT SELECT ON cdc.[dbo_orders_v2_CT]") {
		t.Fatalf("a batch reaching the new instance before the grant: %+v, %v; want a PermissionError naming the GRANT", res, err)
	}
	if v := e.bronzeVersion(); v != before {
		t.Fatalf("the refused batch wrote bronze (version %d, was %d)", v, before)
	}
	// 2. Grant; 3. the stream switches in place.
	e.db.GrantSelect("dbo_orders_v2")
	write()
	e.mustDrain(Options{})
	switched := false
	for _, r := range e.factsRows() {
		switched = switched || r.Event == facts.EventCaptureInstanceSwitched
	}
	if !switched {
		t.Fatal("no capture_instance_switched row after the stream passed S")
	}
	var switchSnap lsn.LSN
	wholes := 1 // the bootstrap's, in bronze; chunked snapshots are whole only by their facts row
	if chunked {
		wholes = 0
	}
	if onSwitch && chunked {
		// The invocation that switched opened the chunked switch snapshot; it asks for
		// nothing, streams on, and the backfill reads the snapshot in waves beside it.
		switchSnap = e.assertChunkedSwitchOpen(S)
		write()
		res, err := e.run(Options{})
		if err != nil || res.Outcome != "" || res.Batches == 0 {
			t.Fatalf("stream after the switch: %+v, %v; want it to stream with no outcome", res, err)
		}
		if st := e.backfill(); st.State != snapshot.StateRunning || st.Snapshot != switchSnap.String() {
			t.Fatalf("first wave of the switch snapshot: %+v", st)
		}
		write()
		e.mustDrain(Options{})
		if st := e.backfillDone(); st.Snapshot != switchSnap.String() {
			t.Fatalf("backfill completed %s, want the switch snapshot %s", st.Snapshot, switchSnap)
		}
	} else if onSwitch {
		// The stream asks for the switch snapshot on every invocation until it is
		// committed, streaming as usual; the recover steps take it.
		write()
		res, err := e.run(Options{})
		if err != nil || res.Outcome != OutcomeSwitchSnapshotRequired || res.Switch == nil || res.Switch.S != S ||
			res.Switch.To != "dbo_orders_v2" || res.Batches == 0 {
			t.Fatalf("stream after the switch: %+v (switch %+v), %v; want it to stream and ask for the switch snapshot at S %s", res, res.Switch, err, S)
		}
		cr, err := Recover(ctx, e.recoverDeps())
		if err != nil {
			t.Fatalf("switch snapshot: %v", err)
		}
		if !S.Less(cr.Snapshot.LSN) || cr.Rows == nil || *cr.Rows != int64(next-1) || cr.Version < 0 {
			t.Fatalf("switch snapshot %+v, want above S %s with the table's %d rows", cr, S, next-1)
		}
		switchSnap = cr.Snapshot.LSN
		if res, err := e.run(Options{}); err != nil || res.Outcome != "" {
			t.Fatalf("stream after the switch snapshot: %+v, %v", res, err)
		}
		wholes = 2
	}
	if n := e.wholeSnapshots(); n != wholes {
		t.Errorf("bronze holds %d whole snapshots, want %d", n, wholes)
	}
	// 4. One more batch, then 5. disable the old instance; the stream keeps going.
	write()
	e.mustDrain(Options{})
	oldBelowS := e.countChanges("dbo_orders", stamp.Next(), S.Prev())
	if err := e.db.DisableCapture("dbo_orders"); err != nil {
		t.Fatal(err)
	}
	write()
	write()
	e.mustDrain(Options{})
	max, err := e.db.MaxLSN(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newFromS := e.countChanges("dbo_orders_v2", S, max)

	below, from, dups := e.bronzeChangesAround(S)
	if dups != 0 {
		t.Errorf("bronze holds %d duplicate (_start_lsn, _seqval, _operation)", dups)
	}
	if below != oldBelowS || from != newFromS || below == 0 || from == 0 {
		t.Errorf("bronze change rows below S %d, from S %d; change tables: dbo_orders %d, dbo_orders_v2 %d", below, from, oldBelowS, newFromS)
	}
	st, lg := e.rebuilt() // from the newest complete snapshot, the facts' included (docs/bronze.md)
	if onSwitch && lg.Newest != switchSnap.String() {
		t.Errorf("rebuild point %s, want the switch snapshot's %s", lg.Newest, switchSnap)
	}
	if columnIndex(st.Columns, "region") < 0 {
		t.Fatalf("bronze columns %v lack the new column", st.Columns)
	}
	// The rebuild equals the table but for the rows whose last change came between ADD
	// COLUMN and S: the old instance did not capture the new column, so bronze holds NULL
	// for it until the row changes again, unless snapshot_on_switch filled it.
	var unfilled []string
	for id, l := range last {
		if l.Less(S) && !onSwitch {
			unfilled = append(unfilled, fmt.Sprintf("key %d: region = NULL, want ", id))
		}
	}
	sort.Strings(unfilled)
	d := rebuild.Diff(e.sourceState(), st, 100)
	sort.Strings(d)
	ok := len(d) == len(unfilled) && (len(d) > 0 || onSwitch)
	for i := 0; ok && i < len(d); i++ {
		ok = strings.HasPrefix(d[i], unfilled[i])
	}
	if !ok {
		t.Errorf("rebuilt state differs from the table:\n%s\nwant only the rows last changed between ADD COLUMN and S, in region:\n%s", joinLines(d), joinLines(unfilled))
	}
	var events []string
	progress := map[string]int{}
	for _, r := range e.factsRows() {
		if r.Event == "" {
			continue
		}
		if r.Event == facts.EventSnapshotPlan || r.Event == facts.EventSnapshotChunk {
			progress[r.MaxLSN]++ // a chunked snapshot's progress rows
			continue
		}
		events = append(events, r.Event)
		switch r.Event {
		case facts.EventSchemaChange:
			if !strings.Contains(r.Detail, "region") {
				t.Errorf("schema_change row does not name the added column: %+v", r)
			}
		case facts.EventCaptureInstanceSwitched:
			if r.MinLSN != S.String() || !strings.Contains(r.Detail, "dbo_orders -> dbo_orders_v2") {
				t.Errorf("capture_instance_switched row %+v, want at S %s", r, S)
			}
		case facts.EventBootstrap, facts.EventSnapshotOpen:
			if r.MaxLSN == switchSnap.String() {
				want := `"switch":"dbo_orders -> dbo_orders_v2","s":"` + S.String() + `"`
				if r.Event == facts.EventSnapshotOpen {
					want = `"kind":"switch"`
				}
				if !strings.Contains(r.Detail, want) || r.AppID != e.spec.AppID {
					t.Errorf("switch snapshot's %s row %+v, want detail with %s", r.Event, r, want)
				}
			}
		}
	}
	sort.Strings(events)
	want := []string{facts.EventBootstrap, facts.EventCaptureInstanceSwitched, facts.EventSchemaChange, facts.EventSnapshotOpen}
	if onSwitch {
		want = append(want, facts.EventBootstrap, facts.EventSnapshotOpen)
	}
	sort.Strings(want)
	if strings.Join(events, ",") != strings.Join(want, ",") {
		t.Errorf("facts events %v, want exactly %v", events, want)
	}
	if chunked && (progress[stamp.String()] == 0 || onSwitch && progress[switchSnap.String()] == 0) || !chunked && len(progress) > 0 {
		t.Errorf("snapshot_plan and snapshot_chunk rows by snapshot: %v (bootstrap %s, switch %s)", progress, stamp, switchSnap)
	}
}

// countChanges counts the change rows capture instance ci holds from from to to.
func (e *env) countChanges(ci string, from, to lsn.LSN) int64 {
	e.t.Helper()
	ctx := context.Background()
	rows, err := e.db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: from, To: to})
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var n int64
	for {
		rec, err := rows.Next(ctx)
		if err == io.EOF {
			return n
		}
		if err != nil {
			e.t.Fatal(err)
		}
		n += rec.NumRows()
		rec.Release()
	}
}

// bronzeChangesAround counts bronze's change rows with _start_lsn below s and from s on,
// and the duplicates among all its change rows.
func (e *env) bronzeChangesAround(s lsn.LSN) (below, from, dups int64) {
	e.t.Helper()
	ctx := context.Background()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer it.Close()
	seen := map[string]bool{}
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return below, from, dups
		}
		if err != nil {
			e.t.Fatal(err)
		}
		ls, _ := rec.Column(rec.Schema().FieldIndices(bronze.ColStartLSN)[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			id, op, ok := changeID(rec, i)
			if !ok || ls == nil {
				e.t.Fatal("bronze lacks metadata columns")
			}
			if op == bronze.OpSnapshot {
				continue
			}
			if seen[id] {
				dups++
			}
			seen[id] = true
			l, err := lsn.Parse(ls.Value(i))
			if err != nil {
				e.t.Fatal(err)
			}
			if l.Less(s) {
				below++
			} else {
				from++
			}
		}
		rec.Release()
	}
}
