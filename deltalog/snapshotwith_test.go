package deltalog

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// SnapshotWith reads two tables whose DynamoDB log stores share a DynamoDB table in one
// request once both are open, with the snapshots Snapshot gives: another process's commit
// to the first is read, the second is then left to the caller (nil); on a log store that
// cannot (here the in-memory one) it is Snapshot of the first table alone
// (docs/decisions/0019-dynamo-warm-check-one-request.md).
func TestSnapshotWith(t *testing.T) {
	ctx := context.Background()
	p := newDynamoPair(t)
	c := p.c
	open := func(name string, counted bool) *Table { t.Helper(); return p.open(t, name, counted) }
	a, b := open("a", true), open("b", true)
	createTable(t, a)
	createTable(t, b)
	appendFile(t, a, "a1")
	// wantB -1: b not read (otherSnap nil).
	with := func(step string, wantA, wantB int64, wantReqs map[string]int) {
		t.Helper()
		c.Reset()
		sa, sb, err := a.SnapshotWith(ctx, b)
		if err != nil || sa == nil || (sb == nil) != (wantB < 0) {
			t.Fatalf("%s: SnapshotWith = %v, %v, %v; want b read: %t", step, sa, sb, err, wantB >= 0)
		}
		if sa.Version() != wantA || len(sa.Files()) != int(wantA)+1 {
			t.Errorf("%s: a at version %d with %d files, want version %d", step, sa.Version(), len(sa.Files()), wantA)
		}
		if sb != nil && (sb.Version() != wantB || len(sb.Files()) != int(wantB)+1) {
			t.Errorf("%s: b at version %d with %d files, want version %d", step, sb.Version(), len(sb.Files()), wantB)
		}
		if !maps.Equal(c.Counts(), wantReqs) {
			t.Errorf("%s: requests %v, want %v", step, c.Counts(), wantReqs)
		}
	}
	one := map[string]int{"ddb.BatchGetItem": 1}
	with("both kept", 1, 0, one)

	// Another process commits to b: b is left to the caller, whose Snapshot reads it.
	appendFile(t, open("b", false), "b1")
	with("after another's commit to b", 1, -1, one)
	if s := snapshot(t, b); s.Version() != 1 {
		t.Fatalf("b's Snapshot: version %d, want 1", s.Version())
	}
	with("b read", 1, 1, one)

	// Another process commits to a: a's Latest (its Query) finds it, a's kept snapshot
	// is advanced by reading the commit.
	appendFile(t, open("a", false), "a2")
	with("after another's commit to a", 2, 1, map[string]int{"ddb.BatchGetItem": 1, "ddb.Query": 1})
	with("then", 2, 1, one)

	// Not joint (the in-memory log store): a's Snapshot alone.
	m1, _ := newMemTable(Options{})
	m2, _ := newMemTable(Options{})
	createTable(t, m1)
	createTable(t, m2)
	if s1, s2, err := m1.SnapshotWith(ctx, m2); err != nil || s1 == nil || s2 != nil || s1.Version() != 0 {
		t.Fatalf("SnapshotWith on memLogStore: %v, %v, %v; want version 0 and nil", s1, s2, err)
	}
}

// dynamoPair is two in-memory tables, "a" and "b", whose DynamoDB log stores share one
// DynamoDB table on dynalite (ddb, table).
type dynamoPair struct {
	ddb    *dynamodb.Client
	table  string
	c      *storagetest.Counter
	stores map[string]*memStore
}

func newDynamoPair(t *testing.T) *dynamoPair {
	t.Helper()
	ddb := emulators.DynamoDB(t)
	table := emulators.UniqueName("delta_log_")
	if err := dynamo.CreateTable(context.Background(), ddb, table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return &dynamoPair{ddb: ddb, table: table, c: &storagetest.Counter{},
		stores: map[string]*memStore{"a": newMemStore(), "b": newMemStore()}}
}

// open opens table name ("a" or "b") on a log store of its own, its DynamoDB requests
// counted in p.c when counted.
func (p *dynamoPair) open(t *testing.T, name string, counted bool) *Table {
	t.Helper()
	var client dynamo.Client = p.ddb
	if counted {
		client = ddbcount.Counting(p.ddb, p.c)
	}
	l, err := dynamo.New(client, p.stores[name], dynamo.Options{Table: p.table, TablePath: "s3a://b/" + name, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return Open(p.stores[name], l, Options{RetryBaseDelay: time.Microsecond})
}
