package dynamo_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// faultyDDB routes DynamoDB requests through a fault plan shared with the store's.
type faultyDDB struct {
	dynamo.Client
	f *storagetest.Faults
}

func (d faultyDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	err = d.f.Do("ddb.GetItem", func() (err error) { out, err = d.Client.GetItem(ctx, in, o...); return err })
	return out, err
}

func (d faultyDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = d.f.Do("ddb.PutItem", func() (err error) { out, err = d.Client.PutItem(ctx, in, o...); return err })
	return out, err
}

func (d faultyDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = d.f.Do("ddb.UpdateItem", func() (err error) { out, err = d.Client.UpdateItem(ctx, in, o...); return err })
	return out, err
}

func (d faultyDDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	err = d.f.Do("ddb.Query", func() (err error) { out, err = d.Client.Query(ctx, in, o...); return err })
	return out, err
}

// TestKilledWriter kills a writer (a fresh process: Latest then Write of the next version,
// or a cold Write)
// at each of its requests, before the request or after it (answer lost), and checks the
// next writer: the log reads back with no gap, an acknowledged commit is there, a claimed
// version holds the killed writer's bytes, and the next commit succeeds.
func TestKilledWriter(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	clean := func() *dynamo.LogStore { return e.logStore(t, dynamo.Options{}) }
	if err := clean().Write(ctx, 0, []byte("v0\n")); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{0: "v0\n"}
	next := int64(1)
	for _, mode := range []struct{ after, cold bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		after := mode.after
		for k := 1; ; k++ {
			if k > 20 {
				t.Fatal("a commit made over 20 requests")
			}
			step := fmt.Sprintf("after=%v cold=%v k=%d", after, mode.cold, k)
			f := &storagetest.Faults{}
			l, err := dynamo.New(faultyDDB{e.ddb, f}, storagetest.NewFaulty(e.store, f), dynamo.Options{Table: e.table, Scheme: "s3a", RetryDelay: 1, Attempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			f.KillAt(k, after, nil)
			data := fmt.Sprintf("killed writer, %s\n", step)
			// A warm writer learns the log with Latest; a cold one writes the version it
			// believes is next, and runs the pre-checks.
			v, err := next-1, error(nil)
			if !mode.cold {
				v, err = l.Latest(ctx)
			}
			if err == nil {
				err = l.Write(ctx, v+1, []byte(data))
			}
			fired := f.Calls() >= k
			if err == nil && v+1 != next {
				t.Fatalf("%s: wrote version %d, want %d", step, v+1, next)
			}

			r := clean()
			latest, lerr := r.Latest(ctx)
			if lerr != nil {
				t.Fatalf("%s: Latest after the kill: %v", step, lerr)
			}
			switch {
			case err == nil && latest != next:
				t.Fatalf("%s: acknowledged version %d, but Latest = %d", step, next, latest)
			case latest == next:
				want[next] = data // the claim landed: the killed writer's bytes are version next
				next++
			case latest != next-1:
				t.Fatalf("%s: Latest = %d, want %d or %d", step, latest, next-1, next)
			}
			if err := r.Write(ctx, next, fmt.Appendf(nil, "clean %d\n", next)); err != nil {
				t.Fatalf("%s: next writer: %v (ops of the killed one: %v)", step, err, f.Ops())
			}
			want[next] = fmt.Sprintf("clean %d\n", next)
			next++
			for v := range next {
				b, err := r.Read(ctx, v)
				if err != nil || !bytes.Equal(b, []byte(want[v])) {
					t.Fatalf("%s: version %d = %q, %v; want %q", step, v, b, err, want[v])
				}
			}
			if !fired {
				t.Logf("%s: an unkilled commit made %d requests: %v", step, f.Calls(), f.Ops())
				break
			}
		}
	}
}
