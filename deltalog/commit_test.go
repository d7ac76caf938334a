package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func newMemTable(opts Options) (*Table, *memStore) {
	s := newMemStore()
	if opts.RetryBaseDelay == 0 {
		opts.RetryBaseDelay = time.Microsecond
	}
	return Open(s, &memLogStore{s: s}, opts), s
}

func testAdd(name string) Add {
	return Add{Path: "part-" + name + ".parquet", Size: 100, ModificationTime: 1700000000000,
		DataChange: true, Stats: `{"numRecords":1}`}
}

func snapshot(t *testing.T, tbl *Table) *Snapshot {
	t.Helper()
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return s
}

// createTable commits version 0 with testSchema and one file.
func createTable(t *testing.T, tbl *Table) {
	t.Helper()
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	tx.Add(testAdd("0"))
	res, err := tx.Commit(context.Background())
	if err != nil || res.Version != 0 || res.Skipped {
		t.Fatalf("create: %+v, %v", res, err)
	}
}

func TestCommitCreatesTable(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{Now: func() time.Time { return time.UnixMilli(1700000000123) }})
	tx := tbl.Begin(snapshot(t, tbl))
	if _, err := tx.Commit(ctx); !errors.Is(err, ErrNoSchema) {
		t.Fatalf("commit without schema: %v, want ErrNoSchema", err)
	}
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	tx.Add(testAdd("a"))
	tx.SetAppTxn("app", 1)
	tx.SetUserMetadata(`{"batch":1}`)
	res, err := tx.Commit(ctx)
	if err != nil || res != (CommitResult{Version: 0}) {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, ErrTxnDone) {
		t.Fatalf("second commit: %v, want ErrTxnDone", err)
	}
	s := snapshot(t, tbl)
	if s.Version() != 0 || len(s.Files()) != 1 || s.Files()[0].Path != "part-a.parquet" {
		t.Fatalf("snapshot: version %d files %v", s.Version(), s.Files())
	}
	if p := s.Protocol(); p.MinReaderVersion != 1 || p.MinWriterVersion != 2 {
		t.Fatalf("protocol %+v, want 1/2", p)
	}
	md := s.Metadata()
	if md.ID == "" || len(md.ID) != 36 || md.CreatedTime == nil || *md.CreatedTime != 1700000000123 {
		t.Fatalf("metadata %+v", md)
	}
	if want := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}]}`; md.SchemaString != want {
		t.Fatalf("schema %s\nwant %s", md.SchemaString, want)
	}
	if v, ok := s.TxnVersion("app"); !ok || v != 1 {
		t.Fatalf("txn version %d %v", v, ok)
	}
	ci, ok := s.CommitInfo(0)
	if !ok || ci.Operation != "CREATE TABLE" || ci.UserMetadata != `{"batch":1}` || ci.Timestamp != 1700000000123 ||
		!strings.HasPrefix(ci.EngineInfo, "mssqlcdc/") || ci.IsBlindAppend == nil || !*ci.IsBlindAppend ||
		ci.IsolationLevel != "Serializable" || ci.ReadVersion != nil || len(ci.TxnID) != 36 {
		t.Fatalf("commitInfo %+v", ci)
	}
	// commitInfo is the first line of the commit file.
	data, err := tbl.LogStore().Read(ctx, 0)
	if err != nil || !strings.HasPrefix(string(data), `{"commitInfo":`) {
		t.Fatalf("commit file %q, %v", data, err)
	}
}

func TestCommitNTZCreatesFeatureProtocol(t *testing.T) {
	tbl, _ := newMemTable(Options{})
	tx := tbl.Begin(snapshot(t, tbl))
	schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: ArrowTimestampNTZ, Nullable: true}}, nil)
	if err := tx.SetSchema(schema); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := snapshot(t, tbl).Protocol()
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !p.HasReaderFeature(FeatureTimestampNTZ) || !p.HasWriterFeature(FeatureTimestampNTZ) {
		t.Fatalf("protocol %+v", p)
	}
}

func TestAppendAndReplaySkipped(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	for v := int64(1); v <= 3; v++ {
		tx := tbl.Begin(snapshot(t, tbl))
		tx.Add(testAdd(fmt.Sprint(v)))
		tx.SetAppTxn("app", v)
		res, err := tx.Commit(ctx)
		if err != nil || res != (CommitResult{Version: v}) {
			t.Fatalf("append %d: %+v, %v", v, res, err)
		}
	}
	for _, replay := range []int64{2, 3} {
		tx := tbl.Begin(snapshot(t, tbl))
		tx.Add(testAdd("replay"))
		tx.SetAppTxn("app", replay)
		res, err := tx.Commit(ctx)
		if err != nil || res != (CommitResult{Version: 3, Skipped: true}) {
			t.Fatalf("replay %d: %+v, %v", replay, res, err)
		}
	}
	s := snapshot(t, tbl)
	if s.Version() != 3 || len(s.Files()) != 4 {
		t.Fatalf("version %d, %d files", s.Version(), len(s.Files()))
	}
	ci, _ := s.CommitInfo(2)
	if ci.Operation != "WRITE" || ci.OperationParameters["mode"] != "Append" || ci.ReadVersion == nil || *ci.ReadVersion != 1 {
		t.Fatalf("commitInfo %+v", ci)
	}
}

func TestSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)

	// The same schema, in another order, is a no-op.
	tx := tbl.Begin(snapshot(t, tbl))
	same := arrow.NewSchema([]arrow.Field{testSchema.Field(1), testSchema.Field(0)}, nil)
	if err := tx.SetSchema(same); err != nil || tx.metadata != nil || tx.protocol != nil {
		t.Fatalf("same schema: %v, metadata %v", err, tx.metadata)
	}

	refused := map[string]*arrow.Schema{
		"id":   arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, testSchema.Field(1)}, nil),
		"name": arrow.NewSchema([]arrow.Field{testSchema.Field(0)}, nil),
		"ID":   arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, testSchema.Field(1)}, nil),
		"v":    arrow.NewSchema([]arrow.Field{testSchema.Field(0), testSchema.Field(1), {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil),
	}
	for col, schema := range refused {
		var sce *SchemaChangeError
		if err := tbl.Begin(snapshot(t, tbl)).SetSchema(schema); !errors.As(err, &sce) {
			t.Fatalf("%s: %v, want *SchemaChangeError", col, err)
		}
		if !strings.EqualFold(sce.Column, col) {
			t.Fatalf("%s: error names %q", col, sce.Column)
		}
	}
	nullable := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "X", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	if err := tbl.Begin(snapshot(t, tbl)).SetSchema(nullable); err == nil {
		t.Fatal("case-colliding names accepted")
	}

	// Adding a nullable timestamp_ntz column writes metaData and upgrades the protocol.
	evolved := arrow.NewSchema([]arrow.Field{testSchema.Field(0), {Name: "ts", Type: ArrowTimestampNTZ, Nullable: true}, testSchema.Field(1)}, nil)
	tx = tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(evolved); err != nil {
		t.Fatal(err)
	}
	tx.Add(testAdd("evolved"))
	if res, err := tx.Commit(ctx); err != nil || res.Version != 1 {
		t.Fatalf("evolve: %+v %v", res, err)
	}
	s := snapshot(t, tbl)
	st, _ := s.Schema()
	if got := strings.Join(st.FieldNames(), ","); got != "id,ts,name" {
		t.Fatalf("columns %s", got)
	}
	if s.Metadata().ID != snapshotAt(t, tbl, 0).Metadata().ID {
		t.Fatal("table id changed")
	}
	p := s.Protocol()
	if p.MinWriterVersion != 7 || !p.HasWriterFeature(FeatureTimestampNTZ) || !p.HasWriterFeature(FeatureAppendOnly) || !p.HasWriterFeature(FeatureInvariants) {
		t.Fatalf("protocol %+v", p)
	}
}

func snapshotAt(t *testing.T, tbl *Table, v int64) *Snapshot {
	t.Helper()
	s, err := tbl.SnapshotAt(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLostRaceBlindAppendsProceed(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	base := snapshot(t, tbl)
	var txs []*Transaction
	for i := range 4 {
		tx := tbl.Begin(base)
		tx.Add(testAdd(fmt.Sprint("w", i)))
		tx.SetAppTxn(fmt.Sprint("app", i), 1)
		txs = append(txs, tx)
	}
	for i, tx := range txs {
		res, err := tx.Commit(ctx)
		if err != nil || res.Version != int64(i+1) || res.Skipped {
			t.Fatalf("txn %d: %+v, %v", i, res, err)
		}
	}
	if s := snapshot(t, tbl); s.Version() != 4 || len(s.Files()) != 5 {
		t.Fatalf("version %d, %d files", s.Version(), len(s.Files()))
	}
}

func TestLostRaceConflicts(t *testing.T) {
	ctx := context.Background()
	evolved := arrow.NewSchema(append(testSchema.Fields(), arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), nil)
	cases := []struct {
		name   string
		winner func(tx *Transaction)
		check  func(t *testing.T, res CommitResult, err error)
	}{
		{"metadata changed", func(tx *Transaction) {
			if err := tx.SetSchema(evolved); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, res CommitResult, err error) {
			var cme *ConcurrentModificationError
			if !errors.As(err, &cme) || cme.Version != 1 || cme.Reason != "changed the metadata" {
				t.Fatalf("%+v %v", res, err)
			}
		}},
		{"same app txn at our version", func(tx *Transaction) { tx.SetAppTxn("app", 5) },
			func(t *testing.T, res CommitResult, err error) {
				if err != nil || res != (CommitResult{Version: 1, Skipped: true}) {
					t.Fatalf("%+v %v", res, err)
				}
			}},
		{"same app txn below our version", func(tx *Transaction) { tx.SetAppTxn("app", 4) },
			func(t *testing.T, res CommitResult, err error) {
				var cte *ConcurrentTxnError
				if !errors.As(err, &cte) || cte.AppID != "app" || cte.Recorded != 4 || cte.Version != 1 {
					t.Fatalf("%+v %v", res, err)
				}
			}},
		{"other app txn", func(tx *Transaction) { tx.SetAppTxn("other", 9) },
			func(t *testing.T, res CommitResult, err error) {
				if err != nil || res != (CommitResult{Version: 2}) {
					t.Fatalf("%+v %v", res, err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, _ := newMemTable(Options{})
			createTable(t, tbl)
			base := snapshot(t, tbl)
			ours := tbl.Begin(base)
			ours.Add(testAdd("ours"))
			ours.SetAppTxn("app", 5)
			winner := tbl.Begin(base)
			winner.Add(testAdd("winner"))
			c.winner(winner)
			if _, err := winner.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			res, err := ours.Commit(ctx)
			c.check(t, res, err)
		})
	}
}

func TestConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	empty := snapshot(t, tbl)
	a, b := tbl.Begin(empty), tbl.Begin(empty)
	for _, tx := range []*Transaction{a, b} {
		if err := tx.SetSchema(testSchema); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var cme *ConcurrentModificationError
	if _, err := b.Commit(ctx); !errors.As(err, &cme) || cme.Reason != "created the table" {
		t.Fatalf("second create: %v", err)
	}
}

func TestCommitRefusesUnsupportedTable(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	// Another engine upgrades the table to row tracking.
	data, err := EncodeActions([]Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 7,
		WriterFeatures: []string{FeatureRowTracking}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.LogStore().Write(ctx, 1, data); err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(snapshot(t, tbl))
	tx.Add(testAdd("x"))
	var ufe *UnsupportedFeatureError
	if _, err := tx.Commit(ctx); !errors.As(err, &ufe) || ufe.Feature != FeatureRowTracking {
		t.Fatalf("commit: %v", err)
	}
}

// flakyLog fails Write calls: lose drops the write and errors, land performs it and then
// errors (the response was lost).
type flakyLog struct {
	logstore.LogStore
	lose, land atomic.Int32
}

var errFlaky = errors.New("flaky: connection reset")

func (f *flakyLog) Write(ctx context.Context, v int64, data []byte) error {
	if f.lose.Add(-1) >= 0 {
		return errFlaky
	}
	if f.land.Add(-1) >= 0 {
		if err := f.LogStore.Write(ctx, v, data); err != nil {
			return err
		}
		return errFlaky
	}
	return f.LogStore.Write(ctx, v, data)
}

func TestCommitResolvesUndecidedWrites(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	fl := &flakyLog{LogStore: &memLogStore{s: s}}
	tbl := Open(s, fl, Options{RetryBaseDelay: time.Microsecond})
	createTable(t, tbl)

	// The write landed but its answer was lost: reported as committed, once.
	fl.land.Store(1)
	tx := tbl.Begin(snapshot(t, tbl))
	tx.Add(testAdd("landed"))
	if res, err := tx.Commit(ctx); err != nil || res != (CommitResult{Version: 1}) {
		t.Fatalf("landed: %+v %v", res, err)
	}
	// The write was lost: retried at the same version.
	fl.lose.Store(2)
	tx = tbl.Begin(snapshot(t, tbl))
	tx.Add(testAdd("lost"))
	if res, err := tx.Commit(ctx); err != nil || res != (CommitResult{Version: 2}) {
		t.Fatalf("lost: %+v %v", res, err)
	}
	if s := snapshot(t, tbl); s.Version() != 2 || len(s.Files()) != 3 {
		t.Fatalf("version %d files %d", s.Version(), len(s.Files()))
	}
}

// racingLog lets another writer commit a blind append just before each of our writes.
type racingLog struct {
	logstore.LogStore
	rival func(v int64)
}

func (r *racingLog) Write(ctx context.Context, v int64, data []byte) error {
	r.rival(v)
	return r.LogStore.Write(ctx, v, data)
}

func TestCommitGivesUpAfterMaxAttempts(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	inner := &memLogStore{s: s}
	tbl := Open(s, inner, Options{RetryBaseDelay: time.Microsecond})
	createTable(t, tbl)
	rivalTbl := Open(s, inner, Options{})
	racer := Open(s, &racingLog{LogStore: inner, rival: func(v int64) {
		tx := rivalTbl.Begin(snapshot(t, rivalTbl))
		tx.Add(testAdd(fmt.Sprint("rival", v)))
		if _, err := tx.Commit(ctx); err != nil {
			t.Error(err)
		}
	}}, Options{MaxCommitAttempts: 3, RetryBaseDelay: time.Microsecond})
	tx := racer.Begin(snapshot(t, racer))
	tx.Add(testAdd("starved"))
	var cae *CommitAttemptsError
	if _, err := tx.Commit(ctx); !errors.As(err, &cae) || cae.Attempts != 3 || cae.LastVersion != 3 {
		t.Fatalf("commit: %v", err)
	}
}

func TestBackoffBounds(t *testing.T) {
	tbl, _ := newMemTable(Options{RetryBaseDelay: 10 * time.Millisecond})
	for attempt := 1; attempt < 40; attempt++ {
		ceiling := min(10*time.Millisecond<<min(attempt-1, 20), DefaultRetryMaxDelay)
		for range 20 {
			if d := tbl.backoff(attempt); d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %v outside [0, %v]", attempt, d, ceiling)
			}
		}
	}
}

// The checkpoint a commit writes after losing races is built from its snapshot, the
// winners and its own actions; it must equal the state replayed from the log.
func TestCheckpointAfterLostRaces(t *testing.T) {
	ctx := context.Background()
	tbl, s := newMemTable(Options{CheckpointInterval: 3})
	createTable(t, tbl)
	base := snapshot(t, tbl)
	for i := range 2 { // versions 1, 2 win against ours
		tx := tbl.Begin(base)
		tx.Add(testAdd(fmt.Sprint("winner", i)))
		tx.SetAppTxn(fmt.Sprint("w", i), 7)
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tx := tbl.Begin(base)
	tx.Add(testAdd("ours"))
	tx.SetAppTxn("ours", 1)
	if res, err := tx.Commit(ctx); err != nil || res.Version != 3 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	if _, err := s.Head(ctx, CheckpointFileKey(3)); err != nil {
		t.Fatalf("no checkpoint at 3: %v", err)
	}
	fromCP := snapshotAt(t, tbl, 3)
	if fromCP.CheckpointVersion() != 3 {
		t.Fatalf("snapshot built from checkpoint %d", fromCP.CheckpointVersion())
	}
	// Replay from JSON only, by hiding the checkpoint.
	if err := s.Delete(ctx, CheckpointFileKey(3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, LastCheckpointKey); err != nil {
		t.Fatal(err)
	}
	fromJSON := snapshotAt(t, tbl, 3)
	if fromJSON.CheckpointVersion() != -1 {
		t.Fatal("checkpoint still used")
	}
	state := func(s *Snapshot) string {
		b, err := json.Marshal([]any{s.Files(), s.Txns(), s.Protocol(), s.Metadata()})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := state(fromCP), state(fromJSON); got != want {
		t.Fatalf("checkpoint state\n%s\nreplayed\n%s", got, want)
	}
	if len(fromCP.Files()) != 4 || len(fromCP.Txns()) != 3 {
		t.Fatalf("%d files %d txns", len(fromCP.Files()), len(fromCP.Txns()))
	}
}

// deadLog fails every Write and Read: the outcome cannot be learned.
type deadLog struct{ logstore.LogStore }

func (deadLog) Write(context.Context, int64, []byte) error  { return errFlaky }
func (deadLog) Read(context.Context, int64) ([]byte, error) { return nil, errFlaky }

func TestCommitUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	tbl := Open(s, &memLogStore{s: s}, Options{})
	createTable(t, tbl)
	dead := Open(s, deadLog{&memLogStore{s: s}}, Options{RetryBaseDelay: time.Microsecond})
	tx := dead.Begin(snapshot(t, tbl))
	tx.Add(testAdd("x"))
	var cue *CommitUnknownError
	if _, err := tx.Commit(ctx); !errors.As(err, &cue) || cue.Version != 1 || !errors.Is(err, errFlaky) {
		t.Fatalf("commit: %v", err)
	}
}

// snapState is a snapshot's reconciled state as JSON, for comparing snapshots.
func snapState(t *testing.T, s *Snapshot) string {
	t.Helper()
	b, err := json.Marshal([]any{s.Version(), s.Files(), s.Txns(), s.Protocol(), s.Metadata()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNextSnapshot(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	counted := &countingLog{LogStore: &memLogStore{s: s}}
	tbl := Open(s, counted, Options{CheckpointInterval: -1})
	check := func(name string, tx *Transaction, res CommitResult) *Snapshot {
		t.Helper()
		before := counted.n.Load()
		next, err := tx.NextSnapshot(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := counted.n.Load() - before; n != 0 {
			t.Fatalf("%s: NextSnapshot made %d log store calls, want none", name, n)
		}
		if got, want := snapState(t, next), snapState(t, snapshotAt(t, tbl, res.Version)); got != want {
			t.Fatalf("%s: next snapshot\n%s\nlog\n%s", name, got, want)
		}
		return next
	}

	tx := tbl.Begin(snapshot(t, tbl))
	if _, err := tx.NextSnapshot(ctx); !errors.Is(err, ErrTxnNotCommitted) {
		t.Fatalf("before commit: %v", err)
	}
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	tx.Add(testAdd("0"))
	res, _ := tx.Commit(ctx)
	next := check("create", tx, res)
	if ci, ok := next.CommitInfo(0); !ok || ci.Operation != "CREATE TABLE" {
		t.Fatalf("commitInfo %+v %v", ci, ok)
	}

	// Two rivals win against a writer that keeps its own snapshot.
	for i := range 2 {
		rival := tbl.Begin(snapshot(t, tbl))
		rival.Add(testAdd(fmt.Sprint("rival", i)))
		rival.SetAppTxn("rival", int64(i+1))
		if _, err := rival.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tx = tbl.Begin(next)
	tx.Add(testAdd("mine"))
	tx.SetAppTxn("mine", 1)
	res, err := tx.Commit(ctx)
	if err != nil || res.Version != 3 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	next = check("after lost races", tx, res)

	// Skipped by the snapshot, and after a lost race.
	tx = tbl.Begin(next)
	tx.SetAppTxn("mine", 1)
	res, _ = tx.Commit(ctx)
	check("skipped", tx, res)
	rival := tbl.Begin(next)
	rival.SetAppTxn("mine", 2)
	rival.Add(testAdd("mine2"))
	if _, err := rival.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx = tbl.Begin(next)
	tx.SetAppTxn("mine", 2)
	tx.Add(testAdd("mine2-replay"))
	res, _ = tx.Commit(ctx)
	if !res.Skipped || res.Version != 4 {
		t.Fatalf("replay: %+v", res)
	}
	check("skipped after rebase", tx, res)
}

// countingLog counts Latest and Read calls.
type countingLog struct {
	logstore.LogStore
	n atomic.Int64
}

func (c *countingLog) Latest(ctx context.Context) (int64, error) {
	c.n.Add(1)
	return c.LogStore.Latest(ctx)
}

func (c *countingLog) Read(ctx context.Context, v int64) ([]byte, error) {
	c.n.Add(1)
	return c.LogStore.Read(ctx, v)
}

// A writer chaining NextSnapshot checkpoints every interval commits, not on every commit
// after the first checkpoint.
func TestChainedCheckpointCadence(t *testing.T) {
	ctx := context.Background()
	tbl, s := newMemTable(Options{CheckpointInterval: 10})
	createTable(t, tbl)
	snap := snapshot(t, tbl)
	for i := 1; i <= 25; i++ {
		tx := tbl.Begin(snap)
		tx.Add(testAdd(fmt.Sprint(i)))
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var err error
		if snap, err = tx.NextSnapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var cps []string
	for _, k := range keys(t, s, LogDir) {
		if strings.Contains(k, "checkpoint.parquet") {
			cps = append(cps, k)
		}
	}
	if want := []string{CheckpointFileKey(10), CheckpointFileKey(20)}; !slices.Equal(cps, want) {
		t.Fatalf("checkpoints %v, want %v", cps, want)
	}
	if snap.CheckpointVersion() != 20 || snap.Version() != 25 || len(snap.Files()) != 26 {
		t.Fatalf("chained snapshot: version %d checkpoint %d files %d", snap.Version(), snap.CheckpointVersion(), len(snap.Files()))
	}
}
