// Package logstoretest is the conformance suite every logstore.LogStore passes: commit files
// are created exactly once under concurrent writers, a taken version is
// logstore.ErrVersionExists, and every writer and reader sees the same versions.
package logstoretest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

// Table is one empty table under test.
type Table struct {
	// New returns another LogStore on the table, as a separate writer process would have.
	New func() logstore.LogStore
	// Store is the table's object store, rooted at the table.
	Store storage.Store
}

// Run runs the suite; newTable returns an empty table for each subtest.
func Run(t *testing.T, newTable func(t *testing.T) Table) {
	tests := []struct {
		name string
		fn   func(t *testing.T, tb Table)
	}{
		{"Empty", testEmpty},
		{"WriteRead", testWriteRead},
		{"VersionExists", testVersionExists},
		{"RaceForOneVersion", testRaceForOneVersion},
		{"ConcurrentWriters", testConcurrentWriters},
		{"NegativeVersion", testNegativeVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newTable(t)) })
	}
}

// Commit is a small commit file body naming its writer and sequence number.
func Commit(writer, seq int) []byte {
	return fmt.Appendf(nil, `{"commitInfo":{"writer":%d,"seq":%d}}`+"\n", writer, seq)
}

func testEmpty(t *testing.T, tb Table) {
	l := tb.New()
	if v, err := l.Latest(t.Context()); err != nil || v != -1 {
		t.Fatalf("Latest of an empty table = %d, %v; want -1", v, err)
	}
	if _, err := l.Read(t.Context(), 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Read(0) of an empty table: err = %v, want storage.ErrNotFound", err)
	}
}

func testWriteRead(t *testing.T, tb Table) {
	ctx := t.Context()
	l := tb.New()
	for v := range int64(3) {
		if err := l.Write(ctx, v, Commit(0, int(v))); err != nil {
			t.Fatalf("Write(%d): %v", v, err)
		}
	}
	other := tb.New()
	if v, err := other.Latest(ctx); err != nil || v != 2 {
		t.Fatalf("Latest from another writer = %d, %v; want 2", v, err)
	}
	for v := range int64(3) {
		got, err := other.Read(ctx, v)
		if err != nil || !bytes.Equal(got, Commit(0, int(v))) {
			t.Fatalf("Read(%d) = %q, %v", v, got, err)
		}
	}
	if _, err := other.Read(ctx, 3); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Read(3): err = %v, want storage.ErrNotFound", err)
	}
}

func testVersionExists(t *testing.T, tb Table) {
	ctx := t.Context()
	a, b := tb.New(), tb.New()
	if err := a.Write(ctx, 0, Commit(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, 0, Commit(2, 0)); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("second Write(0): err = %v, want ErrVersionExists", err)
	}
	if err := a.Write(ctx, 0, Commit(1, 1)); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("same writer again: err = %v, want ErrVersionExists", err)
	}
	if got, err := b.Read(ctx, 0); err != nil || !bytes.Equal(got, Commit(1, 0)) {
		t.Fatalf("Read(0) = %q, %v; want the first commit", got, err)
	}
	if err := b.Write(ctx, 1, Commit(2, 1)); err != nil {
		t.Fatalf("Write(1) after losing 0: %v", err)
	}
}

func testRaceForOneVersion(t *testing.T, tb Table) {
	const n = 8
	ls := make([]logstore.LogStore, n)
	for i := range ls {
		ls[i] = tb.New()
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = ls[i].Write(t.Context(), 0, Commit(i, 0)) })
	}
	wg.Wait()
	winner := storagetest.OneWinner(t, errs, logstore.ErrVersionExists)
	if got, err := tb.New().Read(t.Context(), 0); err != nil || !bytes.Equal(got, Commit(winner, 0)) {
		t.Fatalf("Read(0) = %q, %v; want writer %d's", got, err, winner)
	}
}

// ConcurrentWriters runs writers goroutines, each with its own LogStore, each appending
// commits commits by claiming Latest()+1 until it wins, and checks that the log then holds
// versions 0..writers*commits-1 with every commit exactly once.
func ConcurrentWriters(t *testing.T, tb Table, writers, commits int) {
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		l := tb.New()
		wg.Go(func() {
			for seq := range commits {
				for {
					v, err := l.Latest(ctx)
					if err != nil {
						errs <- fmt.Errorf("writer %d: latest: %w", w, err)
						return
					}
					err = l.Write(ctx, v+1, Commit(w, seq))
					if err == nil {
						break
					}
					if !errors.Is(err, logstore.ErrVersionExists) {
						errs <- fmt.Errorf("writer %d: write %d: %w", w, v+1, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := writers * commits
	r := tb.New()
	if v, err := r.Latest(ctx); err != nil || v != int64(total-1) {
		t.Fatalf("Latest = %d, %v; want %d", v, err, total-1)
	}
	seen := map[string]int64{}
	for v := range int64(total) {
		b, err := r.Read(ctx, v)
		if err != nil {
			t.Fatalf("Read(%d): %v", v, err)
		}
		if prev, dup := seen[string(b)]; dup {
			t.Fatalf("commit %q is both version %d and %d", b, prev, v)
		}
		seen[string(b)] = v
	}
	for w := range writers {
		for seq := range commits {
			if _, ok := seen[string(Commit(w, seq))]; !ok {
				t.Fatalf("commit of writer %d seq %d is missing", w, seq)
			}
		}
	}
}

func testConcurrentWriters(t *testing.T, tb Table) { ConcurrentWriters(t, tb, 4, 8) }

func testNegativeVersion(t *testing.T, tb Table) {
	if err := tb.New().Write(t.Context(), -1, Commit(0, 0)); err == nil {
		t.Fatal("Write(-1) succeeded")
	}
}
