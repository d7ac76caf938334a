package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Timeout bounds one contract test; a real server's idle entry takes about five minutes.
const Timeout = 10 * time.Minute

// Run runs every contract test against the harness, each as a named subtest.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(context.Context, *testing.T, Env)
	}{
		{"MultiStatementTransactionReadsAs234341", testMultiStatement},
		{"UpdatePairSharesSeqvalAndCommandID", testUpdatePair},
		{"EmptyIntervalReadsNothing", testEmptyInterval},
		{"PurgedRangeReadsEmptyAndMinLSNMoved", testPurgedRange},
		{"MaxLSNAdvancesOnIdleDatabase", testIdleAdvances},
		{"NewInstanceStartLSNAboveMaxLSN", testNewInstanceStart},
		{"CommandIDDiffersBetweenInstances", testCommandIDPerInstance},
		{"TimeToLSNBiasesEarlier", testTimeToLSN},
		{"LSNOrderIsCommitOrder", testCommitOrder},
		{"CommitTimeExactAndAtOrBefore", testCommitTime},
		{"NthCommitAfterCountsIdleEntries", testNthCommitAfter},
		{"SplitChangesKeepsCommitsWhole", testSplitChanges},
		{"KeyBucketsFloorNegatives", testKeyBuckets},
		{"KeyBucketsOfDatesCountDays", testKeyBucketsDate},
		{"CompositeRangesTileTable", testCompositeTiles},
		{"CaseInsensitiveRangesTileTable", testCaseInsensitiveTiles},
		{"KeyBoundChainTilesTable", testKeyBoundChain},
		{"KeyAfterSkipsTheWholeValue", testKeyAfter},
		{"KeyTilesFollowNTILE", testKeyTilesNTILE},
		{"SizeEstimateFollowsRowWidth", testSizeEstimate},
		{"UnknownCaptureInstanceIsNotFound", testUnknownInstance},
		{"BadInputIsInvalidArgument", testBadInput},
		{"RowsAfterCloseAreClosed", testRowsAfterClose},
		{"AbsentAndDroppedColumns", testAbsentColumns},
		{"BatchesAreBounded", testBatchesBounded},
		{"PingAndNetworkWait", testPingAndNetworkWait},
		{"RestoreRewindIsRefused", testRestoreRewind},
		{"LaggingReplicaReadIsRefused", testLaggingReplica},
		{"LaggingReplicaTableReadIsRefused", testLaggingReplicaTableRead},
		{"RangePastMaxLSNIsRefused", testRangePastMaxLSN},
		{"ComputedColumnsReadNULL", testComputedColumns},
		{"UniqueidentifierOrderIsSQLServers", testGUIDOrder},
		{"LOBBeforeImagesFollowMicrosoftRules", testLOBBeforeImages},
		{"CleanupMarkIsAMappingEntry", testCleanupMarkIsAMappingEntry},
		{"CleanupStopsAtFirstEntryOfSameTime", testCleanupStopsAtFirstEntryOfSameTime},
		{"DefaultCollationIsCaseInsensitive", testDefaultCollationCaseInsensitive},
		{"EveryTypeReadsAsDocumented", testEveryType},
		{"LockTimeoutAndSnapshotIsolation", testLockTimeoutAndSnapshot},
		{"KeyUpdateEitherShape", testKeyUpdateShapes},
		{"AlterTableDDLHistory", testDDLHistory},
		{"CaptureInstanceSwitch", testInstanceSwitch},
		{"MultiRowStatementsOneSeqvalPerRow", testMultiRowStatements},
		{"CleanupDuringARead", testCleanupDuringRead},
		{"CommitTimesAcrossAFallBack", testCommitTimesAcrossFallBack},
		{"PermissionProbeNamesTheGrant", testPermissionProbe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			tc.fn(ctx, t, h.Open(t))
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ordersTable creates a table "orders"(id int key, v int, note nvarchar(40)) with instance
// "orders_ci" and returns the physical table and instance names.
func ordersTable(ctx context.Context, t *testing.T, env Env) (string, string) {
	t.Helper()
	must(t, env.CreateTable(ctx, Table{Name: "orders", Columns: [][2]string{{"id", "int"}, {"v", "int"}, {"note", "nvarchar(40)"}}, Key: []string{"id"}, Instance: "orders_ci"}))
	return "orders", env.Name("orders_ci")
}

func maxLSN(ctx context.Context, t *testing.T, src source.Source) lsn.LSN {
	t.Helper()
	l, err := src.MaxLSN(ctx)
	must(t, err)
	return l
}

func ops(rows []ChangeRow) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r.Op)
	}
	return out
}

