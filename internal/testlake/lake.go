// Package testlake is the one place end-to-end tests get their lake from: Delta tables,
// a checkpoint prefix and a source, on local disk or on the emulators (S3 on gofakes3 in
// process, the DynamoDB log store on dynalite, which scripts/test.sh and
// scripts/with-dynalite.sh start), with one fault-injection mechanism for all of them: a
// deltatest.Faults plan that every store, log store, DynamoDB and source call of the
// handles opened while it is set goes through (docs/design.md §5 invariant 5: every step
// killed at any external call, then re-run, converges). Test support: product code does
// not import it.
package testlake

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/dynamotest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Backend is where a lake's tables live.
type Backend string

const (
	// Local is Delta on local disk with the local log store.
	Local Backend = "local"
	// AWS is Delta on S3 (gofakes3, in process) with the DynamoDB log store (dynalite:
	// without MSSQLCDC_DYNAMODB_ENDPOINT the test skips, and fails when CI is set).
	AWS Backend = "aws"
	// S3CondPut is Delta on S3 (gofakes3, in process) committing by S3 conditional put
	// (logstore/condput); it needs no DynamoDB. Not in Backends: tests that measure the
	// log stores' costs ask for it by name.
	S3CondPut Backend = "s3-condput"
)

// Backends are every backend, for tests that run on each.
var Backends = []Backend{Local, AWS}

// Lake is one test's lake. Its zero Faults opens plain handles.
type Lake struct {
	t       testing.TB
	Backend Backend
	root    string // a local directory, or s3://<bucket>/
	s3      *emulators.S3Server
	bucket  string
	ddb     *dynamodb.Client
	logs    string // the DynamoDB log table
	// Faults, when set, routes every call of the handles opened from then on (Store,
	// Table, Source) through its plan: it counts and names them, and kills the caller at
	// its KillAt-th. Set it to nil to open clean handles again (for a rerun or a check).
	Faults *deltatest.Faults
	// WrapStore and WrapSource, when set, wrap every store and source handed out from then
	// on (under Faults), for a test that changes one call's behaviour: a rival's write just
	// before ours, a read that hides its network wait, cleanup underneath a read.
	WrapStore  func(storage.Store) storage.Store
	WrapSource func(source.Source) source.Source
}

