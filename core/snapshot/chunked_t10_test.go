package snapshot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// The original library's lab check t10 (docs/reference/lab-findings.md §10) on cdcsim, for
// every key shape a chunked snapshot cuts on: a table loaded before CDC (only a snapshot
// holds its rows); a writer mixing updates, deletes, key updates and inserts, some far
// above MAX, with a three-change transaction every tenth; chunk_rows 200 on 2 connections;
// a transaction holding locks on 10 keys while a wave reads; a commit between a wave's stamp
// and its read.

// shape is one key shape of t10.
type shape struct {
	name         string
	cols         []source.Column
	index        []string // the unique index; nil: a heap
	snapshotKeys []string
	// rebuildKeys tell rows apart for the checks (a heap's never-updated rid column).
	rebuildKeys []string
	// row is the row of logical id i; far is a logical id whose key sorts above every
	// loaded key.
	row func(i int) cdcsim.Row
	far func(i int) int
	// move is the logical id a key update of i moves to (-1: no key updates, a heap).
	move func(i int) int
}

const t10Rows = 3000

func t10guid(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	return fmt.Sprintf("%08X-%04X-%04X-%04X-%06X%06X", r.Uint32(), r.Uint32()&0xFFFF, r.Uint32()&0xFFFF, r.Uint32()&0xFFFF, r.Uint32()&0xEFFFFF, r.Uint32()&0xFFFFFF)
}

var ciText = "Latin1_General_CI_AS"

var shapes = []shape{
	{name: "integer", cols: []source.Column{{Name: "id", DataType: "int"}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true, Collation: ciText}},
		index: []string{"id"}, rebuildKeys: []string{"id"},
		row:  func(i int) cdcsim.Row { return cdcsim.Row{"id": int64(i), "v": fmt.Sprint("v", i)} },
		far:  func(i int) int { return 1_000_000_000 + i },
		move: func(i int) int { return i + 1 }},
	{name: "composite", cols: []source.Column{{Name: "a", DataType: "int"}, {Name: "b", DataType: "nvarchar", MaxLength: 20, Collation: ciText},
		{Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true, Collation: ciText}},
		index: []string{"a", "b"}, rebuildKeys: []string{"a", "b"},
		row: func(i int) cdcsim.Row {
			a := int64(i % 5)
			if i >= 1_000_000 {
				a = 1000
			}
			return cdcsim.Row{"a": a, "b": fmt.Sprintf("k%07d", i), "v": fmt.Sprint("v", i)}
		},
		far:  func(i int) int { return 1_000_000 + i },
		move: func(i int) int { return i + 500_000 }},
	{name: "string_ci", cols: []source.Column{{Name: "code", DataType: "nvarchar", MaxLength: 20, Collation: ciText},
		{Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true, Collation: ciText}},
		index: []string{"code"}, rebuildKeys: []string{"code"},
		row: func(i int) cdcsim.Row {
			// Mixed case: the CI order (a < B < c < D) is not the binary one (B < D < a < c).
			code := fmt.Sprintf("%s%06d", []string{"a", "B", "c", "D"}[i%4], i)
			if i >= 1_000_000 {
				code = fmt.Sprintf("zZ%07d", i)
			}
			return cdcsim.Row{"code": code, "v": fmt.Sprint("v", i)}
		},
		far:  func(i int) int { return 1_000_000 + i },
		move: func(i int) int { return i + 500_000 }},
	{name: "uniqueidentifier", cols: []source.Column{{Name: "g", DataType: "uniqueidentifier"},
		{Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true, Collation: ciText}},
		index: []string{"g"}, rebuildKeys: []string{"g"},
		row: func(i int) cdcsim.Row {
			g := t10guid(i)
			if i >= 1_000_000 {
				// Bytes 10-15 compare first: FFFFFF... sorts above every loaded GUID.
				g = fmt.Sprintf("00000000-0000-0000-0000-FFFFFF%06X", i%1_000_000)
			}
			return cdcsim.Row{"g": g, "v": fmt.Sprint("v", i)}
		},
		far:  func(i int) int { return 1_000_000 + i },
		move: func(i int) int { return i + 500_000 }},
	{name: "sparse_sentinel", cols: []source.Column{{Name: "id", DataType: "bigint"}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true, Collation: ciText}},
		index: []string{"id"}, rebuildKeys: []string{"id"},
		row: func(i int) cdcsim.Row {
			id := int64(i) * 7
			switch {
			case i == t10Rows:
				id = 9_000_000_000_000 // the sentinel, far above the ids
			case i >= 1_000_000:
				id = 9_000_000_000_000 + int64(i)
			}
			return cdcsim.Row{"id": id, "v": fmt.Sprint("v", i)}
		},
		far:  func(i int) int { return 1_000_000 + i },
		move: func(i int) int { return i + 500_000 }},
	{name: "heap_snapshotKeys", cols: []source.Column{{Name: "rid", DataType: "bigint", Nullable: true}, {Name: "grp", DataType: "int", Nullable: true},
		{Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true, Collation: ciText}},
		snapshotKeys: []string{"grp"}, rebuildKeys: []string{"rid"},
		row: func(i int) cdcsim.Row {
			var grp any = int64(i / 3)
			switch {
			case i%10 == 0:
				grp = nil // NULLs: all in the first chunk
			case i >= 300 && i < 750:
				grp = int64(7) // one value held by more than chunk_rows rows
			case i >= 1_000_000:
				grp = int64(i)
			}
			return cdcsim.Row{"rid": int64(i), "grp": grp, "v": fmt.Sprint("v", i)}
		},
		far:  func(i int) int { return 1_000_000 + i },
		move: func(int) int { return -1 }},
}