// lastCommit is the start LSN of the newest change row in (after, max].
func lastCommit(ctx context.Context, t *testing.T, env Env, ci string, after lsn.LSN) lsn.LSN {
	t.Helper()
	rows := ReadChanges(ctx, t, env.Source(), ci, after.Next(), maxLSN(ctx, t, env.Source()))
	if len(rows) == 0 {
		t.Fatalf("no change rows after %s", after)
	}
	return rows[len(rows)-1].Start
}

// An insert, two updates and a delete of another row in one transaction read as
// operations 2,3,4,3,4,1 under the (start_lsn, command_id, seqval, operation) order (lab t3).
func testMultiStatement(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 0})))
	before := maxLSN(ctx, t, env.Source())
	must(t, env.Exec(ctx,
		Insert(tbl, map[string]any{"id": 1, "v": 1}),
		Update(tbl, []any{1}, map[string]any{"v": 2}),
		Update(tbl, []any{1}, map[string]any{"v": 3}),
		Delete(tbl, 2)))
	rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), maxLSN(ctx, t, env.Source()))
	if got, want := ops(rows), []int{2, 3, 4, 3, 4, 1}; !slices.Equal(got, want) {
		t.Fatalf("operations %v, want %v", got, want)
	}
	for _, r := range rows[1:] {
		if r.Start != rows[0].Start {
			t.Fatalf("one transaction, two start LSNs: %s and %s", rows[0].Start, r.Start)
		}
	}
	if rows[2].Values["v"] != int64(2) || rows[4].Values["v"] != int64(3) || rows[5].Values["id"] != int64(2) {
		t.Fatalf("images: %+v", rows)
	}
}

// An update's 3 and 4 share seqval and command_id; only the operation orders them.
func testUpdatePair(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	before := maxLSN(ctx, t, env.Source())
	must(t, env.Exec(ctx, Update(tbl, []any{1}, map[string]any{"v": 5})))
	rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), maxLSN(ctx, t, env.Source()))
	if len(rows) != 2 || rows[0].Op != 3 || rows[1].Op != 4 {
		t.Fatalf("rows %+v, want a 3 and a 4", rows)
	}
	if rows[0].Seqval != rows[1].Seqval || rows[0].CommandID != rows[1].CommandID {
		t.Fatalf("3 and 4 differ in seqval or command_id: %+v", rows)
	}
	if rows[0].Values["v"] != int64(1) || rows[1].Values["v"] != int64(5) {
		t.Fatalf("before/after images: %v %v", rows[0].Values, rows[1].Values)
	}
}

// An interval with from > to reads no rows and no error.
func testEmptyInterval(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	m := maxLSN(ctx, t, env.Source())
	if rows := ReadChanges(ctx, t, env.Source(), ci, m, m.Prev()); len(rows) != 0 {
		t.Fatalf("from > to read %d rows", len(rows))
	}
}

// Cleanup moves min LSN; the purged range then reads as empty, without an error
// (docs/reference/lab-findings.md §3, docs/reference/sqlserver-cdc.md §5.2).
func testPurgedRange(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	for i := 1; i <= 3; i++ {
		must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": i, "v": i})))
		must(t, env.Sleep(ctx, 2*time.Second))
	}
	all := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source()))
	if len(all) != 3 {
		t.Fatalf("%d rows before cleanup, want 3", len(all))
	}
	oldMin, err := env.Source().MinLSN(ctx, ci)
	must(t, err)
	must(t, env.Cleanup(ctx, ci, all[2].Start))
	newMin, err := env.Source().MinLSN(ctx, ci)
	must(t, err)
	if newMin.Compare(oldMin) <= 0 || newMin.Compare(all[2].Start) > 0 {
		t.Fatalf("min LSN %s -> %s, want it moved up to at most %s", oldMin, newMin, all[2].Start)
	}
	if rows := ReadChanges(ctx, t, env.Source(), ci, all[0].Start, newMin.Prev()); len(rows) != 0 {
		t.Fatalf("purged range read %d rows", len(rows))
	}
	if rows := ReadChanges(ctx, t, env.Source(), ci, newMin, maxLSN(ctx, t, env.Source())); len(rows) == 0 || rows[len(rows)-1].Start != all[2].Start {
		t.Fatalf("rows from min LSN: %+v", rows)
	}
}