// New makes an empty lake on backend; everything it made goes away with t.
func New(t testing.TB, backend Backend) *Lake {
	t.Helper()
	l := &Lake{t: t, Backend: backend}
	switch backend {
	case Local:
		l.root = t.TempDir()
	case S3CondPut:
		l.s3 = emulators.StartS3(t)
		l.bucket = l.s3.Bucket(t)
		l.root = "s3://" + l.bucket + "/"
	case AWS:
		l.ddb = emulators.DynamoDB(t)
		l.s3 = emulators.StartS3(t)
		l.bucket = l.s3.Bucket(t)
		l.logs = emulators.UniqueName("delta_log_")
		if err := dynamo.CreateTable(context.Background(), l.ddb, l.logs, dynamo.SetupOptions{SkipTTL: true, PollInterval: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		l.root = "s3://" + l.bucket + "/"
	default:
		t.Fatalf("testlake: unknown backend %q", backend)
	}
	return l
}

// URL is the location of name (a slash-separated path) in the lake: a local path, or
// s3://<bucket>/<name>.
func (l *Lake) URL(name string) string {
	if l.Backend == Local {
		return filepath.Join(l.root, filepath.FromSlash(name))
	}
	return l.root + name
}

// Use points spec's bronze, checkpoint and facts table at URL("bronze"), URL("checkpoint")
// and URL("facts"), and its storage at the lake's log store.
func (l *Lake) Use(spec *config.Spec) {
	spec.Bronze, spec.Checkpoint, spec.FactsTable = l.URL("bronze"), l.URL("checkpoint"), l.URL("facts")
	if l.Backend == AWS {
		spec.Storage = config.Storage{DynamoTable: l.logs}
	}
}

// Store is the store rooted at url (one of the lake's URLs), through WrapStore and Faults
// when set.
func (l *Lake) Store(url string) storage.Store { return l.wrap(l.RawStore(url)) }

func (l *Lake) wrap(st storage.Store) storage.Store {
	if l.WrapStore != nil {
		st = l.WrapStore(st)
	}
	if l.Faults != nil {
		st = l.Faults.Store(st)
	}
	return st
}

// RawStore is the store rooted at url, never through Faults (for checks).
func (l *Lake) RawStore(url string) storage.Store {
	l.t.Helper()
	if l.Backend != Local {
		return s3store.New(l.s3.Client(), l.bucket, strings.TrimPrefix(url, l.root))
	}
	st, err := localstore.New(url)
	if err != nil {
		l.t.Fatal(err)
	}
	return st
}

// Table opens the Delta table at url, every store, log store and DynamoDB call through
// WrapStore and Faults when set. Retries after a lost commit race wait at most a
// nanosecond.
func (l *Lake) Table(url string) *deltalog.Table {
	st := l.Store(url)
	var ls logstore.LogStore
	var err error
	switch l.Backend {
	case AWS:
		var c dynamo.Client = l.ddb
		if l.Faults != nil {
			c = dynamotest.WithFaults(c, l.Faults)
		}
		ls, err = dynamo.New(c, st, dynamo.Options{Table: l.logs})
	case S3CondPut:
		ls = condput.New(st)
	default:
		ls, err = localfs.New(url)
	}
	if err != nil {
		l.t.Fatal(err)
	}
	if l.Faults != nil {
		ls = l.Faults.LogStore(ls)
	}
	return deltalog.Open(st, ls, deltalog.Options{RetryBaseDelay: 1})
}

// RawTable opens the Delta table at url without wrappers or Faults (for checks).
func (l *Lake) RawTable(url string) *deltalog.Table {
	f, ws := l.Faults, l.WrapStore
	l.Faults, l.WrapStore = nil, nil
	defer func() { l.Faults, l.WrapStore = f, ws }()
	return l.Table(url)
}

// DeleteLogEntries deletes the DynamoDB log store's entries of the table at url (the AWS
// backend; nothing on the others), as starting a table over deletes them with its files
// (a first commit refuses while the old ones are there: dynamo.StaleEntryError).
func (l *Lake) DeleteLogEntries(url string) {
	l.t.Helper()
	if l.Backend != AWS {
		return
	}
	ls, err := dynamo.New(l.ddb, l.RawStore(url), dynamo.Options{Table: l.logs})
	if err != nil {
		l.t.Fatal(err)
	}
	ctx := context.Background()
	out, err := l.ddb.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &l.logs,
		KeyConditionExpression:    aws.String("tablePath = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: ls.TablePathKey()}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, item := range out.Items {
		key := map[string]types.AttributeValue{"tablePath": item["tablePath"], "fileName": item["fileName"]}
		if _, err := l.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &l.logs, Key: key}); err != nil {
			l.t.Fatal(err)
		}
	}
}

// Source is src through WrapSource and Faults (FaultSource) when set.
func (l *Lake) Source(src source.Source) source.Source {
	if l.WrapSource != nil {
		src = l.WrapSource(src)
	}
	if l.Faults != nil {
		src = FaultSource(src, l.Faults)
	}
	return src
}

// Mutates reports whether a call named in deltatest.Faults.Ops changes state (a put, copy,
// delete or log write): a kill after it, its answer lost, differs from a kill before the
// next call.
func Mutates(op string) bool {
	for _, w := range []string{"Put", "Copy", "Delete", "Write"} {
		if strings.Contains(op, w) {
			return true
		}
	}
	return false
}

// KillPlans are the fault plans of a kill-and-rerun test over a clean run that made the
// calls ops: a kill before every every-th call, then a kill after every every-th call that
// mutates (its answer lost). every < 1 is 1.
func KillPlans(ops []string, every int) []*deltatest.Faults {
	every = max(every, 1)
	var out []*deltatest.Faults
	for _, after := range []bool{false, true} {
		for k := 1; k <= len(ops); k += every {
			if after && !Mutates(ops[k-1]) {
				continue
			}
			out = append(out, &deltatest.Faults{KillAt: k, After: after})
		}
	}
	return out
}
