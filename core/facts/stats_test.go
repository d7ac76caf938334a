package facts

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
)

// timesRecord is a change record whose commit times are the given microseconds (nil is
// NULL).
func timesRecord(micros ...*int64) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: bronze.ColStartLSN, Type: arrow.BinaryTypes.String},
		{Name: bronze.ColOperation, Type: arrow.PrimitiveTypes.Int32},
		{Name: bronze.ColCommitTS, Type: bronze.CommitTSType, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, m := range micros {
		b.Field(0).(*array.StringBuilder).Append("0x0000000000000000000A")
		b.Field(1).(*array.Int32Builder).Append(bronze.OpInsert)
		if m == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(*m))
		}
	}
	return b.NewRecordBatch()
}

// Add widens the commit time range over records, ignores NULL times, and never writes
// through the time pointers it handed out (Merge shares them).
func TestBatchStatsCommitTimesAcrossRecords(t *testing.T) {
	us := func(v int64) *int64 { return &v }
	at := func(v int64) time.Time { return time.UnixMicro(v).UTC() }

	var s BatchStats
	nulls := timesRecord(nil, nil)
	defer nulls.Release()
	if err := s.Add(nulls); err != nil {
		t.Fatal(err)
	}
	if s.MinCommitTS != nil || s.MaxCommitTS != nil || s.Rows != 2 {
		t.Fatalf("after NULL times: %+v", s)
	}

	first := timesRecord(us(20), nil, us(10), us(15))
	defer first.Release()
	if err := s.Add(first); err != nil {
		t.Fatal(err)
	}
	if !s.MinCommitTS.Equal(at(10)) || !s.MaxCommitTS.Equal(at(20)) {
		t.Fatalf("after first record: %v %v", s.MinCommitTS, s.MaxCommitTS)
	}
	if s.MinCommitTS.Location() != time.UTC {
		t.Errorf("min commit time in %v, want UTC", s.MinCommitTS.Location())
	}

	var merged BatchStats
	merged.Merge(s)

	inside := timesRecord(us(12), us(18))
	defer inside.Release()
	wider := timesRecord(us(30), us(5), nil)
	defer wider.Release()
	for _, rec := range []arrow.RecordBatch{inside, wider} {
		if err := s.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if !s.MinCommitTS.Equal(at(5)) || !s.MaxCommitTS.Equal(at(30)) || s.Rows != 11 || s.Inserts != 11 {
		t.Errorf("after all records: %v %v, %+v", s.MinCommitTS, s.MaxCommitTS, s)
	}
	if !merged.MinCommitTS.Equal(at(10)) || !merged.MaxCommitTS.Equal(at(20)) {
		t.Errorf("merged copy changed by a later Add: %v %v", merged.MinCommitTS, merged.MaxCommitTS)
	}
}
