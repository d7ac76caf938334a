package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// A log seen empty, with no entry, is an observation like a seen commit: the next Latest
// is one Query, and the first Write skips its pre-checks (no HEAD of 0.json, no GetItem),
// since any commit made since would have its entry. Another writer's commit is still
// found, and an observation older than KnownFor lists the log again.
func TestEmptyLogIsKnownAfterOneListing(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	c := &storagetest.Counter{}
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	l, err := dynamo.New(ddbcount.Counting(e.ddb, c), storagetest.NewCounting(e.store, c), dynamo.Options{Table: e.table, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	latest := func(want int64, wantReqs map[string]int) {
		t.Helper()
		c.Reset()
		if v, err := l.Latest(ctx); err != nil || v != want {
			t.Fatalf("Latest = %d, %v; want %d", v, err, want)
		}
		if !maps.Equal(c.Counts(), wantReqs) {
			t.Errorf("Latest: %s, want %v", summary(c), wantReqs)
		}
	}
	oneQuery := map[string]int{"ddb.Query": 1}
	latest(-1, map[string]int{"ddb.Query": 1, "GetRange": 1, "List": 1})
	latest(-1, oneQuery)

	c.Reset()
	if err := l.Write(ctx, 0, logstoretest.Commit(0, 0)); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"Put": 1, "ddb.PutItem": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1}; !maps.Equal(c.Counts(), want) {
		t.Errorf("Write(0) on a log seen empty: %s, want %v", summary(c), want)
	}
	latest(0, oneQuery)

	// Another writer commits 1.
	other := counted(t, e, &storagetest.Counter{})
	if _, err := other.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Write(ctx, 1, logstoretest.Commit(0, 1)); err != nil {
		t.Fatal(err)
	}
	latest(1, oneQuery)

	// Stale after KnownFor: listed again.
	now = now.Add(dynamo.DefaultKnownFor)
	latest(1, map[string]int{"ddb.Query": 1, "List": 1})
}

// A log whose entries are gone (TTL) is listed once; the listing is then an observation,
// and the next Latest is one Query.
func TestExpiredEntriesKnownAfterOneListing(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	for v := range int64(3) {
		data := logstoretest.Commit(0, int(v))
		if err := e.store.Put(ctx, logKey(v), bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	c := &storagetest.Counter{}
	l := counted(t, e, c)
	for i, want := range []map[string]int{{"ddb.Query": 1, "GetRange": 1, "List": 1}, {"ddb.Query": 1}} {
		c.Reset()
		if v, err := l.Latest(ctx); err != nil || v != 2 {
			t.Fatalf("Latest %d = %d, %v; want 2", i, v, err)
		}
		if !maps.Equal(c.Counts(), want) {
			t.Errorf("Latest %d: %s, want %v", i, summary(c), want)
		}
	}
	// The observation lets Write(3) skip its pre-checks; 2.json is still never overwritten.
	if err := l.Write(ctx, 2, []byte("other\n")); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("Write(2) over an existing file: %v, want ErrVersionExists", err)
	}
	c.Reset()
	if err := l.Write(ctx, 3, logstoretest.Commit(0, 3)); err != nil {
		t.Fatal(err)
	}
	if c.Total() != 4 {
		t.Errorf("Write(3): %s, want 4 requests", summary(c))
	}
}

// openLatest is OpenLatest with a listing as a table's first open makes it (commitlog's:
// _last_checkpoint, then the log from it; or the whole log), recording where it listed from.
func openLatest(t *testing.T, l *dynamo.LogStore, st storage.Store) (int64, int64) {
	t.Helper()
	listedFrom := int64(-2)
	v, err := l.OpenLatest(t.Context(), func(ctx context.Context, from int64) (int64, string, error) {
		listedFrom = from
		n, err := commitlog.Newest(ctx, st, from)
		return n.Version, n.ETag, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, listedFrom
}

// OpenLatest takes the latest version from the caller's listing with one Query, has a
// short log listed whole (no _last_checkpoint read), and still finds what the listing
// alone would miss: a half-done commit (recovered), and stale entries of a re-created
// table, which leave the next Write(0) refused.
func TestOpenLatest(t *testing.T) {
	srv := emulators.StartS3(t)
	ctx := t.Context()

	t.Run("short log", func(t *testing.T) {
		e := newEnv(t, srv)
		w := counted(t, e, &storagetest.Counter{})
		for v := range int64(2) {
			if err := w.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
				t.Fatal(err)
			}
		}
		c := &storagetest.Counter{}
		l := counted(t, e, c)
		st := storagetest.NewCounting(e.store, c)
		if v, from := openLatest(t, l, st); v != 1 || from != 0 {
			t.Fatalf("OpenLatest = %d listed from %d, want 1 from 0", v, from)
		}
		if want := map[string]int{"ddb.Query": 1, "List": 1}; !maps.Equal(c.Counts(), want) {
			t.Errorf("OpenLatest: %s, want %v", summary(c), want)
		}
		c.Reset()
		if err := l.Write(ctx, 2, logstoretest.Commit(0, 2)); err != nil || c.Total() != 4 {
			t.Errorf("Write(2) after OpenLatest: %v, %s; want 4 requests", err, summary(c))
		}
	})
	t.Run("empty", func(t *testing.T) {
		e := newEnv(t, srv)
		c := &storagetest.Counter{}
		l := counted(t, e, c)
		if v, from := openLatest(t, l, storagetest.NewCounting(e.store, c)); v != -1 || from != logstore.ListWholeIfShort {
			t.Fatalf("OpenLatest = %d listed from %d, want -1 listed whole if short (%d)", v, from, logstore.ListWholeIfShort)
		}
		c.Reset()
		if err := l.Write(ctx, 0, logstoretest.Commit(0, 0)); err != nil || c.Total() != 4 {
			t.Errorf("Write(0) after OpenLatest on an empty log: %v, %s; want 4 requests", err, summary(c))
		}
	})
	t.Run("half done", func(t *testing.T) {
		e := newEnv(t, srv)
		w := counted(t, e, &storagetest.Counter{})
		if err := w.Write(ctx, 0, logstoretest.Commit(0, 0)); err != nil {
			t.Fatal(err)
		}
		claim(t, e, w.TablePathKey(), 1, ".tmp/00000000000000000001.json.dead", logstoretest.Commit(0, 1))
		if v, _ := openLatest(t, counted(t, e, &storagetest.Counter{}), e.store); v != 1 {
			t.Fatalf("OpenLatest with 1 half done = %d, want 1", v)
		}
	})
	t.Run("stale entries", func(t *testing.T) {
		e := newEnv(t, srv)
		w := counted(t, e, &storagetest.Counter{})
		if err := w.Write(ctx, 0, []byte("old\n")); err != nil {
			t.Fatal(err)
		}
		if err := e.store.Delete(ctx, logKey(0)); err != nil { // the table is dropped
			t.Fatal(err)
		}
		l := counted(t, e, &storagetest.Counter{})
		if v, _ := openLatest(t, l, e.store); v != -1 {
			t.Fatalf("OpenLatest on a re-created table = %d, want -1", v)
		}
		var se *dynamo.StaleEntryError
		if err := l.Write(ctx, 0, []byte("new\n")); !errors.As(err, &se) {
			t.Fatalf("Write(0): err = %v, want *StaleEntryError", err)
		}
	})
}
