package snapshot

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// fakeSource is a one-table source: dbo.t(id int key, v nvarchar), for the step logic.
// The acceptance tests run on cdcsim.
type fakeSource struct {
	source.Source
	mu        sync.Mutex
	rows      map[int64]string
	maxLSN    lsn.LSN
	startLSN  lsn.LSN
	instances []source.CaptureInstance
	reads     int
	estimate  int64
	fail      map[string]error // method name -> error, once
}

func (s *fakeSource) RowEstimate(ctx context.Context, t source.Table) (int64, error) {
	return s.estimate, nil
}

func newFakeSource(n int) *fakeSource {
	s := &fakeSource{rows: map[int64]string{}, maxLSN: lsn.MustParse("0x00000020000000100001"),
		startLSN: lsn.MustParse("0x00000010000000100001"), fail: map[string]error{}}
	for i := 1; i <= n; i++ {
		s.rows[int64(i)] = fmt.Sprintf("v%d", i)
	}
	s.instances = []source.CaptureInstance{{Name: "dbo_t", SourceSchema: "dbo", SourceTable: "t", StartLSN: s.startLSN, IndexColumns: []string{"id"}}}
	return s
}

var fakeCols = []source.Column{
	{Name: "id", Ordinal: 1, ColumnID: 1, DataType: "int", Present: true},
	{Name: "v", Ordinal: 2, ColumnID: 2, DataType: "nvarchar", MaxLength: 50, Present: true, Nullable: true},
}

func (s *fakeSource) failing(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err, ok := s.fail[op]; ok {
		delete(s.fail, op)
		return err
	}
	return nil
}

func (s *fakeSource) MaxLSN(ctx context.Context) (lsn.LSN, error) {
	if err := s.failing("MaxLSN"); err != nil {
		return lsn.Zero, err
	}
	return s.maxLSN, nil
}

func (s *fakeSource) CommitTime(ctx context.Context, l lsn.LSN) (time.Time, bool, error) {
	if l == s.maxLSN {
		return time.Date(2026, 10, 1, 12, 0, 0, 123e6, time.UTC), true, nil
	}
	return time.Time{}, false, nil
}

func (s *fakeSource) CaptureInstances(ctx context.Context) ([]source.CaptureInstance, error) {
	if err := s.failing("CaptureInstances"); err != nil {
		return nil, err
	}
	return s.instances, nil
}

func (s *fakeSource) CapturedColumns(ctx context.Context, ci string) ([]source.Column, error) {
	return fakeCols, nil
}

func (s *fakeSource) keys() []int64 {
	var ks []int64
	for k := range s.rows {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

func (s *fakeSource) KeyExtent(ctx context.Context, t source.Table, key source.Column, lo, hi *int64) (any, any, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys()
	if len(ks) == 0 {
		return nil, nil, false, nil
	}
	return ks[0], ks[len(ks)-1], true, nil
}

func (s *fakeSource) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	if err := s.failing("ReadTable"); err != nil {
		return nil, err
	}
	failNext := s.failing("Next")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	sch, _ := bronze.TableSchema(r.Columns)
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for _, k := range s.keys() {
		if r.Range.Lo != nil && k < r.Range.Lo[0].(int64) || r.Range.Hi != nil && k >= r.Range.Hi[0].(int64) {
			continue
		}
		ib.Append(int32(k))
		sb.Append(s.rows[k])
	}
	a, b := ib.NewArray(), sb.NewArray()
	rec := array.NewRecordBatch(sch, []arrow.Array{a, b}, int64(a.Len()))
	a.Release()
	b.Release()
	return &oneBatch{schema: sch, rec: rec, failNext: failNext}, nil
}

type oneBatch struct {
	schema   *arrow.Schema
	rec      arrow.RecordBatch
	failNext error
}

func (o *oneBatch) Schema() *arrow.Schema { return o.schema }
func (o *oneBatch) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if o.failNext != nil {
		return nil, o.failNext
	}
	if o.rec == nil {
		return nil, io.EOF
	}
	r := o.rec
	o.rec = nil
	return r, nil
}
func (o *oneBatch) Close() error { return nil }

// fakeBronze keeps files as records in memory; AppendOnce honours txns.
type fakeBronze struct {
	mu        sync.Mutex
	schema    *arrow.Schema
	pending   map[string][]arrow.RecordBatch // written, uncommitted
	committed []arrow.RecordBatch
	txns      map[string]int64
	version   int64
	commits   int
	n         int
	failOnce  map[string]error
}