// With no writes, capture's idle entries still move max LSN (lab t1).
func testIdleAdvances(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	before := maxLSN(ctx, t, env.Source())
	must(t, env.Idle(ctx))
	after := maxLSN(ctx, t, env.Source())
	if after.Compare(before) <= 0 {
		t.Fatalf("max LSN %s did not advance past %s", after, before)
	}
	if rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), after); len(rows) != 0 {
		t.Fatalf("idle entries brought %d change rows", len(rows))
	}
}

// A just-enabled instance's start_lsn is above max LSN and min LSN reports it as not found
// until capture passes it (docs/reference/sqlserver-cdc.md §4.4); then min LSN is
// start_lsn.
func testNewInstanceStart(ctx context.Context, t *testing.T, env Env) {
	tbl, _ := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	must(t, env.EnableCapture(ctx, tbl, "orders_v2"))
	v2 := env.Name("orders_v2")
	list, err := env.Source().CaptureInstances(ctx)
	must(t, err)
	ci, err := source.Resolve(list, v2)
	must(t, err)
	if m := maxLSN(ctx, t, env.Source()); ci.StartLSN.Compare(m) <= 0 {
		t.Fatalf("start_lsn %s not above max LSN %s", ci.StartLSN, m)
	}
	var nf *source.CaptureInstanceNotFoundError
	if _, err := env.Source().MinLSN(ctx, v2); !errors.As(err, &nf) {
		t.Fatalf("MinLSN before capture: %v, want *CaptureInstanceNotFoundError", err)
	}
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	min2, err := env.Source().MinLSN(ctx, v2)
	must(t, err)
	if min2 != ci.StartLSN {
		t.Fatalf("MinLSN %s, want start_lsn %s", min2, ci.StartLSN)
	}
	rows := ReadChanges(ctx, t, env.Source(), v2, lsn.Zero, maxLSN(ctx, t, env.Source()))
	if len(rows) != 1 || rows[0].Values["id"] != int64(2) {
		t.Fatalf("new instance rows %+v, want only the insert after it", rows)
	}
}

// Two instances of one table number command_id differently; (start_lsn, seqval,
// operation) identifies a change across them (docs/reference/sqlserver-cdc.md §3.3).
func testCommandIDPerInstance(ctx context.Context, t *testing.T, env Env) {
	tbl, ci1 := ordersTable(ctx, t, env)
	must(t, env.EnableCapture(ctx, tbl, "orders_v2"))
	ci2 := env.Name("orders_v2")
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1}), Update(tbl, []any{1}, map[string]any{"v": 2})))
	m := maxLSN(ctx, t, env.Source())
	a := ReadChanges(ctx, t, env.Source(), ci1, lsn.Zero, m)
	b := ReadChanges(ctx, t, env.Source(), ci2, lsn.Zero, m)
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("rows %d and %d, want 3 each", len(a), len(b))
	}
	differ := false
	for i := range a {
		if a[i].Start != b[i].Start || a[i].Seqval != b[i].Seqval || a[i].Op != b[i].Op {
			t.Fatalf("row %d: %+v vs %+v, want the same (start_lsn, seqval, operation)", i, a[i], b[i])
		}
		differ = differ || a[i].CommandID != b[i].CommandID
	}
	if !differ {
		t.Fatalf("command_id equal in both instances: %v", a)
	}
}

