package facts

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// BatchStats accumulates a batch's facts from the bronze records it writes
// (docs/reference/original-library.md §5.1): rows, _start_lsn range, _commit_ts range, and
// counts of operations 1, 2 and 4.
type BatchStats struct {
	Rows                      int64
	MinLSN, MaxLSN            string
	MinCommitTS, MaxCommitTS  *time.Time
	Deletes, Inserts, Updates int64
	// Bytes is the Arrow buffer size of the records added (for read_mb).
	Bytes int64
}

// Add folds one record holding _start_lsn, _operation and _commit_ts (a change or bronze
// record) into the stats.
func (s *BatchStats) Add(rec arrow.RecordBatch) error {
	sc := rec.Schema()
	idx := func(name string) (arrow.Array, error) {
		// The first field of that name; Schema.FieldIndices would copy its index slice.
		for i := range sc.NumFields() {
			if sc.Field(i).Name == name {
				return rec.Column(i), nil
			}
		}
		return nil, fmt.Errorf("batch stats: record lacks %s", name)
	}
	lsnA, err := idx(bronze.ColStartLSN)
	if err != nil {
		return err
	}
	opA, err := idx(bronze.ColOperation)
	if err != nil {
		return err
	}
	tsA, err := idx(bronze.ColCommitTS)
	if err != nil {
		return err
	}
	lsns, ok1 := lsnA.(*array.String)
	ops, ok2 := opA.(*array.Int32)
	tss, ok3 := tsA.(*array.Timestamp)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("batch stats: unexpected column types %s, %s, %s", lsnA.DataType(), opA.DataType(), tsA.DataType())
	}
	n := int(rec.NumRows())
	// The commit times are compared as microseconds and become time.Time values once per
	// record, so a row costs no allocation.
	var minTS, maxTS arrow.Timestamp
	anyTS := false
	for i := 0; i < n; i++ {
		if lsns.IsValid(i) {
			l := lsns.Value(i)
			if s.MinLSN == "" || l < s.MinLSN {
				s.MinLSN = l
			}
			if l > s.MaxLSN {
				s.MaxLSN = l
			}
		}
		if tss.IsValid(i) {
			t := tss.Value(i)
			if !anyTS || t < minTS {
				minTS = t
			}
			if !anyTS || t > maxTS {
				maxTS = t
			}
			anyTS = true
		}
		switch ops.Value(i) {
		case bronze.OpDelete:
			s.Deletes++
		case bronze.OpInsert:
			s.Inserts++
		case bronze.OpUpdateAfter:
			s.Updates++
		}
	}
	if anyTS {
		// New values, never writes through the pointers: Merge shares them between stats.
		if lo := time.UnixMicro(int64(minTS)).UTC(); s.MinCommitTS == nil || lo.Before(*s.MinCommitTS) {
			s.MinCommitTS = &lo
		}
		if hi := time.UnixMicro(int64(maxTS)).UTC(); s.MaxCommitTS == nil || hi.After(*s.MaxCommitTS) {
			s.MaxCommitTS = &hi
		}
	}
	s.Rows += int64(n)
	s.Bytes += ArrowBytes(rec)
	return nil
}

// ArrowBytes is the Arrow size of a record as read_mb counts it: the lengths of its
// columns' buffers (validity bitmaps, offsets, values).
func ArrowBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// Fill copies the stats into a micro-batch row.
func (s *BatchStats) Fill(r *Row) {
	r.Rows = Int64(s.Rows)
	r.MinLSN, r.MaxLSN = s.MinLSN, s.MaxLSN
	r.MinCommitTS, r.MaxCommitTS = s.MinCommitTS, s.MaxCommitTS
	r.Deletes, r.Inserts, r.Updates = s.Deletes, s.Inserts, s.Updates
}

