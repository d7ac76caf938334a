package stream

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// faultSource routes every Source call (and every Rows.Next of a read) through a
// deltatest.Faults plan, so a kill can land on any SQL call.
type faultSource struct {
	source.Source
	f *deltatest.Faults
}

func hit1[T any](f *deltatest.Faults, op string, call func() (T, error)) (T, error) {
	var v T
	err := f.Hit("source."+op, func() error {
		var err error
		v, err = call()
		return err
	})
	return v, err
}

func (s *faultSource) MaxLSN(ctx context.Context) (lsn.LSN, error) {
	return hit1(s.f, "MaxLSN", func() (lsn.LSN, error) { return s.Source.MaxLSN(ctx) })
}

func (s *faultSource) MinLSN(ctx context.Context, ci string) (lsn.LSN, error) {
	return hit1(s.f, "MinLSN", func() (lsn.LSN, error) { return s.Source.MinLSN(ctx, ci) })
}

type timeOK struct {
	t  time.Time
	ok bool
}

func (s *faultSource) CommitTime(ctx context.Context, l lsn.LSN) (time.Time, bool, error) {
	v, err := hit1(s.f, "CommitTime", func() (timeOK, error) {
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
	v, err := hit1(s.f, "CommitAtOrBefore", func() (commitOK, error) {
		c, ok, err := s.Source.CommitAtOrBefore(ctx, l)
		return commitOK{c, ok}, err
	})
	return v.c, v.ok, err
}

type lsnOK struct {
	l  lsn.LSN
	ok bool
}

func (s *faultSource) NthCommitAfter(ctx context.Context, after lsn.LSN, n int) (lsn.LSN, bool, error) {
	v, err := hit1(s.f, "NthCommitAfter", func() (lsnOK, error) {
		l, ok, err := s.Source.NthCommitAfter(ctx, after, n)
		return lsnOK{l, ok}, err
	})
	return v.l, v.ok, err
}

func (s *faultSource) CaptureInstances(ctx context.Context) ([]source.CaptureInstance, error) {
	return hit1(s.f, "CaptureInstances", func() ([]source.CaptureInstance, error) { return s.Source.CaptureInstances(ctx) })
}

func (s *faultSource) CapturedColumns(ctx context.Context, ci string) ([]source.Column, error) {
	return hit1(s.f, "CapturedColumns", func() ([]source.Column, error) { return s.Source.CapturedColumns(ctx, ci) })
}

func (s *faultSource) DDLHistory(ctx context.Context, ci string, after, upto lsn.LSN) ([]source.DDLEvent, error) {
	return hit1(s.f, "DDLHistory", func() ([]source.DDLEvent, error) { return s.Source.DDLHistory(ctx, ci, after, upto) })
}

func (s *faultSource) SplitChanges(ctx context.Context, ci string, from, to lsn.LSN, n int) ([]source.Tile, error) {
	return hit1(s.f, "SplitChanges", func() ([]source.Tile, error) { return s.Source.SplitChanges(ctx, ci, from, to, n) })
}

func (s *faultSource) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	rows, err := hit1(s.f, "ReadChanges", func() (source.Rows, error) { return s.Source.ReadChanges(ctx, r) })
	if err != nil {
		return nil, err
	}
	return &faultRows{Rows: rows, f: s.f}, nil
}

type faultRows struct {
	source.Rows
	f *deltatest.Faults
}

func (r *faultRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := hit1(r.f, "Rows.Next", func() (arrow.RecordBatch, error) { return r.Rows.Next(ctx) })
	if err != nil && rec != nil {
		rec.Release()
		return nil, err
	}
	return rec, err
}

// faultDDB routes every DynamoDB call of the log store through the fault plan.
type faultDDB struct {
	dynamo.Client
	f *deltatest.Faults
}

func (c *faultDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return hit1(c.f, "ddb.GetItem", func() (*dynamodb.GetItemOutput, error) { return c.Client.GetItem(ctx, in, o...) })
}

func (c *faultDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return hit1(c.f, "ddb.PutItem", func() (*dynamodb.PutItemOutput, error) { return c.Client.PutItem(ctx, in, o...) })
}

func (c *faultDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return hit1(c.f, "ddb.UpdateItem", func() (*dynamodb.UpdateItemOutput, error) { return c.Client.UpdateItem(ctx, in, o...) })
}

func (c *faultDDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return hit1(c.f, "ddb.Query", func() (*dynamodb.QueryOutput, error) { return c.Client.Query(ctx, in, o...) })
}