// time→LSN truncates to whole seconds and never answers a later commit
// (docs/reference/sqlserver-cdc.md §2.6).
func testTimeToLSN(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	must(t, env.Sleep(ctx, 1500*time.Millisecond))
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	rows := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source()))
	a, b := rows[0].Start, rows[1].Start
	tb, ok, err := env.Source().CommitTime(ctx, b)
	must(t, err)
	if !ok {
		t.Fatalf("no commit time for %s", b)
	}
	got, ok, err := env.Source().LSNAtOrBefore(ctx, tb)
	must(t, err)
	if !ok || got.Compare(b) > 0 || got.Compare(a) < 0 {
		t.Fatalf("LSNAtOrBefore(%v) = %s, %v; want in [%s, %s]", tb, got, ok, a, b)
	}
	if tb.Truncate(time.Second).Before(tb) && got == b {
		t.Fatalf("LSNAtOrBefore(%v) = %s, want a commit before it (time truncated to seconds)", tb, got)
	}
	if later, _, err := env.Source().LSNAtOrBefore(ctx, tb.Add(2*time.Second)); err != nil || later.Compare(b) < 0 {
		t.Fatalf("LSNAtOrBefore(%v) = %s, %v; want at least %s", tb.Add(2*time.Second), later, err, b)
	}
	if _, ok, err := env.Source().LSNAtOrBefore(ctx, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || ok {
		t.Fatalf("a time before every commit: ok %v, err %v", ok, err)
	}
}

// A transaction begun first and committed last gets the higher commit LSN, although its
// seqval is lower: LSN order is commit order, not begin order (lab t4).
func testCommitOrder(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	long, err := env.Begin(ctx)
	must(t, err)
	must(t, long.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	short, err := env.Begin(ctx)
	must(t, err)
	must(t, short.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	must(t, short.Commit(ctx))
	must(t, env.Sleep(ctx, 100*time.Millisecond))
	must(t, long.Commit(ctx))
	must(t, env.WaitCaptured(ctx))
	rows := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source()))
	if len(rows) != 2 || rows[0].Values["id"] != int64(2) || rows[1].Values["id"] != int64(1) {
		t.Fatalf("rows %+v, want the short transaction first", rows)
	}
	if rows[0].Start.Compare(rows[1].Start) >= 0 {
		t.Fatalf("commit LSNs %s, %s not in commit order", rows[0].Start, rows[1].Start)
	}
	if rows[1].Seqval.Compare(rows[0].Seqval) >= 0 {
		t.Fatalf("seqval %s of the long transaction not below %s: seqval follows begin order", rows[1].Seqval, rows[0].Seqval)
	}
	if rows[1].CommitTS.Before(rows[0].CommitTS) {
		t.Fatalf("commit times regress in LSN order: %v then %v", rows[0].CommitTS, rows[1].CommitTS)
	}
}

// CommitTime matches commit LSNs exactly; CommitAtOrBefore finds the last commit at or
// before any LSN (docs/reference/sqlserver-cdc.md §2.5).
func testCommitTime(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	l := lastCommit(ctx, t, env, ci, lsn.Zero)
	ct, ok, err := env.Source().CommitTime(ctx, l)
	must(t, err)
	if !ok || ct.Location() != time.UTC || ct.Nanosecond()%int(time.Millisecond) != 0 {
		t.Fatalf("CommitTime(%s) = %v, %v; want a UTC time in whole milliseconds", l, ct, ok)
	}
	for _, x := range []lsn.LSN{l.Prev(), l.Next(), lsn.Zero} {
		if _, ok, err := env.Source().CommitTime(ctx, x); err != nil || ok {
			t.Fatalf("CommitTime(%s) ok=%v err=%v, want not found", x, ok, err)
		}
	}
	c, ok, err := env.Source().CommitAtOrBefore(ctx, l.Next())
	must(t, err)
	if !ok || c.LSN != l || !c.Time.Equal(ct) {
		t.Fatalf("CommitAtOrBefore(%s) = %+v, %v; want %s at %v", l.Next(), c, ok, l, ct)
	}
	if _, ok, err := env.Source().CommitAtOrBefore(ctx, lsn.MustParse("0x01")); err != nil || ok {
		t.Fatalf("CommitAtOrBefore below every commit: ok %v err %v", ok, err)
	}
}