// t10 is one run's state: the environment, the writer's live rows and the ids used.
type t10 struct {
	*env
	sh     shape
	rng    *rand.Rand
	live   map[int][]any // logical id → key for Update/Delete
	ids    []int         // live logical ids, for picking
	used   map[int]bool
	nextID int
	txns   int
	// initial is the table before any write (the snapshot's rows if nothing changed).
	initial map[string]string
}

func newT10(t *testing.T, backend testlake.Backend, sh shape) *t10 {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 10})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "t", Columns: sh.cols, Key: sh.index}); err != nil {
		t.Fatal(err)
	}
	x := &t10{sh: sh, rng: rand.New(rand.NewPCG(10, uint64(len(sh.name)))), live: map[int][]any{}, used: map[int]bool{}, nextID: t10Rows + 1}
	if _, err := db.Exec(func(tx *cdcsim.Txn) error {
		for i := 1; i <= t10Rows; i++ {
			k, err := tx.Insert("t", sh.row(i))
			if err != nil {
				return err
			}
			x.live[i] = k
			x.ids = append(x.ids, i)
			x.used[i] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.EnableCapture("t", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{AppID: "t10", Bootstrap: true, Snapshot: config.SnapshotChunked,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_t"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Options.NumPartitions = 2
	spec.Options.SnapshotKeys = sh.snapshotKeys
	cr, zero := int64(200), 0.0
	spec.ChunkRows, spec.MinHeadroomHours = &cr, &zero
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	x.env = &env{t: t, db: db, spec: spec, kc: keyCase{keys: sh.rebuildKeys}, lake: lake}
	x.initial = x.tableImages()
	return x
}

// tableImages is the source table now: rebuild key text → the row's values as text.
func (x *t10) tableImages() map[string]string {
	x.t.Helper()
	cols, err := x.db.Columns("t")
	if err != nil {
		x.t.Fatal(err)
	}
	rows, err := x.db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: "t"}, Columns: cols})
	if err != nil {
		x.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for {
		rec, err := rows.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			x.t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			k, v := rowText(rec, i, x.sh.rebuildKeys)
			out[k] = v
		}
		rec.Release()
	}
}

// rowText is a row's rebuild key and its captured columns' values, as text.
func rowText(rec arrow.RecordBatch, i int, keys []string) (key, vals string) {
	var kp, vp []string
	sc := rec.Schema()
	for _, k := range keys {
		idx := sc.FieldIndices(k)
		kp = append(kp, cellText(rec.Column(idx[0]), i))
	}
	for j, f := range sc.Fields() {
		if bronze.IsMetadataColumn(f.Name) {
			continue
		}
		vp = append(vp, f.Name+"="+cellText(rec.Column(j), i))
	}
	sort.Strings(vp)
	return strings.Join(kp, "|"), strings.Join(vp, ",")
}

func cellText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	return a.ValueStr(i)
}

// pick returns a random live logical id.
func (x *t10) pick() int { return x.ids[x.rng.IntN(len(x.ids))] }

func (x *t10) drop(id int) {
	delete(x.live, id)
	for i, v := range x.ids {
		if v == id {
			x.ids[i] = x.ids[len(x.ids)-1]
			x.ids = x.ids[:len(x.ids)-1]
			return
		}
	}
}