// BatchMetadata is the compact JSON a stream batch's bronze commit carries in
// commitInfo.userMetadata (docs/design.md §4.2; docs/reference/original-library.md §5.1):
// the batch's facts, so a rerun after a crash between the bronze and the facts commit
// rebuilds its facts row without reading the source again. The one shape for writing
// (BatchStats.UserMetadata) and reading (ParseUserMetadata); times in lsn.TimeLayout.
type BatchMetadata struct {
	Rows        int64   `json:"rows"`
	MinLSN      *string `json:"min_lsn"`
	MaxLSN      *string `json:"max_lsn"`
	MinCommitTS *string `json:"min_commit_ts"`
	MaxCommitTS *string `json:"max_commit_ts"`
	Deletes     int64   `json:"deletes"`
	Inserts     int64   `json:"inserts"`
	Updates     int64   `json:"updates"`
	BatchID     *int64  `json:"batch_id"`
	AppID       string  `json:"app_id"`
}

// UserMetadata is the batch's BatchMetadata JSON.
func (s *BatchStats) UserMetadata(appID string, batchID int64) string {
	ts := func(t *time.Time) *string {
		if t == nil {
			return nil
		}
		v := lsn.FormatTime(*t)
		return &v
	}
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	b, _ := json.Marshal(BatchMetadata{Rows: s.Rows, MinLSN: str(s.MinLSN), MaxLSN: str(s.MaxLSN),
		MinCommitTS: ts(s.MinCommitTS), MaxCommitTS: ts(s.MaxCommitTS), Deletes: s.Deletes, Inserts: s.Inserts,
		Updates: s.Updates, BatchID: &batchID, AppID: appID})
	return string(b)
}

// ParseUserMetadata reads back what UserMetadata wrote: the batch's facts, its app_id and
// batch id. Bytes is not recorded and reads as 0. A document without batch_id (another
// writer's commit) is an error.
func ParseUserMetadata(s string) (st BatchStats, appID string, batchID int64, err error) {
	var md BatchMetadata
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		return st, "", 0, fmt.Errorf("batch userMetadata: %w", err)
	}
	if md.BatchID == nil {
		return st, "", 0, fmt.Errorf("batch userMetadata: no batch_id")
	}
	ts := func(p *string) (*time.Time, error) {
		if p == nil {
			return nil, nil
		}
		t, err := lsn.ParseTime(*p)
		if err != nil {
			return nil, fmt.Errorf("batch userMetadata: %w", err)
		}
		return &t, nil
	}
	st.Rows, st.Deletes, st.Inserts, st.Updates = md.Rows, md.Deletes, md.Inserts, md.Updates
	if md.MinLSN != nil {
		st.MinLSN = *md.MinLSN
	}
	if md.MaxLSN != nil {
		st.MaxLSN = *md.MaxLSN
	}
	if st.MinCommitTS, err = ts(md.MinCommitTS); err != nil {
		return st, "", 0, err
	}
	if st.MaxCommitTS, err = ts(md.MaxCommitTS); err != nil {
		return st, "", 0, err
	}
	return st, md.AppID, *md.BatchID, nil
}

// Merge adds o's counts and widens the ranges by o's.
func (s *BatchStats) Merge(o BatchStats) {
	if o.Rows == 0 {
		return
	}
	if s.MinLSN == "" || (o.MinLSN != "" && o.MinLSN < s.MinLSN) {
		s.MinLSN = o.MinLSN
	}
	if o.MaxLSN > s.MaxLSN {
		s.MaxLSN = o.MaxLSN
	}
	if s.MinCommitTS == nil || (o.MinCommitTS != nil && o.MinCommitTS.Before(*s.MinCommitTS)) {
		s.MinCommitTS = o.MinCommitTS
	}
	if s.MaxCommitTS == nil || (o.MaxCommitTS != nil && o.MaxCommitTS.After(*s.MaxCommitTS)) {
		s.MaxCommitTS = o.MaxCommitTS
	}
	s.Rows += o.Rows
	s.Deletes += o.Deletes
	s.Inserts += o.Inserts
	s.Updates += o.Updates
	s.Bytes += o.Bytes
}