// NthCommitAfter counts every mapping row: idle entries too
// (docs/reference/sqlserver-cdc.md §2.1).
func testNthCommitAfter(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	a := lastCommit(ctx, t, env, ci, lsn.Zero)
	must(t, env.Idle(ctx))
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	b := lastCommit(ctx, t, env, ci, a)
	first, ok, err := env.Source().NthCommitAfter(ctx, a, 1)
	must(t, err)
	if !ok || first.Compare(a) <= 0 || first.Compare(b) >= 0 {
		t.Fatalf("first commit after %s = %s, want the idle entry between it and %s", a, first, b)
	}
	last, ok, err := env.Source().NthCommitAfter(ctx, a, 1_000_000)
	must(t, err)
	if m := maxLSN(ctx, t, env.Source()); !ok || last != m {
		t.Fatalf("NthCommitAfter(n large) = %s, want max LSN %s", last, m)
	}
	if _, ok, err := env.Source().NthCommitAfter(ctx, maxLSN(ctx, t, env.Source()), 1); err != nil || ok {
		t.Fatalf("after max LSN: ok %v err %v", ok, err)
	}
	var inv *source.InvalidArgumentError
	if _, _, err := env.Source().NthCommitAfter(ctx, a, 0); !errors.As(err, &inv) {
		t.Fatalf("n = 0: %v, want *InvalidArgumentError", err)
	}
}

// SplitChanges ends every tile on a commit LSN, so a commit is never split, and the tiles
// rows add up to the range's. (Per tile, Rows may be NTILE's count or the exact count of
// the tile's LSN range; only the sum is the contract.)
func testSplitChanges(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	id := 0
	for tx := 0; tx < 4; tx++ {
		var stmts []Stmt
		for i := 0; i < 5; i++ {
			id++
			stmts = append(stmts, Insert(tbl, map[string]any{"id": id, "v": tx}))
		}
		must(t, env.Exec(ctx, stmts...))
	}
	m := maxLSN(ctx, t, env.Source())
	rows := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, m)
	perCommit := map[lsn.LSN]int64{}
	for _, r := range rows {
		perCommit[r.Start]++
	}
	for _, n := range []int{1, 3, 6, 100} {
		tiles, err := env.Source().SplitChanges(ctx, ci, lsn.Zero, m, n)
		must(t, err)
		var total int64
		prev := lsn.Zero
		for _, tile := range tiles {
			if _, ok := perCommit[tile.Last]; !ok || tile.Last.Compare(prev) <= 0 || tile.Next != tile.Last.Next() {
				t.Fatalf("n=%d: tile %+v does not end on a new commit", n, tile)
			}
			if tile.Rows < 0 {
				t.Fatalf("n=%d: tile %+v has negative rows", n, tile)
			}
			total += tile.Rows
			prev = tile.Last
		}
		if total != int64(len(rows)) || len(tiles) > n {
			t.Fatalf("n=%d: %d tiles with %d rows, want at most n tiles with %d", n, len(tiles), total, len(rows))
		}
	}
	if tiles, err := env.Source().SplitChanges(ctx, ci, m.Next(), lsn.Max, 4); err != nil || len(tiles) != 0 {
		t.Fatalf("no rows: %v tiles, err %v", tiles, err)
	}
}

// KeyBuckets floors negative keys: bucket b holds [b*width, (b+1)*width); each bucket's
// key sum is exact.
func testKeyBuckets(ctx context.Context, t *testing.T, env Env) {
	tbl, _ := ordersTable(ctx, t, env)
	var stmts []Stmt
	for id := -5; id <= 4; id++ {
		stmts = append(stmts, Insert(tbl, map[string]any{"id": id, "v": id}))
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name(tbl)}
	key := source.Column{Name: "id", DataType: "int", Present: true}
	got, err := env.Source().KeyBuckets(ctx, st, key, 3, nil, nil)
	must(t, err)
	want := []source.Bucket{{Index: -2, Rows: 2, KeySum: "-9"}, {Index: -1, Rows: 3, KeySum: "-6"}, {Index: 0, Rows: 3, KeySum: "3"}, {Index: 1, Rows: 2, KeySum: "7"}}
	if !slices.Equal(got, want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
	lo, hi := int64(-4), int64(3)
	got, err = env.Source().KeyBuckets(ctx, st, key, 3, &lo, &hi)
	must(t, err)
	want = []source.Bucket{{Index: -2, Rows: 1, KeySum: "-4"}, {Index: -1, Rows: 3, KeySum: "-6"}, {Index: 0, Rows: 3, KeySum: "3"}}
	if !slices.Equal(got, want) {
		t.Fatalf("buckets in [-4, 3): %v, want %v", got, want)
	}
	mn, mx, ok, err := env.Source().KeyExtent(ctx, st, key, nil, nil)
	must(t, err)
	if !ok || mn != int64(-5) || mx != int64(4) {
		t.Fatalf("KeyExtent = %v, %v, %v", mn, mx, ok)
	}
}

// KeyBuckets of a date key buckets and sums its days since 1970-01-01, floored before
// 1970, as reconcile's tier 1 does over silver's date32 column (docs/reconcile.md); bounds
// apply to integer keys only.
func testKeyBucketsDate(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "days", Columns: [][2]string{{"d", "date"}, {"v", "int"}}, Key: []string{"d"}, Instance: "days_ci"}))
	var stmts []Stmt
	for i, d := range []string{"1969-12-29", "1969-12-31", "1970-01-01", "1970-01-03", "1970-01-04", "2026-01-02"} {
		stmts = append(stmts, Insert("days", map[string]any{"d": d, "v": i}))
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name("days")}
	key := source.Column{Name: "d", DataType: "date", Present: true}
	got, err := env.Source().KeyBuckets(ctx, st, key, 3, nil, nil)
	must(t, err)
	// Days -3, -1 | 0, 2 | 3 | 20455 (2026-01-02).
	want := []source.Bucket{{Index: -1, Rows: 2, KeySum: "-4"}, {Index: 0, Rows: 2, KeySum: "2"}, {Index: 1, Rows: 1, KeySum: "3"}, {Index: 6818, Rows: 1, KeySum: "20455"}}
	if !slices.Equal(got, want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
	lo := int64(0)
	var ia *source.InvalidArgumentError
	if _, err := env.Source().KeyBuckets(ctx, st, key, 3, &lo, nil); !errors.As(err, &ia) {
		t.Fatalf("bounds on a date key: %v, want *source.InvalidArgumentError", err)
	}
}

