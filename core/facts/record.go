package facts

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Record builds a record of Schema() holding rows, in order. The caller releases it.
func Record(mem memory.Allocator, rows []Row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range rows {
		r := &rows[i]
		f := 0
		next := func() array.Builder { f++; return b.Field(f - 1) }
		str(next(), r.AppID)
		i64p(next(), r.BatchID)
		i64p(next(), r.Rows)
		str(next(), r.MinLSN)
		str(next(), r.MaxLSN)
		tsp(next(), r.MinCommitTS)
		tsp(next(), r.MaxCommitTS)
		next().(*array.Int64Builder).Append(r.Deletes)
		next().(*array.Int64Builder).Append(r.Inserts)
		next().(*array.Int64Builder).Append(r.Updates)
		tsp(next(), r.StartedAt)
		i64p(next(), r.DurationMs)
		f64p(next(), r.SourceRTTMs)
		f64p(next(), r.ReadSeconds)
		f64p(next(), r.ReadMB)
		i64p(next(), r.NetworkWaitMs)
		tsp(next(), r.RetentionWatermarkTS)
		f64p(next(), r.RetentionHeadroomHours)
		str(next(), r.Event)
		tsp(next(), r.LostFromTS)
		tsp(next(), r.LostToTS)
		tsp(next(), r.SourceMaxCommitTS)
		f64p(next(), r.CaptureLagSeconds)
		f64p(next(), r.IngestionLagSeconds)
		str(next(), r.EndLSN)
		tsp(next(), r.EndCommitTS)
		str(next(), r.Detail)
		str(next(), r.Target)
		wa := r.WrittenAt
		tsp(next(), &wa)
	}
	return b.NewRecordBatch()
}

func str(b array.Builder, v string) {
	if v == "" {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(v)
}

func i64p(b array.Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(*v)
}

func f64p(b array.Builder, v *float64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Float64Builder).Append(*v)
}

func tsp(b array.Builder, v *time.Time) {
	if v == nil || v.IsZero() {
		b.AppendNull()
		return
	}
	b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.UTC().UnixMicro()))
}

// FromRecord reads rows from a facts record, selecting columns by name (a table migrated
// by the original has extra columns or another order; missing columns read as NULL).
// A column of an unexpected type is an error.
func FromRecord(rec arrow.RecordBatch) ([]Row, error) {
	n := int(rec.NumRows())
	rows := make([]Row, n)
	sc := rec.Schema()
	col := func(name string) arrow.Array {
		if idx := sc.FieldIndices(name); len(idx) > 0 {
			return rec.Column(idx[0])
		}
		return nil
	}
	var err error
	get := func(name string, set func(i int, a arrow.Array)) {
		a := col(name)
		if a == nil || err != nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("facts column %s: unexpected type %s", name, a.DataType())
			}
		}()
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				set(i, a)
			}
		}
	}
	s := func(a arrow.Array, i int) string { return a.(*array.String).Value(i) }
	iv := func(a arrow.Array, i int) *int64 { v := a.(*array.Int64).Value(i); return &v }
	fv := func(a arrow.Array, i int) *float64 { v := a.(*array.Float64).Value(i); return &v }
	tv := func(a arrow.Array, i int) *time.Time {
		t := time.UnixMicro(int64(a.(*array.Timestamp).Value(i))).UTC()
		return &t
	}
	get(ColAppID, func(i int, a arrow.Array) { rows[i].AppID = s(a, i) })
	get(ColBatchID, func(i int, a arrow.Array) { rows[i].BatchID = iv(a, i) })
	get(ColRows, func(i int, a arrow.Array) { rows[i].Rows = iv(a, i) })
	get(ColMinLSN, func(i int, a arrow.Array) { rows[i].MinLSN = s(a, i) })
	get(ColMaxLSN, func(i int, a arrow.Array) { rows[i].MaxLSN = s(a, i) })
	get(ColMinCommitTS, func(i int, a arrow.Array) { rows[i].MinCommitTS = tv(a, i) })
	get(ColMaxCommitTS, func(i int, a arrow.Array) { rows[i].MaxCommitTS = tv(a, i) })
	get(ColDeletes, func(i int, a arrow.Array) { rows[i].Deletes = *iv(a, i) })
	get(ColInserts, func(i int, a arrow.Array) { rows[i].Inserts = *iv(a, i) })
	get(ColUpdates, func(i int, a arrow.Array) { rows[i].Updates = *iv(a, i) })
	get(ColStartedAt, func(i int, a arrow.Array) { rows[i].StartedAt = tv(a, i) })
	get(ColDurationMs, func(i int, a arrow.Array) { rows[i].DurationMs = iv(a, i) })
	get(ColSourceRTTMs, func(i int, a arrow.Array) { rows[i].SourceRTTMs = fv(a, i) })
	get(ColReadSeconds, func(i int, a arrow.Array) { rows[i].ReadSeconds = fv(a, i) })
	get(ColReadMB, func(i int, a arrow.Array) { rows[i].ReadMB = fv(a, i) })
	get(ColNetworkWaitMs, func(i int, a arrow.Array) { rows[i].NetworkWaitMs = iv(a, i) })
	get(ColRetentionWatermarkTS, func(i int, a arrow.Array) { rows[i].RetentionWatermarkTS = tv(a, i) })
	get(ColRetentionHeadroomHours, func(i int, a arrow.Array) { rows[i].RetentionHeadroomHours = fv(a, i) })
	get(ColEvent, func(i int, a arrow.Array) { rows[i].Event = s(a, i) })
	get(ColLostFromTS, func(i int, a arrow.Array) { rows[i].LostFromTS = tv(a, i) })
	get(ColLostToTS, func(i int, a arrow.Array) { rows[i].LostToTS = tv(a, i) })
	get(ColSourceMaxCommitTS, func(i int, a arrow.Array) { rows[i].SourceMaxCommitTS = tv(a, i) })
	get(ColCaptureLagSeconds, func(i int, a arrow.Array) { rows[i].CaptureLagSeconds = fv(a, i) })
	get(ColIngestionLagSeconds, func(i int, a arrow.Array) { rows[i].IngestionLagSeconds = fv(a, i) })
	get(ColEndLSN, func(i int, a arrow.Array) { rows[i].EndLSN = s(a, i) })
	get(ColEndCommitTS, func(i int, a arrow.Array) { rows[i].EndCommitTS = tv(a, i) })
	get(ColDetail, func(i int, a arrow.Array) { rows[i].Detail = s(a, i) })
	get(ColTarget, func(i int, a arrow.Array) { rows[i].Target = s(a, i) })
	get(ColWrittenAt, func(i int, a arrow.Array) { rows[i].WrittenAt = *tv(a, i) })
	if err != nil {
		return nil, err
	}
	return rows, nil
}