// change applies one random change in tx: an update, a delete, a key update or an insert
// (half of them far above MAX).
func (x *t10) change(tx *cdcsim.Txn) {
	x.t.Helper()
	keyCols := x.sh.index
	r := x.rng.IntN(100)
	switch {
	case r < 40 && len(x.ids) > 0:
		id := x.pick()
		if err := tx.Update("t", x.live[id], cdcsim.Row{"v": fmt.Sprintf("u%d.%d", id, x.txns)}); err != nil {
			x.t.Fatal(err)
		}
	case r < 60 && len(x.ids) > 0:
		id := x.pick()
		if err := tx.Delete("t", x.live[id]); err != nil {
			x.t.Fatal(err)
		}
		x.drop(id)
	case r < 75 && len(x.ids) > 0 && x.sh.move(1) >= 0:
		id := x.pick()
		to := x.sh.move(id)
		if x.used[to] {
			return
		}
		set := cdcsim.Row{"v": fmt.Sprintf("moved from %d", id)}
		nr := x.sh.row(to)
		for _, k := range keyCols {
			set[k] = nr[k]
		}
		if err := tx.Update("t", x.live[id], set); err != nil {
			x.t.Fatal(err)
		}
		var key []any
		for _, k := range keyCols {
			key = append(key, nr[k])
		}
		x.drop(id)
		x.live[to], x.used[to] = key, true
		x.ids = append(x.ids, to)
	default:
		id := x.nextID
		x.nextID++
		if x.rng.IntN(2) == 0 {
			id = x.sh.far(id)
		}
		if x.used[id] {
			return
		}
		k, err := tx.Insert("t", x.sh.row(id))
		if err != nil {
			x.t.Fatal(err)
		}
		x.live[id], x.used[id] = k, true
		x.ids = append(x.ids, id)
	}
}

// write commits n transactions of the writer: one change each, three every tenth.
func (x *t10) write(n int) {
	x.t.Helper()
	for range n {
		x.txns++
		x.db.Advance(time.Second)
		tx := x.db.Begin()
		for range map[bool]int{true: 3, false: 1}[x.txns%10 == 0] {
			x.change(tx)
		}
		if _, err := tx.Commit(); err != nil {
			x.t.Fatal(err)
		}
	}
}

// signalSource signals on its first ReadTable call, before the call reads.
type signalSource struct {
	source.Source
	once *sync.Once
	ch   chan struct{}
}

func (s signalSource) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	s.once.Do(func() { close(s.ch) })
	return s.Source.ReadTable(ctx, r)
}

func (x *t10) params() snapshot.BackfillParams {
	p := snapshot.ParamsOf(x.spec)
	p.MaxWaves, p.TargetWaveSeconds = 1, 0 // one round of 2 chunks per wave: many waves
	return p
}

// backfill runs one call of one wave.
func (x *t10) backfill() snapshot.BackfillStatus {
	x.t.Helper()
	st, err := snapshot.Backfill(context.Background(), x.deps(), x.params())
	if err != nil {
		x.t.Fatal(err)
	}
	return st
}

// lockedWave runs a wave while a transaction holds locks on 10 keys: the wave's first read
// signals, the transaction then commits, and the reads blocked behind it go on.
func (x *t10) lockedWave() snapshot.BackfillStatus {
	x.t.Helper()
	tx := x.db.Begin()
	for range 10 {
		id := x.pick()
		if err := tx.Update("t", x.live[id], cdcsim.Row{"v": fmt.Sprintf("locked %d", id)}); err != nil {
			x.t.Fatal(err)
		}
	}
	ch := make(chan struct{})
	x.lake.WrapSource = func(s source.Source) source.Source { return signalSource{Source: s, once: &sync.Once{}, ch: ch} }
	defer func() { x.lake.WrapSource = nil }()
	var st snapshot.BackfillStatus
	var err error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		st, err = snapshot.Backfill(context.Background(), x.deps(), x.params())
	}()
	select {
	case <-ch:
	case <-finished:
	}
	x.db.Advance(time.Second)
	if _, cerr := tx.Commit(); cerr != nil {
		x.t.Fatal(cerr)
	}
	<-finished
	if err != nil {
		x.t.Fatal(err)
	}
	return st
}

func TestChunkedT10(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) { runT10(t, testlake.Local, sh) })
	}
}

// The same on S3 (gofakes3) with the DynamoDB log store (dynalite).
func TestChunkedT10OnEmulators(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) { runT10(t, testlake.AWS, sh) })
	}
}