// keyString renders a key for set membership.
func keyString(k []any) string { return fmt.Sprint(k...) }

// tileCheck reads the table once per range and checks that every row (identified by all
// of cols) lands in exactly one.
func tileCheck(ctx context.Context, t *testing.T, env Env, st source.Table, cols, keys []source.Column, bounds []source.Key, total int) {
	t.Helper()
	seen := map[string]int{}
	edges := append(append([]source.Key{nil}, bounds...), nil)
	for i := 0; i+1 < len(edges); i++ {
		r := source.KeyRange{Lo: edges[i], Hi: edges[i+1]}
		rows, err := env.Source().ReadTable(ctx, source.TableRead{Table: st, Columns: cols, Keys: keys, Range: r, ReadOptions: source.ReadOptions{BatchRows: 16}})
		must(t, err)
		for _, m := range Drain(ctx, t, rows) {
			var k []any
			for _, c := range cols {
				k = append(k, m[c.Name])
			}
			seen[keyString(k)]++
		}
	}
	if len(seen) != total {
		t.Fatalf("%d ranges read %d distinct keys, want %d", len(edges)-1, len(seen), total)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("key %s read %d times", k, n)
		}
	}
}

// A composite key (a varchar with few values, then an int) tiled by KeyTiles: every row in
// exactly one of N ranges, whether the leading column has 1 or many values.
func testCompositeTiles(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "comp", Columns: [][2]string{{"region", "varchar(10)"}, {"n", "int"}, {"v", "int"}}, Key: []string{"region", "n"}, Instance: "comp_ci"}))
	regions := []string{"east", "north", "west"}
	total := 0
	var stmts []Stmt
	for i := 0; i < 240; i++ {
		stmts = append(stmts, Insert("comp", map[string]any{"region": regions[i%3], "n": i / 3, "v": i}))
		total++
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name("comp")}
	// Key columns as CapturedColumns describes them: the varchar key carries its
	// collation (the database default), which a bound's CAST needs.
	cols := capturedNamed(ctx, t, env, "comp_ci", "region", "n", "v")
	keys := cols[:2]
	for _, n := range []int{1, 2, 8, 500} {
		bounds, err := env.Source().KeyTiles(ctx, st, keys, n)
		must(t, err)
		if want := min(n, total) - 1; len(bounds) != want {
			t.Fatalf("KeyTiles(%d) gave %d bounds, want %d", n, len(bounds), want)
		}
		tileCheck(ctx, t, env, st, cols, keys, bounds, total)
	}
}

