package testlake

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

// FaultSource returns s with these calls routed through f, each named "source.<Method>",
// so a kill-and-rerun test kills a step at any SQL call as at any storage or log store
// call:
// MaxLSN, MinLSN, CommitTime, CommitAtOrBefore, LSNAtOrBefore, NthCommitAfter,
// CaptureInstances, CapturedColumns, DDLHistory, SplitChanges, ReadChanges, ReadTable,
// KeyExtent, KeyMax, KeyBound, KeyAfter, KeyTiles, KeyBuckets, SizeEstimate, and Next of the
// Rows that ReadChanges and ReadTable return ("source.Rows.Next"). The other methods (Ping,
// Close) go to s unrouted.
func FaultSource(s source.Source, f *deltatest.Faults) source.Source {
	return &faultSource{Source: s, f: f}
}

type faultSource struct {
	source.Source
	f *deltatest.Faults
}

// hit runs call as f's next external call, named "source."+op, and returns its value.
func hit[T any](f *deltatest.Faults, op string, call func() (T, error)) (T, error) {
	var v T
	err := f.Hit("source."+op, func() error {
		var err error
		v, err = call()
		return err
	})
	return v, err
}

func (s *faultSource) MaxLSN(ctx context.Context) (lsn.LSN, error) {
	return hit(s.f, "MaxLSN", func() (lsn.LSN, error) { return s.Source.MaxLSN(ctx) })
}

func (s *faultSource) MinLSN(ctx context.Context, ci string) (lsn.LSN, error) {
	return hit(s.f, "MinLSN", func() (lsn.LSN, error) { return s.Source.MinLSN(ctx, ci) })
}

type timeOK struct {
	t  time.Time
	ok bool
}

func (s *faultSource) CommitTime(ctx context.Context, l lsn.LSN) (time.Time, bool, error) {
	v, err := hit(s.f, "CommitTime", func() (timeOK, error) {
		t, ok, err := s.Source.CommitTime(ctx, l)
		return timeOK{t, ok}, err
	})
	return v.t, v.ok, err
}

type commitOK struct {
	c  source.Commit
	ok bool
}

func (s *faultSource) CommitAtOrBefore(ctx context.Context, l lsn.LSN) (source.Commit, bool, error) {
	v, err := hit(s.f, "CommitAtOrBefore", func() (commitOK, error) {
		c, ok, err := s.Source.CommitAtOrBefore(ctx, l)
		return commitOK{c, ok}, err
	})
	return v.c, v.ok, err
}

type lsnOK struct {
	l  lsn.LSN
	ok bool
}

func (s *faultSource) LSNAtOrBefore(ctx context.Context, t time.Time) (lsn.LSN, bool, error) {
	v, err := hit(s.f, "LSNAtOrBefore", func() (lsnOK, error) {
		l, ok, err := s.Source.LSNAtOrBefore(ctx, t)
		return lsnOK{l, ok}, err
	})
	return v.l, v.ok, err
}

func (s *faultSource) NthCommitAfter(ctx context.Context, after lsn.LSN, n int) (lsn.LSN, bool, error) {
	v, err := hit(s.f, "NthCommitAfter", func() (lsnOK, error) {
		l, ok, err := s.Source.NthCommitAfter(ctx, after, n)
		return lsnOK{l, ok}, err
	})
	return v.l, v.ok, err
}

func (s *faultSource) CaptureInstances(ctx context.Context) ([]source.CaptureInstance, error) {
	return hit(s.f, "CaptureInstances", func() ([]source.CaptureInstance, error) { return s.Source.CaptureInstances(ctx) })
}

func (s *faultSource) CapturedColumns(ctx context.Context, ci string) ([]source.Column, error) {
	return hit(s.f, "CapturedColumns", func() ([]source.Column, error) { return s.Source.CapturedColumns(ctx, ci) })
}

func (s *faultSource) DDLHistory(ctx context.Context, ci string, after, upto lsn.LSN) ([]source.DDLEvent, error) {
	return hit(s.f, "DDLHistory", func() ([]source.DDLEvent, error) { return s.Source.DDLHistory(ctx, ci, after, upto) })
}