func runT10(t *testing.T, backend testlake.Backend, sh shape) {
	x := newT10(t, backend, sh)
	x.write(20)
	x.stream() // the stream's first run opens the snapshot at S and starts there
	open := x.openS()
	// With a lock timeout of 0, a wave behind the held locks fails by name and commits
	// nothing; a retry after the writer committed goes on (READ COMMITTED waits, never
	// NOLOCK).
	x.lockTimeoutWave()
	for waves := 0; ; waves++ {
		if waves > 100 {
			t.Fatal("the backfill never finished")
		}
		x.write(7)
		// A commit between the wave's stamp and its read.
		tx := x.db.Begin()
		x.change(tx)
		if err := x.db.CommitBeforeRead(tx); err != nil {
			t.Fatal(err)
		}
		var st snapshot.BackfillStatus
		if waves == 1 {
			st = x.lockedWave()
		} else {
			st = x.backfill()
		}
		x.stream()
		if st.State == snapshot.StateDone {
			break
		}
		if st.State != snapshot.StateRunning {
			t.Fatalf("wave %d: %+v", waves, st)
		}
	}
	x.write(10)
	x.stream()
	x.checkT10(open)
}

// openS is the snapshot's S from the facts table's snapshot_open row.
func (x *t10) openS() lsn.LSN {
	x.t.Helper()
	for _, r := range x.factsRows() {
		if r.Event == facts.EventSnapshotOpen {
			return lsn.MustParse(r.MaxLSN)
		}
	}
	x.t.Fatal("no snapshot_open row")
	return lsn.Zero
}

// lockTimeoutWave holds locks on keys of the first chunks with lockTimeoutMs 0: the wave
// fails with *source.LockTimeoutError and bronze holds no wave; after the commit a wave
// reads.
func (x *t10) lockTimeoutWave() {
	x.t.Helper()
	tx := x.db.Begin()
	for range 10 {
		id := x.pick()
		if err := tx.Update("t", x.live[id], cdcsim.Row{"v": fmt.Sprintf("held %d", id)}); err != nil {
			x.t.Fatal(err)
		}
	}
	zero := 0
	x.spec.Options.LockTimeoutMs = &zero
	_, err := snapshot.Backfill(context.Background(), x.deps(), x.params())
	x.spec.Options.LockTimeoutMs = nil
	var lt *source.LockTimeoutError
	if !errors.As(err, &lt) {
		x.t.Fatalf("a wave behind held locks with lockTimeoutMs 0: %v, want *source.LockTimeoutError", err)
	}
	snap, _ := x.lake.RawTable(x.spec.Bronze).Snapshot(context.Background())
	if _, ok := snap.TxnVersion(snapshot.WaveTxnAppID(x.spec.AppID, x.openS())); ok {
		x.t.Fatal("a wave that timed out on a lock reached bronze")
	}
	x.db.Advance(time.Second)
	if _, err := tx.Commit(); err != nil {
		x.t.Fatal(err)
	}
}

// bronzeRow is one bronze row, as the checks need it.
type bronzeRow struct {
	op             int32
	lsn, seq, snap string
	chunk          int32 // -1: NULL
	key, vals      string
}

func (x *t10) bronzeRows() []bronzeRow {
	x.t.Helper()
	ctx := context.Background()
	snap, err := x.lake.RawTable(x.spec.Bronze).Snapshot(ctx)
	if err != nil {
		x.t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		x.t.Fatal(err)
	}
	defer it.Close()
	var out []bronzeRow
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			x.t.Fatal(err)
		}
		col := func(n string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(n)[0]) }
		op, ls, seq, sn, ch := col(bronze.ColOperation).(*array.Int32), col(bronze.ColStartLSN).(*array.String),
			col(bronze.ColSeqval).(*array.String), col(bronze.ColSnapshot).(*array.String), col(bronze.ColChunk).(*array.Int32)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := bronzeRow{op: op.Value(i), lsn: ls.Value(i), chunk: -1}
			if seq.IsValid(i) {
				r.seq = seq.Value(i)
			}
			if sn.IsValid(i) {
				r.snap = sn.Value(i)
			}
			if ch.IsValid(i) {
				r.chunk = ch.Value(i)
			}
			r.key, r.vals = rowText(rec, i, x.sh.rebuildKeys)
			out = append(out, r)
		}
		rec.Release()
	}
}