// A case-insensitive string key: 'foo' and 'FOO' sort as equal, and ranges cut at bounds
// in either case still read every row once (docs/reference/sqlserver-cdc.md §8.5).
func testCaseInsensitiveTiles(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "names", Columns: [][2]string{{"name", "varchar(20) COLLATE Latin1_General_CI_AS"}, {"n", "int"}, {"v", "int"}}, Key: []string{"name", "n"}, Instance: "names_ci"}))
	words := []string{"alpha", "Alpha", "ALPHA", "beta", "Beta", "gamma", "GAMMA", "delta", "n", "N", "zeta"}
	var stmts []Stmt
	total := 0
	for i, w := range words {
		for j := 0; j < 9; j++ {
			stmts = append(stmts, Insert("names", map[string]any{"name": w, "n": i*100 + j, "v": j}))
			total++
		}
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name("names")}
	keys := []source.Column{{Name: "name", DataType: "varchar", MaxLength: 20, Collation: "Latin1_General_CI_AS", Present: true}, {Name: "n", DataType: "int", Present: true}}
	cols := append(slices.Clone(keys), source.Column{Name: "v", DataType: "int", Present: true, Nullable: true})
	for _, n := range []int{3, 7, 13} {
		bounds, err := env.Source().KeyTiles(ctx, st, keys, n)
		must(t, err)
		tileCheck(ctx, t, env, st, cols, keys, bounds, total)
	}
	// Bounds that differ from the stored values only in case.
	tileCheck(ctx, t, env, st, cols, keys, []source.Key{{"ALPHA", 0}, {"Beta", 300}, {"N", 0}, {"n", 900}}, total)
	// And a single-column CI key.
	single := keys[:1]
	bounds, err := env.Source().KeyTiles(ctx, st, single, 4)
	must(t, err)
	for _, b := range bounds {
		b[0] = strings.ToUpper(b[0].(string))
	}
	tileCheck(ctx, t, env, st, cols, keys[:1], bounds, len(words)*9)
}

// Chunks planned by chaining KeyBound (each the key after n rows) tile the table, with the
// last chunk ending at the first key after MAX (S6 of docs/reference/sqlserver-cdc.md §12,
// and the keyset plan of docs/reference/original-library.md §11.2).
func testKeyBoundChain(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "comp", Columns: [][2]string{{"region", "varchar(10)"}, {"n", "int"}, {"v", "int"}}, Key: []string{"region", "n"}, Instance: "comp_ci"}))
	var stmts []Stmt
	for i := 0; i < 100; i++ {
		stmts = append(stmts, Insert("comp", map[string]any{"region": []string{"a", "b"}[i%2], "n": i, "v": i}))
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name("comp")}
	all := capturedNamed(ctx, t, env, "comp_ci", "region", "n", "v")
	keys := all[:2]
	mx, ok, err := env.Source().KeyMax(ctx, st, keys)
	must(t, err)
	if !ok || mx[0] != "b" || mx[1] != int64(99) {
		t.Fatalf("KeyMax = %v, %v", mx, ok)
	}
	var bounds []source.Key
	var lo source.Key
	for {
		k, ok, err := env.Source().KeyBound(ctx, st, keys, source.KeyRange{Lo: lo, Hi: mx}, 15)
		must(t, err)
		if !ok {
			break
		}
		bounds = append(bounds, k)
		lo = k
	}
	if len(bounds) != 6 {
		t.Fatalf("KeyBound chain gave %d bounds, want 6 (99 rows below MAX in chunks of 15)", len(bounds))
	}
	after, ok, err := env.Source().KeyBound(ctx, st, keys, source.KeyRange{Lo: mx}, 1)
	must(t, err)
	if ok {
		t.Fatalf("first key after MAX = %v, want none", after)
	}
	tileCheck(ctx, t, env, st, all, keys, bounds, 100)
}

// Unknown capture instances are *CaptureInstanceNotFoundError for MinLSN and metadata.
func testUnknownInstance(ctx context.Context, t *testing.T, env Env) {
	ordersTable(ctx, t, env)
	var nf *source.CaptureInstanceNotFoundError
	if _, err := env.Source().MinLSN(ctx, env.Name("nope_ci")); !errors.As(err, &nf) {
		t.Fatalf("MinLSN: %v", err)
	}
}

