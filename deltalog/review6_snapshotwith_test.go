package deltalog

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SnapshotWith on two kept tables, each started over (its files and entries deleted and
// written again with as many versions, other files): the one started over is never
// answered from what the Table kept. As the first, its log store's Latest tells it and its
// snapshot is the new table's, the other's answered by the same request; as the second,
// it is not answered (nil) and its own Snapshot reads the new table, after which a
// transaction begun on a snapshot of the old table refuses to commit. (Committing on the
// old snapshot with no read in between is the limit decision 0016 lists: a table deleted
// between an invocation's read and its commit.)
func TestReview6SnapshotWithStartedOver(t *testing.T) {
	ctx := context.Background()
	p := newDynamoPair(t)
	ddb, table, c, stores := p.ddb, p.table, p.c, p.stores
	open := func(name string, counted bool) *Table { t.Helper(); return p.open(t, name, counted) }
	startOver := func(name, file string) {
		t.Helper()
		m := stores[name]
		m.mu.Lock()
		m.objs = map[string]memObj{}
		m.mu.Unlock()
		out, err := ddb.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &table,
			KeyConditionExpression:    aws.String("tablePath = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "s3a://b/" + name}},
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: map[string]types.AttributeValue{
				"tablePath": item["tablePath"], "fileName": item["fileName"]}}); err != nil {
				t.Fatal(err)
			}
		}
		n := open(name, false)
		createTable(t, n)
		appendFile(t, n, file)
	}
	paths := func(s *Snapshot) []string {
		var out []string
		for _, f := range s.Files() {
			out = append(out, f.Path)
		}
		slices.Sort(out)
		return out
	}
	a, b := open("a", true), open("b", true)
	createTable(t, a)
	createTable(t, b)
	appendFile(t, a, "a1")
	appendFile(t, b, "b1")
	sa, sb, err := a.SnapshotWith(ctx, b)
	if err != nil || sb == nil || sa.Version() != 1 || sb.Version() != 1 {
		t.Fatalf("warm: SnapshotWith = %v, %v, %v", sa, sb, err)
	}
	oldB := sb

	// b started over with as many versions.
	startOver("b", "b1-new")
	c.Reset()
	sa, sb, err = a.SnapshotWith(ctx, b)
	if err != nil || sb != nil || sa.Version() != 1 {
		t.Fatalf("b started over: SnapshotWith = %v, %v, %v; want a at 1, b not answered", sa, sb, err)
	}
	if want := map[string]int{"ddb.BatchGetItem": 1}; !maps.Equal(c.Counts(), want) {
		t.Errorf("b started over: requests %v, want %v", c.Counts(), want)
	}
	if s := snapshot(t, b); s.Version() != 1 || !slices.Equal(paths(s), []string{"part-0.parquet", "part-b1-new.parquet"}) {
		t.Errorf("b's Snapshot after starting over: version %d files %v, want the new table's", s.Version(), paths(s))
	}
	tx := b.Begin(oldB)
	tx.Add(testAdd("b2-on-old"))
	if _, err := tx.Commit(ctx); err == nil {
		t.Error("a transaction on the old b's snapshot committed into the new b")
	}
	sa, sb, err = a.SnapshotWith(ctx, b)
	if err != nil || sb == nil || !slices.Equal(paths(sb), []string{"part-0.parquet", "part-b1-new.parquet"}) {
		t.Fatalf("then: SnapshotWith = %v, %v, %v; want the new b answered", sa, sb, err)
	}

	// a started over with as many versions.
	startOver("a", "a1-new")
	c.Reset()
	sa, sb, err = a.SnapshotWith(ctx, b)
	if err != nil || sb == nil || sa.Version() != 1 || !slices.Equal(paths(sa), []string{"part-0.parquet", "part-a1-new.parquet"}) {
		t.Fatalf("a started over: SnapshotWith = %v (files %v), %v, %v; want the new a, b answered", sa, paths(sa), sb, err)
	}
	if n := c.Counts()["ddb.BatchGetItem"]; n != 1 {
		t.Errorf("a started over: %d BatchGetItem, want 1 (%v)", n, c.Counts())
	}
}