func newFakeBronze() *fakeBronze {
	return &fakeBronze{pending: map[string][]arrow.RecordBatch{}, txns: map[string]int64{}, version: -1, failOnce: map[string]error{}}
}

func (b *fakeBronze) failing(op string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err, ok := b.failOnce[op]; ok {
		delete(b.failOnce, op)
		return err
	}
	return nil
}

func (b *fakeBronze) Schema(ctx context.Context) (*arrow.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.schema, nil
}

func (b *fakeBronze) WholeSnapshots(ctx context.Context, instances []string) ([]FoundSnapshot, error) {
	if err := b.failing("WholeSnapshots"); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string]bool{}
	var out []FoundSnapshot
	for _, rec := range b.committed {
		sch := rec.Schema()
		op := rec.Column(sch.FieldIndices(bronze.ColOperation)[0]).(*array.Int32)
		ci := rec.Column(sch.FieldIndices(bronze.ColCaptureInstance)[0]).(*array.String)
		sn := rec.Column(sch.FieldIndices(bronze.ColSnapshot)[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			if op.Value(i) != 0 {
				continue
			}
			ok := false
			for _, n := range instances {
				ok = ok || strings.ToLower(ci.Value(i)) == n
			}
			if ok && !seen[sn.Value(i)] {
				seen[sn.Value(i)] = true
				out = append(out, FoundSnapshot{LSN: lsn.MustParse(sn.Value(i))})
			}
		}
	}
	return out, nil
}

func (b *fakeBronze) NewFileWriter(schema *arrow.Schema) FileWriter {
	return &fakeWriter{b: b}
}

func (b *fakeBronze) AppendOnce(ctx context.Context, a Append) (int64, bool, error) {
	if err := b.failing("AppendOnce"); err != nil {
		return 0, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.txns[a.AppID]; ok && v >= a.Version {
		return b.version, true, nil
	}
	for _, f := range a.Files {
		recs, ok := b.pending[f.Path]
		if !ok {
			return 0, false, fmt.Errorf("no file %s", f.Path)
		}
		b.committed = append(b.committed, recs...)
	}
	b.schema = a.Schema
	b.txns[a.AppID] = a.Version
	b.version++
	b.commits++
	err := b.failOnce["AppendOnce.after"]
	delete(b.failOnce, "AppendOnce.after")
	return b.version, false, err
}

func (b *fakeBronze) rows() int64 {
	var n int64
	for _, r := range b.committed {
		n += r.NumRows()
	}
	return n
}

type fakeWriter struct {
	b    *fakeBronze
	recs []arrow.RecordBatch
}

func (w *fakeWriter) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := w.b.failing("Write"); err != nil {
		return err
	}
	rec.Retain()
	w.recs = append(w.recs, rec)
	return nil
}

func (w *fakeWriter) Close(ctx context.Context) ([]DataFile, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if len(w.recs) == 0 {
		return nil, nil
	}
	w.b.n++
	p := fmt.Sprintf("part-%05d.parquet", w.b.n)
	w.b.pending[p] = w.recs
	var n int64
	for _, r := range w.recs {
		n += r.NumRows()
	}
	return []DataFile{{Path: p, Size: 100, NumRecords: n}}, nil
}

func (w *fakeWriter) Abort(ctx context.Context) {}

// fakeFacts records event rows in memory.
type fakeFacts struct {
	mu        sync.Mutex
	opens     []FactsEvent
	boots     map[string]FactsEvent
	openSnaps []OpenSnapshot
}

func newFakeFacts() *fakeFacts { return &fakeFacts{boots: map[string]FactsEvent{}} }

func (f *fakeFacts) OpenSnapshots(ctx context.Context, appID string) ([]OpenSnapshot, error) {
	return f.openSnaps, nil
}
func (f *fakeFacts) SnapshotOpened(ctx context.Context, ev FactsEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens = append(f.opens, ev)
	return nil
}
func (f *fakeFacts) Bootstrapped(ctx context.Context, ev FactsEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.boots[ev.AppID]; !ok {
		f.boots[ev.AppID] = ev
	}
	return nil
}

type fakeCheckpoint struct {
	off *lsn.Offset
}

func (c fakeCheckpoint) Latest(ctx context.Context) (lsn.Offset, bool, error) {
	if c.off == nil {
		return lsn.Offset{}, false, nil
	}
	return *c.off, true, nil
}