// A column the instance lacks reads as a typed NULL in change rows and table rows. A
// column marked not Present (dropped from the source table) is still in the change table,
// which keeps the values captured before the DROP (docs/reference/sqlserver-cdc.md §6.2):
// change rows read them, only the table read has NULL.
func testAbsentColumns(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 7, "note": "x"})))
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	ghost := source.Column{Name: "ghost", DataType: "bigint", Present: false, Nullable: true}
	noteGone := cols[2]
	noteGone.Present = false
	read := append(cols[:2:2], noteGone, ghost)
	rows, err := env.Source().ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: maxLSN(ctx, t, env.Source()), Columns: read})
	must(t, err)
	if f, ok := rows.Schema().FieldsByName("ghost"); !ok || f[0].Type.ID() != arrow.INT64 {
		t.Fatalf("schema %v: want ghost as int64", rows.Schema())
	}
	got := Drain(ctx, t, rows)
	if len(got) != 1 || got[0]["v"] != int64(7) || got[0]["note"] != "x" || got[0]["ghost"] != nil {
		t.Fatalf("change rows %v: want note \"x\" (the change table keeps a dropped column's captured values) and ghost NULL", got)
	}
	trows, err := env.Source().ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: env.Name(tbl)}, Columns: read})
	must(t, err)
	tgot := Drain(ctx, t, trows)
	if len(tgot) != 1 || tgot[0]["v"] != int64(7) || tgot[0]["note"] != nil || tgot[0]["ghost"] != nil {
		t.Fatalf("table rows %v", tgot)
	}
}

// ReadOptions.BatchRows caps every record batch.
func testBatchesBounded(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	var stmts []Stmt
	for i := 0; i < 25; i++ {
		stmts = append(stmts, Insert(tbl, map[string]any{"id": i, "v": i}))
	}
	must(t, env.Exec(ctx, stmts...))
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	check := func(what string, rows source.Rows, err error) {
		t.Helper()
		must(t, err)
		defer rows.Close()
		total := 0
		for {
			rec, err := rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			must(t, err)
			if rec.NumRows() > 4 || rec.NumRows() == 0 {
				t.Fatalf("%s: a batch of %d rows, cap 4", what, rec.NumRows())
			}
			total += int(rec.NumRows())
			rec.Release()
		}
		if total != 25 {
			t.Fatalf("%s: %d rows, want 25", what, total)
		}
	}
	opt := source.ReadOptions{BatchRows: 4}
	rows, err := env.Source().ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: maxLSN(ctx, t, env.Source()), Columns: cols, ReadOptions: opt})
	check("ReadChanges", rows, err)
	rows, err = env.Source().ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: env.Name(tbl)}, Columns: cols, ReadOptions: opt})
	check("ReadTable", rows, err)
}

// KeyTiles gives the first key of tiles 2..n of NTILE(n): the first rows mod n tiles hold
// one row more (S3).
func testKeyTilesNTILE(ctx context.Context, t *testing.T, env Env) {
	tbl, _ := ordersTable(ctx, t, env)
	var stmts []Stmt
	for id := 0; id < 10; id++ {
		stmts = append(stmts, Insert(tbl, map[string]any{"id": id * 10, "v": id}))
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name(tbl)}
	keys := []source.Column{{Name: "id", DataType: "int", Present: true}}
	for _, tc := range []struct {
		n    int
		want []int64
	}{{1, nil}, {3, []int64{40, 70}}, {4, []int64{30, 60, 80}}, {10, []int64{10, 20, 30, 40, 50, 60, 70, 80, 90}}} {
		got, err := env.Source().KeyTiles(ctx, st, keys, tc.n)
		must(t, err)
		var ids []int64
		for _, k := range got {
			ids = append(ids, k[0].(int64))
		}
		if !slices.Equal(ids, tc.want) {
			t.Fatalf("KeyTiles(%d) = %v, want %v", tc.n, ids, tc.want)
		}
	}
}

// capturedNamed is the captured columns of the logical instance ci named names, in that
// order, as CapturedColumns reports them (types, lengths, collations).
func capturedNamed(ctx context.Context, t *testing.T, env Env, ci string, names ...string) []source.Column {
	t.Helper()
	cols, err := env.Source().CapturedColumns(ctx, env.Name(ci))
	must(t, err)
	out := make([]source.Column, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(cols, func(c source.Column) bool { return strings.EqualFold(c.Name, n) })
		if i < 0 {
			t.Fatalf("%s does not capture %s: %+v", ci, n, cols)
		}
		out = append(out, cols[i])
	}
	return out
}
