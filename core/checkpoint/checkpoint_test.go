package checkpoint

import (
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

func newStore(t *testing.T) storage.Store {
	s, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func off(l string, ts string) lsn.Offset {
	t, err := lsn.ParseTime(ts)
	if err != nil {
		panic(err)
	}
	return lsn.At(lsn.MustParse(l), t)
}

func TestResumeRules(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := New(st, "app")
	s, err := c.Resume(ctx)
	if err != nil || !s.Fresh() || s.Next != 0 {
		t.Fatalf("fresh: %+v %v", s, err)
	}
	for n := int64(0); n < 12; n++ {
		b := Batch{ID: n, Start: off("0x01", ""), End: off("0x02", "2026-09-28T14:03:12.117")}
		if err := c.WriteOffsets(ctx, b); err != nil {
			t.Fatal(err)
		}
		if n == 11 {
			break // batch 11 is read but never committed
		}
		if err := c.WriteCommit(ctx, Commit{ID: n, Rows: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s, err = c.Resume(ctx)
	if err != nil || s.Next != 11 || s.Pending == nil || s.Pending.ID != 11 || s.Last == nil || s.Last.ID != 10 {
		t.Fatalf("pending: %+v %v", s, err)
	}
	if s.Pending.End.LSN != lsn.MustParse("0x02") || !s.Pending.End.HasTime() {
		t.Errorf("pending range lost: %+v", s.Pending)
	}
	// Rewriting the same pending offsets by the same writer is accepted (a lost answer).
	if err := c.WriteOffsets(ctx, *s.Pending); err != nil {
		t.Errorf("own retry refused: %v", err)
	}
	if err := c.WriteCommit(ctx, Commit{ID: 11}); err != nil {
		t.Fatal(err)
	}
	s, _ = c.Resume(ctx)
	if s.Next != 12 || s.Pending != nil || s.Last.ID != 11 {
		t.Errorf("committed: %+v", s)
	}
	// Another app_id on this checkpoint is refused.
	var am *AppIDMismatchError
	if _, err := New(st, "other").Resume(ctx); !errors.As(err, &am) {
		t.Errorf("other app: %v", err)
	}
}

func TestSecondStreamLosesConditionalPut(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	a, b := New(st, "app"), New(st, "app")
	batch := Batch{ID: 0, End: off("0x05", "")}
	if err := a.WriteOffsets(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var ce *ConcurrentStreamError
	if err := b.WriteOffsets(ctx, batch); !errors.As(err, &ce) {
		t.Fatalf("second stream: %v, want ConcurrentStreamError", err)
	}
	if err := a.WriteCommit(ctx, Commit{ID: 0}); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteCommit(ctx, Commit{ID: 0}); !errors.As(err, &ce) {
		t.Fatalf("second commit: %v", err)
	}
}

func TestWriteFailureIsNotConcurrency(t *testing.T) {
	ctx := context.Background()
	f := &storagetest.Faults{}
	c := New(storagetest.NewFaulty(newStore(t), f), "app")
	f.FailOp("PutIfAbsent", 1, nil)
	err := c.WriteOffsets(ctx, Batch{ID: 0})
	var ce *ConcurrentStreamError
	if err == nil || errors.As(err, &ce) || !errors.Is(err, storagetest.ErrInjected) {
		t.Fatalf("err = %v", err)
	}
}

func TestClean(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := New(st, "app")
	c.Retain = 3
	for n := int64(0); n < 10; n++ {
		_ = c.WriteOffsets(ctx, Batch{ID: n})
		_ = c.WriteCommit(ctx, Commit{ID: n})
	}
	if err := c.Clean(ctx, 9); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range st.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2*4 { // batches 6..9 kept
		t.Errorf("%d files left, want 8", n)
	}
	s, _ := c.Resume(ctx)
	if s.Next != 10 {
		t.Errorf("resume after clean: %+v", s)
	}
}

// A Checkpoint resumes from its memory of its own writes with one listing, and reads the
// files when the listing shows a batch it did not commit (another process ran since), then
// forgetting what it remembered; Commits answers from memory what it wrote or read since
// and reads the rest.
func TestResumeRemembers(t *testing.T) {
	ctx := context.Background()
	c := &storagetest.Counter{}
	st := storagetest.NewCounting(newStore(t), c)
	mine, other := New(st, "app"), New(st, "app")
	write := func(cp *Checkpoint, n int64, rows string) {
		t.Helper()
		if err := cp.WriteOffsets(ctx, Batch{ID: n, Start: off("0x01", ""), End: off("0x02", "")}); err != nil {
			t.Fatal(err)
		}
		m := Commit{ID: n, Rows: n, FactsThrough: new(int64)}
		if rows != "" {
			m.FactsRows = []byte(rows)
		}
		if err := cp.WriteCommit(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	resume := func(cp *Checkpoint, wantNext int64, remembered bool, wantCalls map[string]int) State {
		t.Helper()
		c.Reset()
		s, err := cp.Resume(ctx)
		if err != nil || s.Next != wantNext || s.Remembered != remembered || s.LastCommit == nil || s.LastCommit.ID != wantNext-1 {
			t.Fatalf("resume: %+v %v; want next %d, remembered %v", s, err, wantNext, remembered)
		}
		if got := c.Counts(); !maps.Equal(got, wantCalls) {
			t.Errorf("resume made %v, want %v", got, wantCalls)
		}
		return s
	}
	write(mine, 0, "")
	write(mine, 1, `[{"app_id":"app","written_at":"2026-01-01T00:00:00Z"}]`)
	s := resume(mine, 2, true, map[string]int{"List": 1})
	if s.Last.ID != 1 || string(s.LastCommit.FactsRows) == "" {
		t.Errorf("remembered %+v", s)
	}
	// Another process commits batch 2: read from the files.
	resume(other, 2, false, map[string]int{"List": 1, "GetRange": 2})
	write(other, 2, "")
	resume(mine, 3, false, map[string]int{"List": 1, "GetRange": 2})

	c.Reset()
	got, err := mine.Commits(ctx, 1, 2)
	if err != nil || len(got) != 2 || got[0].ID != 1 || got[1].ID != 2 {
		t.Fatalf("commits %+v %v", got, err)
	}
	// Batch 2 was read by the last resume; batch 1, though this Checkpoint wrote it, is read
	// again: once the listing showed another's batch, the file at 1 may be another's too (a
	// checkpoint reset, or stripped and run again), so the resume forgot it.
	if n := c.Count("GetRange"); n != 1 {
		t.Errorf("Commits read %d files, want 1 (batch 1; batch 2 was read by the resume)", n)
	}
	// A missing file is left out; a new Checkpoint reads each file.
	if got, err := New(st, "app").Commits(ctx, 0, 3); err != nil || len(got) != 3 || c.Count("GetRange") != 1+4 {
		t.Errorf("a new Checkpoint's Commits: %+v %v after %d reads", got, err, c.Count("GetRange"))
	}
}

// A clean-up that fails at any of its deletes leaves the files of a contiguous run of the
// newest batches (if offsets/<n> exists, so does every higher offsets file written, and
// likewise in commits/), whatever the batch numbers' text order ("offsets/10" sorts before
// "offsets/9"); a second clean-up finishes the job. Deletes go one by one here (a store
// without DeleteKeys, as local disk) and through DeleteKeys.
func TestCleanFailingPartWayLeavesTheNewestBatches(t *testing.T) {
	ctx := context.Background()
	const batches, retain = 25, 5 // Clean(24) deletes batches 0..18
	written := t.TempDir()
	w, err := localstore.New(written)
	if err != nil {
		t.Fatal(err)
	}
	for n := int64(0); n < batches; n++ {
		cp := New(w, "app")
		if err := cp.WriteOffsets(ctx, Batch{ID: n}); err != nil {
			t.Fatal(err)
		}
		if err := cp.WriteCommit(ctx, Commit{ID: n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, keys := range []bool{false, true} {
		for k := 1; ; k++ {
			dir := filepath.Join(t.TempDir(), "cp")
			if err := os.CopyFS(dir, os.DirFS(written)); err != nil {
				t.Fatal(err)
			}
			ls, err := localstore.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			f := &storagetest.Faults{}
			var st storage.Store = storagetest.NewFaulty(ls, f)
			if !keys {
				st = oneByOne{st}
			}
			c := New(st, "app")
			c.Retain = retain
			op := "Delete"
			if keys {
				op = "DeleteKeys"
			}
			f.FailOp(op, k, nil)
			err = c.Clean(ctx, batches-1)
			f.Disarm()
			for _, dir := range []string{OffsetsDir, CommitsDir} {
				left := batchesIn(t, st, dir)
				for i := 1; i < len(left); i++ {
					if left[i] != left[i-1]+1 {
						t.Fatalf("DeleteKeys=%v, failure at delete %d: %s holds %v: a gap", keys, k, dir, left)
					}
				}
				if len(left) == 0 || left[len(left)-1] != batches-1 {
					t.Fatalf("DeleteKeys=%v, failure at delete %d: %s holds %v", keys, k, dir, left)
				}
			}
			if err := c.Clean(ctx, batches-1); err != nil {
				t.Fatalf("re-run: %v", err)
			}
			for _, dir := range []string{OffsetsDir, CommitsDir} {
				if left := batchesIn(t, st, dir); len(left) != retain+1 || left[0] != batches-1-retain {
					t.Fatalf("DeleteKeys=%v, failure at delete %d, after the re-run: %s holds %v", keys, k, dir, left)
				}
			}
			if err == nil { // no delete failed: every delete has had its turn
				if k == 1 {
					t.Fatalf("DeleteKeys=%v: no failure injected", keys)
				}
				break
			}
		}
	}
}

// oneByOne hides a store's DeleteKeys, so that storage.DeleteKeys deletes one key a call.
type oneByOne struct{ storage.Store }

// batchesIn is the batch numbers with a file in dir, ascending.
func batchesIn(t *testing.T, st storage.Store, dir string) []int64 {
	t.Helper()
	var out []int64
	for info, err := range st.List(context.Background(), dir, "") {
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := batchOf(dir, info.Key); ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// A Checkpoint's memory answers only for the very offsets file it wrote: when the
// checkpoint was deleted and another stream wrote files up to the same batch number, the
// listing shows another ETag and the files are read (they hold the other's ranges).
func TestResumeRemembersOnlyItsOwnFile(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"another stream's file", "our own file written again"} {
		t.Run(how, func(t *testing.T) {
			st := newStore(t)
			mine := New(st, "app")
			for n := int64(0); n <= 2; n++ {
				if err := mine.WriteOffsets(ctx, Batch{ID: n, End: off("0x01", "")}); err != nil {
					t.Fatal(err)
				}
				if err := mine.WriteCommit(ctx, Commit{ID: n}); err != nil {
					t.Fatal(err)
				}
			}
			if s, err := mine.Resume(ctx); err != nil || !s.Remembered || s.Next != 3 {
				t.Fatalf("own checkpoint: %+v %v", s, err)
			}
			files := map[string][]byte{}
			for info, err := range st.List(ctx, "", "") {
				if err != nil {
					t.Fatal(err)
				}
				b, _ := st.GetRange(ctx, info.Key, 0, -1)
				files[info.Key] = b
				if err := st.Delete(ctx, info.Key); err != nil {
					t.Fatal(err)
				}
			}
			if how == "our own file written again" {
				// The same bytes in new files (a restore): on local disk other ETags.
				for k, b := range files {
					if err := st.PutIfAbsent(ctx, k, b); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				other := New(st, "app")
				for n := int64(0); n <= 2; n++ {
					if err := other.WriteOffsets(ctx, Batch{ID: n, End: off("0x09", "")}); err != nil {
						t.Fatal(err)
					}
					if err := other.WriteCommit(ctx, Commit{ID: n}); err != nil {
						t.Fatal(err)
					}
				}
			}
			s, err := mine.Resume(ctx)
			if err != nil || s.Remembered || s.Next != 3 {
				t.Fatalf("after the reset: %+v %v; want read from the files", s, err)
			}
			if want := lsn.MustParse(map[bool]string{true: "0x01", false: "0x09"}[how != "another stream's file"]); s.Last.End.LSN != want {
				t.Errorf("resumed at %s, want %s", s.Last.End.LSN, want)
			}
		})
	}
}

// ResumeWarm answers from memory with one HEAD of the last committed batch's offsets file,
// and only when that file is the one this Checkpoint wrote (its ETag); not for a
// Checkpoint that committed nothing, one that wrote offsets it did not commit, nor when
// the file is gone, written again with the same bytes, or another stream's of the same
// batch number.
func TestResumeWarm(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"deleted", "written again", "another stream's"} {
		t.Run(how, func(t *testing.T) {
			c := &storagetest.Counter{}
			st := storagetest.NewCounting(newStore(t), c)
			mine := New(st, "app")
			warm := func(wantOK bool, wantNext int64) {
				t.Helper()
				c.Reset()
				s, ok, err := mine.ResumeWarm(ctx)
				if err != nil || ok != wantOK || (ok && (s.Next != wantNext || !s.Remembered || s.LastCommit == nil)) {
					t.Fatalf("ResumeWarm: %+v ok=%v %v; want ok=%v next %d", s, ok, err, wantOK, wantNext)
				}
				if wantOK && !mine.Warm() {
					t.Errorf("Warm() false where ResumeWarm answers")
				}
			}
			warm(false, 0)
			if n := len(c.Counts()); n != 0 {
				t.Errorf("ResumeWarm without memory made requests: %v", c.Counts())
			}
			for n := int64(0); n < 2; n++ {
				if err := mine.WriteOffsets(ctx, Batch{ID: n, Start: off("0x01", ""), End: off("0x02", "")}); err != nil {
					t.Fatal(err)
				}
				if err := mine.WriteCommit(ctx, Commit{ID: n}); err != nil {
					t.Fatal(err)
				}
			}
			warm(true, 2)
			if got := c.Counts(); !maps.Equal(got, map[string]int{"Head": 1}) {
				t.Errorf("ResumeWarm made %v, want one Head", got)
			}
			// Offsets written and not committed (an invocation that failed part-way).
			if err := mine.WriteOffsets(ctx, Batch{ID: 2, Start: off("0x02", ""), End: off("0x03", "")}); err != nil {
				t.Fatal(err)
			}
			if mine.Warm() {
				t.Error("Warm with batch 2's offsets uncommitted")
			}
			warm(false, 0)
			if err := mine.WriteCommit(ctx, Commit{ID: 2}); err != nil {
				t.Fatal(err)
			}
			warm(true, 3)
			b, err := st.GetRange(ctx, "offsets/2.json", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(ctx, "offsets/2.json"); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "written again": // the same bytes in a new file (a restore): another ETag on local disk
				if err := st.PutIfAbsent(ctx, "offsets/2.json", b); err != nil {
					t.Fatal(err)
				}
			case "another stream's":
				if err := New(st, "app").WriteOffsets(ctx, Batch{ID: 2, Start: off("0x02", ""), End: off("0x03", "")}); err != nil {
					t.Fatal(err)
				}
			}
			warm(false, 0)
		})
	}
}

// WriteNextOffsets creates the file or fails with *ConcurrentStreamError, also when the
// file is this Checkpoint's own earlier one (a put whose answer was lost), which
// WriteOffsets takes as written.
func TestWriteNextOffsetsIsAFence(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	mine := New(st, "app")
	b := Batch{ID: 0, Start: off("0x01", ""), End: off("0x02", "")}
	if err := mine.WriteNextOffsets(ctx, b); err != nil {
		t.Fatal(err)
	}
	var cs *ConcurrentStreamError
	if err := mine.WriteNextOffsets(ctx, b); !errors.As(err, &cs) {
		t.Errorf("WriteNextOffsets on its own file: %v, want *ConcurrentStreamError", err)
	}
	if err := mine.WriteOffsets(ctx, b); err != nil {
		t.Errorf("WriteOffsets on its own file: %v, want nil (its earlier attempt)", err)
	}
	if err := New(st, "app").WriteNextOffsets(ctx, b); !errors.As(err, &cs) {
		t.Errorf("WriteNextOffsets on another's file: %v, want *ConcurrentStreamError", err)
	}
}

// batchOf reads a batch number only in the form the checkpoint writes it (offsetKey,
// commitKey: strconv.FormatInt, so no sign, no leading zero but "0" itself, ASCII
// digits): any other name is no batch file, as deltalog/internal/logname reads Delta
// versions. strconv.ParseInt took "+5" and "05" as 5, so a stray "+5.json" counted as
// batch 5 (the highest batch, or a file Clean deleted as batch 5).
func TestBatchOfAcceptsOnlyTheWrittenForm(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 42, 1234567890, math.MaxInt64} {
		for _, key := range []string{offsetKey(n), commitKey(n)} {
			dir := OffsetsDir
			if strings.HasPrefix(key, CommitsDir) {
				dir = CommitsDir
			}
			if got, ok := batchOf(dir, key); !ok || got != n {
				t.Errorf("batchOf(%q) = %d, %v; want %d", key, got, ok, n)
			}
		}
	}
	for _, name := range []string{
		"+5", "-1", "-0", "+0", // signs
		"05", "00", "007", // leading zeros (the writer writes "0" alone)
		" 5", "5 ", "5\n", "\t5", // spaces
		"9223372036854775808", "99999999999999999999", // above math.MaxInt64
		"", "x", "5x", "0x5", "5e3", "1_000", "٣", // empty, not decimal digits
		"5.json", "a/5", // not a batch file of dir itself
	} {
		key := OffsetsDir + name + ".json"
		if got, ok := batchOf(OffsetsDir, key); ok {
			t.Errorf("batchOf(%q) = %d, true; want no batch", key, got)
		}
	}
	if got, ok := batchOf(OffsetsDir, CommitsDir+"5.json"); ok {
		t.Errorf("batchOf of another dir's key = %d, true", got)
	}
}