func (s *faultSource) SplitChanges(ctx context.Context, ci string, from, to lsn.LSN, n int) ([]source.Tile, error) {
	return hit(s.f, "SplitChanges", func() ([]source.Tile, error) { return s.Source.SplitChanges(ctx, ci, from, to, n) })
}

func (s *faultSource) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	rows, err := hit(s.f, "ReadChanges", func() (source.Rows, error) { return s.Source.ReadChanges(ctx, r) })
	if err != nil {
		return nil, err
	}
	return &faultRows{Rows: rows, f: s.f}, nil
}

type keyExtent struct {
	mn, mx any
	ok     bool
}

func (s *faultSource) KeyExtent(ctx context.Context, t source.Table, key source.Column, lo, hi *int64) (any, any, bool, error) {
	v, err := hit(s.f, "KeyExtent", func() (keyExtent, error) {
		mn, mx, ok, err := s.Source.KeyExtent(ctx, t, key, lo, hi)
		return keyExtent{mn, mx, ok}, err
	})
	return v.mn, v.mx, v.ok, err
}

func (s *faultSource) KeyTiles(ctx context.Context, t source.Table, keys []source.Column, n int) ([]source.Key, error) {
	return hit(s.f, "KeyTiles", func() ([]source.Key, error) { return s.Source.KeyTiles(ctx, t, keys, n) })
}

type keyOK struct {
	k  source.Key
	ok bool
}

func (s *faultSource) KeyMax(ctx context.Context, t source.Table, keys []source.Column) (source.Key, bool, error) {
	v, err := hit(s.f, "KeyMax", func() (keyOK, error) {
		k, ok, err := s.Source.KeyMax(ctx, t, keys)
		return keyOK{k, ok}, err
	})
	return v.k, v.ok, err
}

func (s *faultSource) KeyBound(ctx context.Context, t source.Table, keys []source.Column, r source.KeyRange, n int64) (source.Key, bool, error) {
	v, err := hit(s.f, "KeyBound", func() (keyOK, error) {
		k, ok, err := s.Source.KeyBound(ctx, t, keys, r, n)
		return keyOK{k, ok}, err
	})
	return v.k, v.ok, err
}

func (s *faultSource) KeyAfter(ctx context.Context, t source.Table, keys []source.Column, after source.Key) (source.Key, bool, error) {
	v, err := hit(s.f, "KeyAfter", func() (keyOK, error) {
		k, ok, err := s.Source.KeyAfter(ctx, t, keys, after)
		return keyOK{k, ok}, err
	})
	return v.k, v.ok, err
}

func (s *faultSource) KeyBuckets(ctx context.Context, t source.Table, key source.Column, width int64, lo, hi *int64) ([]source.Bucket, error) {
	return hit(s.f, "KeyBuckets", func() ([]source.Bucket, error) { return s.Source.KeyBuckets(ctx, t, key, width, lo, hi) })
}

func (s *faultSource) SizeEstimate(ctx context.Context, t source.Table) (source.TableSize, error) {
	return hit(s.f, "SizeEstimate", func() (source.TableSize, error) { return s.Source.SizeEstimate(ctx, t) })
}

func (s *faultSource) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	rows, err := hit(s.f, "ReadTable", func() (source.Rows, error) { return s.Source.ReadTable(ctx, r) })
	if err != nil {
		return nil, err
	}
	return &faultRows{Rows: rows, f: s.f}, nil
}

// faultRows routes Next; a record read by a call the plan then kills (After) is released,
// as the dead process would never hand it on.
type faultRows struct {
	source.Rows
	f *deltatest.Faults
}

func (r *faultRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := hit(r.f, "Rows.Next", func() (arrow.RecordBatch, error) { return r.Rows.Next(ctx) })
	if err != nil && rec != nil {
		rec.Release()
		return nil, err
	}
	return rec, err
}
