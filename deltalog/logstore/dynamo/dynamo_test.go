package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// env is one table on the S3 emulator with a fresh DynamoDB log table on dynalite.
type env struct {
	ddb   *dynamodb.Client
	table string
	store storage.Store
}

func newEnv(t *testing.T, srv *emulators.S3Server) env { return newEnvTB(t, srv) }

func newEnvTB(t testing.TB, srv *emulators.S3Server) env {
	t.Helper()
	ddb := emulators.DynamoDB(t)
	table := emulators.UniqueName("delta_log_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dynamo.CreateTable(ctx, ddb, table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return env{ddb: ddb, table: table, store: s3store.New(srv.Client(), srv.Bucket(t), "warehouse/orders/")}
}

func (e env) logStore(t *testing.T, opts dynamo.Options) *dynamo.LogStore {
	t.Helper()
	opts.Table = e.table
	if opts.Scheme == "" {
		opts.Scheme = "s3a"
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = time.Millisecond
	}
	l, err := dynamo.New(e.ddb, e.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	srv := emulators.StartS3(t)
	logstoretest.Run(t, func(t *testing.T) logstoretest.Table {
		e := newEnv(t, srv)
		return logstoretest.Table{Store: e.store, New: func() logstore.LogStore { return e.logStore(t, dynamo.Options{}) }}
	})
}

func getItem(t *testing.T, e env, tablePath, fileName string) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: &e.table,
		Key: map[string]types.AttributeValue{
			"tablePath": &types.AttributeValueMemberS{Value: tablePath},
			"fileName":  &types.AttributeValueMemberS{Value: fileName},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return "<not S>"
}

// The item a commit leaves is exactly what Spark's S3DynamoDBLogStore writes and reads.
func TestItemSchemaMatchesSpark(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := e.logStore(t, dynamo.Options{Now: func() time.Time { return now }, NewID: func() string { return "1b4e28ba-2fa1-11d2-883f-0016d3cca427" }})
	if l.TablePathKey() != "s3a://"+strings.TrimPrefix(e.store.URL(), "s3://") {
		t.Fatalf("tablePath = %q for store %q", l.TablePathKey(), e.store.URL())
	}
	if err := l.Write(t.Context(), 0, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	item := getItem(t, e, l.TablePathKey(), "00000000000000000000.json")
	if len(item) != 5 {
		t.Fatalf("item has %d attributes, want 5: %v", len(item), item)
	}
	if got := str(item, "tempPath"); got != ".tmp/00000000000000000000.json.1b4e28ba-2fa1-11d2-883f-0016d3cca427" {
		t.Errorf("tempPath = %q", got)
	}
	if got := str(item, "complete"); got != "true" {
		t.Errorf("complete = %q", got)
	}
	exp, ok := item["expireTime"].(*types.AttributeValueMemberN)
	if !ok || exp.Value != "1772452800" { // 2026-03-02T12:00:00Z, one day later
		t.Errorf("expireTime = %#v, want N 1772452800", item["expireTime"])
	}
	// The temp file stays (like Spark), under _delta_log/, with the commit's bytes.
	b, err := e.store.GetRange(t.Context(), "_delta_log/.tmp/00000000000000000000.json.1b4e28ba-2fa1-11d2-883f-0016d3cca427", 0, -1)
	if err != nil || string(b) != "{}\n" {
		t.Fatalf("temp file = %q, %v", b, err)
	}
}

// claim puts an incomplete entry as a writer that died after its conditional put would
// leave it, with its temp file written (or not).
func claim(t *testing.T, e env, tablePath string, v int64, tempPath string, data []byte) {
	t.Helper()
	if data != nil {
		if err := e.store.Put(t.Context(), "_delta_log/"+tempPath, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	fileName := strings.TrimPrefix(logKey(v), "_delta_log/")
	_, err := e.ddb.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName: &e.table,
		Item: map[string]types.AttributeValue{
			"tablePath": &types.AttributeValueMemberS{Value: tablePath},
			"fileName":  &types.AttributeValueMemberS{Value: fileName},
			"tempPath":  &types.AttributeValueMemberS{Value: tempPath},
			"complete":  &types.AttributeValueMemberS{Value: "false"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func logKey(v int64) string { return fmt.Sprintf("_delta_log/%020d.json", v) }

func TestLatestCompletesAHalfDoneEntry(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	ctx := t.Context()
	if err := l.Write(ctx, 0, []byte("v0\n")); err != nil {
		t.Fatal(err)
	}
	// A Spark writer claimed 1 and died before copying.
	claim(t, e, l.TablePathKey(), 1, ".tmp/00000000000000000001.json.spark", []byte("v1 from spark\n"))

	reader := e.logStore(t, dynamo.Options{})
	if v, err := reader.Latest(ctx); err != nil || v != 1 {
		t.Fatalf("Latest = %d, %v; want 1", v, err)
	}
	if b, err := reader.Read(ctx, 1); err != nil || string(b) != "v1 from spark\n" {
		t.Fatalf("Read(1) = %q, %v", b, err)
	}
	if got := str(getItem(t, e, l.TablePathKey(), "00000000000000000001.json"), "complete"); got != "true" {
		t.Fatalf("entry 1 complete = %q after recovery", got)
	}
	if err := l.Write(ctx, 1, []byte("mine\n")); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("Write(1): %v, want ErrVersionExists", err)
	}
}

func TestReadCompletesAHalfDoneEntry(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	// A delta-rs writer's temp file form, relative to _delta_log/.
	claim(t, e, l.TablePathKey(), 0, "_commit_6f2c.json.tmp", []byte("v0 from delta-rs\n"))
	if b, err := l.Read(t.Context(), 0); err != nil || string(b) != "v0 from delta-rs\n" {
		t.Fatalf("Read(0) = %q, %v", b, err)
	}
}

func TestWriteCompletesThePreviousEntry(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	ctx := t.Context()
	if err := l.Write(ctx, 0, []byte("v0\n")); err != nil {
		t.Fatal(err)
	}
	claim(t, e, l.TablePathKey(), 1, ".tmp/00000000000000000001.json.dead", []byte("v1\n"))
	// A fresh writer that believes 1 is next loses it, but a writer of 2 (knowing
	// nothing) completes 1 first, so the log has no gap.
	w := e.logStore(t, dynamo.Options{})
	if err := w.Write(ctx, 1, []byte("other v1\n")); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("Write(1): %v, want ErrVersionExists", err)
	}
	if err := w.Write(ctx, 2, []byte("v2\n")); err != nil {
		t.Fatalf("Write(2): %v", err)
	}
	for v, want := range []string{"v0\n", "v1\n", "v2\n"} {
		if b, err := commitFile(t, e, int64(v)); err != nil || b != want {
			t.Fatalf("%d.json = %q, %v; want %q", v, b, err, want)
		}
	}
}

func commitFile(t *testing.T, e env, v int64) (string, error) {
	b, err := e.store.GetRange(t.Context(), logKey(v), 0, -1)
	return string(b), err
}

func TestUnrecoverableEntryIsAnError(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{Attempts: 2})
	claim(t, e, l.TablePathKey(), 0, ".tmp/00000000000000000000.json.gone", nil)
	_, err := l.Latest(t.Context())
	var tm *dynamo.TempFileMissingError
	if !errors.As(err, &tm) || tm.Version != 0 {
		t.Fatalf("Latest: err = %v, want *TempFileMissingError for 0", err)
	}
}

func TestPreviousCommitMissing(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	err := l.Write(t.Context(), 3, []byte("x\n"))
	var pm *dynamo.PreviousCommitMissingError
	if !errors.As(err, &pm) || pm.Version != 2 {
		t.Fatalf("Write(3) on an empty table: err = %v, want *PreviousCommitMissingError{2}", err)
	}
}

func TestStaleEntryOfARecreatedTable(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	ctx := t.Context()
	if err := l.Write(ctx, 0, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, logKey(0)); err != nil { // the table is dropped
		t.Fatal(err)
	}
	err := e.logStore(t, dynamo.Options{}).Write(ctx, 0, []byte("new\n"))
	var se *dynamo.StaleEntryError
	if !errors.As(err, &se) {
		t.Fatalf("Write(0): err = %v, want *StaleEntryError", err)
	}
}

// A commit file that exists without an entry (the entry expired) is never overwritten,
// even by a writer whose knowledge lets it skip the pre-checks.
func TestExistingCommitFileWithoutEntry(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	l := e.logStore(t, dynamo.Options{})
	if err := l.Write(ctx, 0, []byte("v0\n")); err != nil {
		t.Fatal(err)
	}
	// Version 1 was committed long ago; its entry has expired.
	if err := e.store.PutIfAbsent(ctx, logKey(1), []byte("v1 old\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, 1, []byte("v1 new\n")); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("Write(1): %v, want ErrVersionExists", err)
	}
	if b, _ := commitFile(t, e, 1); b != "v1 old\n" {
		t.Fatalf("1.json = %q, overwritten", b)
	}
	if v, err := l.Latest(ctx); err != nil || v != 1 {
		t.Fatalf("Latest = %d, %v", v, err)
	}
}

func TestSchemeSeparatesKeys(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	a := e.logStore(t, dynamo.Options{Scheme: "s3a"})
	b := e.logStore(t, dynamo.Options{Scheme: "s3"})
	if a.TablePathKey() == b.TablePathKey() {
		t.Fatalf("s3a and s3 gave the same key %q", a.TablePathKey())
	}
	if _, err := dynamo.New(e.ddb, e.store, dynamo.Options{TablePath: "s3a://x/y"}); err != nil {
		t.Fatal(err)
	}
}

// delta-rs moves the temp file (copy, then delete) and may die before marking the entry
// complete: the commit file is there, the temp file is not. Recovery marks it complete.
func TestRecoverAMovedTempFile(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	ctx := t.Context()
	claim(t, e, l.TablePathKey(), 0, "_commit_moved.json.tmp", nil)
	if err := e.store.PutIfAbsent(ctx, logKey(0), []byte("v0 from delta-rs\n")); err != nil {
		t.Fatal(err)
	}
	if v, err := l.Latest(ctx); err != nil || v != 0 {
		t.Fatalf("Latest = %d, %v", v, err)
	}
	item := getItem(t, e, l.TablePathKey(), "00000000000000000000.json")
	if str(item, "complete") != "true" || item["expireTime"] == nil {
		t.Fatalf("entry after recovery = %v, want complete with expireTime", item)
	}
	if err := l.Write(ctx, 1, []byte("v1\n")); err != nil {
		t.Fatal(err)
	}
}