// changeRows are the change table's rows of dbo_t: (lsn, seq, op, key, vals).
func (x *t10) changeRows() []bronzeRow {
	x.t.Helper()
	ctx := context.Background()
	cols, err := x.db.CapturedColumns(ctx, "dbo_t")
	if err != nil {
		x.t.Fatal(err)
	}
	max, err := x.db.MaxLSN(ctx)
	if err != nil {
		x.t.Fatal(err)
	}
	rows, err := x.db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_t", From: lsn.Zero, To: max, Columns: cols})
	if err != nil {
		x.t.Fatal(err)
	}
	defer rows.Close()
	var out []bronzeRow
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			x.t.Fatal(err)
		}
		col := func(n string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(n)[0]) }
		op, ls, seq := col(bronze.ColOperation).(*array.Int32), col(bronze.ColStartLSN).(*array.String), col(bronze.ColSeqval).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := bronzeRow{op: op.Value(i), lsn: ls.Value(i), seq: seq.Value(i), chunk: -1}
			r.key, r.vals = rowText(rec, i, x.sh.rebuildKeys)
			out = append(out, r)
		}
		rec.Release()
	}
}

func (x *t10) checkT10(s lsn.LSN) {
	t := x.t
	t.Helper()
	ctx := context.Background()
	d := x.deps()
	fr := x.factsRows()
	if n := count(fr, facts.EventBootstrap); n != 1 {
		t.Fatalf("%d bootstrap rows, want 1", n)
	}
	for _, r := range fr {
		if r.Event == facts.EventBootstrap && (r.MinLSN != s.String() || r.MaxLSN != s.String()) {
			t.Errorf("bootstrap row at %s..%s, want min = max = S %s", r.MinLSN, r.MaxLSN, s)
		}
		if r.Event == facts.EventSnapshotChunk || r.Event == facts.EventSnapshotPlan {
			if strings.Contains(r.Detail, `"lo"`) || strings.Contains(r.Detail, `"hi"`) {
				t.Errorf("%s row holds key bounds: %s", r.Event, r.Detail)
			}
		}
	}
	// The plan tiles the key space: the first chunk open below, each starting where the
	// previous ends, the last just above MAX.
	plan := planRows(t, d, "plan")
	for i, p := range plan {
		switch {
		case i == 0 && p.Lo != "":
			t.Errorf("chunk 0 starts at %s, want open", p.Lo)
		case i > 0 && p.Lo != plan[i-1].Hi:
			t.Errorf("chunk %d starts at %s, the previous ends at %s", i, p.Lo, plan[i-1].Hi)
		}
		if (i == len(plan)-1) != (p.Last != nil && *p.Last) {
			t.Errorf("chunk %d of %d: last %v", i, len(plan), p.Last)
		}
	}
	open := planRows(t, d, "open")[0]
	if x.sh.name == "integer" || x.sh.name == "sparse_sentinel" {
		var mx []int64
		_ = json.Unmarshal([]byte(open.Hi), &mx)
		if want := fmt.Sprintf("[%d]", mx[0]+1); plan[len(plan)-1].Hi != want {
			t.Errorf("the last chunk ends at %s, want MAX + 1 = %s", plan[len(plan)-1].Hi, want)
		}
	}
	if x.sh.name == "sparse_sentinel" && len(plan) > t10Rows/200+2 {
		t.Errorf("%d chunks for %d rows of 200: the sentinel made chunks of its own", len(plan), t10Rows)
	}
	// Per chunk: bronze's rows = the plans table's = the facts', every stamp >= S.
	bronzeN, stamps := map[int32]int64{}, map[int32]string{}
	snapKeys := map[string]int{}
	all := x.bronzeRows()
	for _, r := range all {
		if r.op != 0 {
			continue
		}
		if r.snap != s.String() || r.chunk < 0 {
			t.Fatalf("snapshot row outside the chunked snapshot: %+v", r)
		}
		bronzeN[r.chunk]++
		stamps[r.chunk] = r.lsn
		if lsn.MustParse(r.lsn).Less(s) {
			t.Errorf("chunk %d stamped %s below S %s", r.chunk, r.lsn, s)
		}
		snapKeys[r.key]++
	}
	chunkRows := planRows(t, d, "chunk")
	if len(chunkRows) != len(plan) {
		t.Fatalf("%d chunk rows for %d planned chunks", len(chunkRows), len(plan))
	}
	for _, c := range chunkRows {
		if *c.Rows != bronzeN[*c.Chunk] {
			t.Errorf("chunk %d: plans table %d rows, bronze %d", *c.Chunk, *c.Rows, bronzeN[*c.Chunk])
		}
		if lsn.MustParse(c.Stamp).Less(s) {
			t.Errorf("chunk %d stamp %s below S", *c.Chunk, c.Stamp)
		}
	}
	factsN := map[int32]int64{}
	for _, r := range fr {
		if r.Event != facts.EventSnapshotChunk {
			continue
		}
		var det struct{ Chunk int32 }
		_ = json.Unmarshal([]byte(r.Detail), &det)
		factsN[det.Chunk] += *r.Rows
		if lsn.MustParse(r.MinLSN).Less(s) {
			t.Errorf("snapshot_chunk row of chunk %d: min_lsn %s below S", det.Chunk, r.MinLSN)
		}
	}
	for c, n := range bronzeN {
		if factsN[c] != n {
			t.Errorf("chunk %d: facts %d rows, bronze %d", c, factsN[c], n)
		}
	}
	if len(factsN) != len(plan) {
		t.Errorf("facts rows for %d chunks, want %d", len(factsN), len(plan))
	}
	// No key twice in the snapshot.
	for k, n := range snapKeys {
		if n > 1 {
			t.Errorf("key %s is %d times in the snapshot", k, n)
		}
	}
	// Every change after S exactly once in bronze, as in the change table.
	changes := x.changeRows()
	want := map[string]int{}
	for _, c := range changes {
		if s.Less(lsn.MustParse(c.lsn)) {
			want[fmt.Sprint(c.lsn, c.seq, c.op)]++
		}
	}
	got := map[string]int{}
	for _, r := range all {
		if r.op != 0 && s.Less(lsn.MustParse(r.lsn)) {
			got[fmt.Sprint(r.lsn, r.seq, r.op)]++
		}
	}
	for k, n := range got {
		if n != 1 || want[k] != 1 {
			t.Errorf("change %s: %d times in bronze, %d in the change table", k, n, want[k])
		}
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Errorf("bronze holds %d changes after S, the change table %d", len(got), len(want))
	}
	// Keys present at S and never changed after it are in the snapshot (the chunks cover
	// the table), and no chunk row is stale: each equals its key's image as of the chunk's
	// stamp L, or an image a commit after L wrote.
	history := map[string][]bronzeRow{}
	changedAfterS := map[string]bool{}
	for _, c := range changes {
		history[c.key] = append(history[c.key], c)
		if s.Less(lsn.MustParse(c.lsn)) {
			changedAfterS[c.key] = true
		}
	}
	for k := range x.initial {
		if !changedAfterS[k] && imageAt(x.initial, history, k, s.String()) != "" && snapKeys[k] != 1 {
			t.Errorf("key %s, unchanged since S, is in the snapshot %d times", k, snapKeys[k])
		}
	}
	for _, r := range all {
		if r.op != 0 {
			continue
		}
		ok := imageAt(x.initial, history, r.key, r.lsn) == r.vals
		for _, c := range history[r.key] {
			if !ok && (c.op == 2 || c.op == 4) && r.lsn < c.lsn && c.vals == r.vals {
				ok = true
			}
		}
		if !ok {
			t.Errorf("chunk %d row of key %s stamped %s is stale: %s, as of L %q", r.chunk, r.key, r.lsn, r.vals, imageAt(x.initial, history, r.key, r.lsn))
		}
	}
	// The rebuild equals the table.
	x.check()
	t.Logf("%s: %d chunks, %d snapshot rows in %d waves, %d changes after S, %d writer transactions",
		x.sh.name, len(plan), len(snapKeys), countWaves(chunkRows), len(want), x.txns)
	_ = ctx
}

func countWaves(rows []snapshot.PlanRow) int {
	waves := map[int64]bool{}
	for _, r := range rows {
		waves[*r.Wave] = true
	}
	return len(waves)
}

// imageAt is key k's values as of LSN at ("" when absent): the table before CDC, then the
// change table's rows at or below at, in order.
func imageAt(initial map[string]string, history map[string][]bronzeRow, k, at string) string {
	img := initial[k]
	for _, c := range history[k] {
		if c.lsn > at {
			break
		}
		switch c.op {
		case 1, 3:
			img = ""
		case 2, 4:
			img = c.vals
		}
	}
	return img
}

// planRows reads the plans table's rows of one event, ordered by chunk.
func planRows(t *testing.T, d snapshot.Deps, event string) []snapshot.PlanRow {
	t.Helper()
	rows, err := snapshot.PlanRows(context.Background(), d.Plans, d.Spec.AppID, event)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
