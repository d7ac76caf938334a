package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// commitAt begins a transaction on snap, lets edit fill it and commits it.
func commitAt(t *testing.T, tbl *Table, snap *Snapshot, edit func(tx *Transaction)) (CommitResult, error) {
	t.Helper()
	tx := tbl.Begin(snap)
	edit(tx)
	return tx.Commit(context.Background())
}

func livePaths(s *Snapshot) []string {
	var out []string
	for _, a := range s.Files() {
		out = append(out, a.Path)
	}
	return out
}

// A remove takes the logical file out of the table and leaves a tombstone that keeps the
// file's size, partition values and tags (extendedFileMetadata), as Spark writes it; the
// commit is not a blind append.
func TestRemoveRewritesFiles(t *testing.T) {
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	s0 := snapshot(t, tbl)
	old := s0.Files()[0]
	old.Tags = map[string]string{"k": "v"}
	res, err := commitAt(t, tbl, s0, func(tx *Transaction) {
		tx.Remove(old.RemoveAction(1700000000999, true))
		tx.Add(testAdd("1"))
	})
	if err != nil || res.Version != 1 {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	s1 := snapshot(t, tbl)
	if got := livePaths(s1); !slices.Equal(got, []string{"part-1.parquet"}) {
		t.Fatalf("live files %v", got)
	}
	ts := tombstonesOf(t, s1)
	if len(ts) != 1 || ts[0].Path != "part-0.parquet" || *ts[0].Size != 100 || ts[0].Tags["k"] != "v" ||
		!*ts[0].ExtendedFileMetadata || *ts[0].DeletionTimestamp != 1700000000999 || !ts[0].DataChange {
		t.Fatalf("tombstone %+v", ts)
	}
	ci, _ := s1.CommitInfo(1)
	if ci.IsBlindAppend == nil || *ci.IsBlindAppend {
		t.Fatalf("isBlindAppend %v, want false", ci.IsBlindAppend)
	}
	// extendedFileMetadata promises partitionValues: it is written even when empty.
	raw, err := json.Marshal(ts[0])
	if err != nil || !strings.Contains(string(raw), `"partitionValues":{}`) {
		t.Fatalf("remove JSON %s, %v", raw, err)
	}
}

// The per-commit rules of docs/reference/delta-protocol.md §2.6 and §2.9 are refused before
// anything is written.
func TestInvalidCommitsAreRefused(t *testing.T) {
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	s0 := snapshot(t, tbl)
	f := s0.Files()[0]
	dv := &DeletionVector{StorageType: "i", PathOrInlineDv: "abc", SizeInBytes: 4, Cardinality: 1}
	withDV := f
	withDV.DeletionVector = dv
	cases := map[string]func(tx *Transaction){
		"removed twice":                         func(tx *Transaction) { tx.Remove(f.RemoveAction(1, true), f.RemoveAction(2, true)) },
		"added twice":                           func(tx *Transaction) { tx.Add(testAdd("x"), testAdd("x")) },
		"new DV without removing the live file": func(tx *Transaction) { tx.EnableFeatures(FeatureDeletionVectors); tx.Add(withDV) },
		"DV without the deletionVectors feature": func(tx *Transaction) {
			tx.Remove(f.RemoveAction(1, true))
			tx.Add(withDV)
		},
		"domain without the feature": func(tx *Transaction) { tx.SetDomainMetadata("app", "{}") },
		"delta domain": func(tx *Transaction) {
			tx.EnableFeatures(FeatureDomainMetadata)
			tx.SetDomainMetadata("delta.rowTracking", "{}")
		},
	}
	for name, edit := range cases {
		_, err := commitAt(t, tbl, s0, edit)
		var ice *InvalidCommitError
		if !errors.As(err, &ice) {
			t.Errorf("%s: %v, want InvalidCommitError", name, err)
		}
	}
	if v := snapshot(t, tbl).Version(); v != 0 {
		t.Fatalf("version %d after refused commits", v)
	}
	// Replacing the DV of a live file (remove the old logical file, add the new one) is
	// allowed.
	if _, err := commitAt(t, tbl, s0, func(tx *Transaction) {
		tx.EnableFeatures(FeatureDeletionVectors)
		tx.Remove(f.RemoveAction(1, true))
		tx.Add(withDV)
	}); err != nil {
		t.Fatalf("replace DV: %v", err)
	}
}

// An append-only table refuses removes that change data, and accepts a rearrangement
// (dataChange false).
func TestAppendOnlyRefusesRemoves(t *testing.T) {
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	if _, err := commitAt(t, tbl, snapshot(t, tbl), func(tx *Transaction) {
		tx.EnableFeatures(FeatureAppendOnly)
		tx.SetProperties(map[string]string{"delta.appendOnly": "true"})
	}); err != nil {
		t.Fatal(err)
	}
	s := snapshot(t, tbl)
	if !s.Protocol().HasWriterFeature(FeatureAppendOnly) || s.Metadata().Configuration["delta.appendOnly"] != "true" {
		t.Fatalf("protocol %+v, configuration %v", s.Protocol(), s.Metadata().Configuration)
	}
	f := s.Files()[0]
	if _, err := commitAt(t, tbl, s, func(tx *Transaction) { tx.Remove(f.RemoveAction(1, true)) }); !errors.Is(err, ErrAppendOnly) {
		t.Fatalf("remove: %v, want ErrAppendOnly", err)
	}
	if _, err := commitAt(t, tbl, s, func(tx *Transaction) {
		tx.Remove(f.RemoveAction(1, false))
		a := testAdd("compacted")
		a.DataChange = false
		tx.Add(a)
	}); err != nil {
		t.Fatalf("rearrangement: %v", err)
	}
}

// EnableFeatures lists reader-writer features in both lists and writer-only ones in
// writerFeatures, moving a legacy protocol to 3/7 with its implied features listed.
func TestEnableFeatures(t *testing.T) {
	p, changed := withFeatures(Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, FeatureDomainMetadata)
	if !changed || p.MinReaderVersion != 1 || p.MinWriterVersion != 7 || p.ReaderFeatures != nil ||
		!slices.Equal(p.WriterFeatures, []string{FeatureAppendOnly, FeatureInvariants, FeatureDomainMetadata}) {
		t.Fatalf("writer-only: %+v", p)
	}
	p, changed = withFeatures(p, FeatureDeletionVectors, FeatureDomainMetadata)
	if !changed || p.MinReaderVersion != 3 || !slices.Equal(p.ReaderFeatures, []string{FeatureDeletionVectors}) ||
		!slices.Equal(p.WriterFeatures, []string{FeatureAppendOnly, FeatureInvariants, FeatureDomainMetadata, FeatureDeletionVectors}) {
		t.Fatalf("reader-writer: %+v", p)
	}
	if _, changed = withFeatures(p, FeatureDeletionVectors); changed {
		t.Fatal("a listed feature changed the protocol")
	}
}

// The conflict checks of a transaction that is not a blind append
// (docs/reference/delta-protocol.md §10.2): a winner that removed a file we read or remove,
// added rows our predicate matches, or wrote our domain, aborts the commit; a winner's
// unrelated blind append does not.
func TestNonBlindConflicts(t *testing.T) {
	type setup struct {
		name   string
		winner func(tx *Transaction, s *Snapshot)
		loser  func(tx *Transaction, s *Snapshot)
		want   string // "" commits after the winner
	}
	keyIn := func(lo, hi string) func(a *Add) bool {
		return func(a *Add) bool { return a.Tags["key"] >= lo && a.Tags["key"] < hi }
	}
	tagged := func(name, key string) Add { a := testAdd(name); a.Tags = map[string]string{"key": key}; return a }
	cases := []setup{
		{"delete-delete", func(tx *Transaction, s *Snapshot) { tx.Remove(s.Files()[0].RemoveAction(1, true)) },
			func(tx *Transaction, s *Snapshot) {
				tx.Remove(s.Files()[0].RemoveAction(1, true))
				tx.Add(testAdd("mine"))
			},
			"removed a file this commit read or removes"},
		{"delete-read", func(tx *Transaction, s *Snapshot) { tx.Remove(s.Files()[0].RemoveAction(1, false)) },
			func(tx *Transaction, s *Snapshot) { tx.ReadFiles(s.Files()[0]); tx.Add(testAdd("mine")) },
			"removed a file this commit read or removes"},
		{"append matching the predicate", func(tx *Transaction, s *Snapshot) { tx.Add(tagged("w", "m")) },
			func(tx *Transaction, s *Snapshot) { tx.ReadPredicate(keyIn("a", "n")); tx.Add(testAdd("mine")) },
			"added rows that this commit's read would have seen"},
		{"append outside the predicate", func(tx *Transaction, s *Snapshot) { tx.Add(tagged("w", "z")) },
			func(tx *Transaction, s *Snapshot) { tx.ReadPredicate(keyIn("a", "n")); tx.Add(testAdd("mine")) },
			""},
		{"compaction never matches a predicate", func(tx *Transaction, s *Snapshot) {
			a := tagged("w", "m")
			a.DataChange = false
			tx.Add(a)
		}, func(tx *Transaction, s *Snapshot) { tx.ReadPredicate(keyIn("a", "n")); tx.Add(testAdd("mine")) }, ""},
		{"whole-table read", func(tx *Transaction, s *Snapshot) { tx.Add(testAdd("w")) },
			func(tx *Transaction, s *Snapshot) { tx.ReadPredicate(nil); tx.Add(testAdd("mine")) },
			"added rows that this commit's read would have seen"},
		{"same domain", func(tx *Transaction, s *Snapshot) { tx.SetDomainMetadata("app", `{"a":1}`) },
			func(tx *Transaction, s *Snapshot) { tx.SetDomainMetadata("app", `{"a":2}`) },
			`wrote domain metadata "app"`},
		{"other domain", func(tx *Transaction, s *Snapshot) { tx.SetDomainMetadata("other", `{}`) },
			func(tx *Transaction, s *Snapshot) {
				tx.SetDomainMetadata("app", `{"a":2}`)
				tx.Remove(s.Files()[0].RemoveAction(1, true))
			},
			""},
		{"blind append beside a remove of another file", func(tx *Transaction, s *Snapshot) { tx.Add(testAdd("w")) },
			func(tx *Transaction, s *Snapshot) { tx.Remove(s.Files()[0].RemoveAction(1, true)) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, _ := newMemTable(Options{})
			createTable(t, tbl)
			if _, err := commitAt(t, tbl, snapshot(t, tbl), func(tx *Transaction) { tx.EnableFeatures(FeatureDomainMetadata) }); err != nil {
				t.Fatal(err)
			}
			s := snapshot(t, tbl)
			if _, err := commitAt(t, tbl, s, func(tx *Transaction) { c.winner(tx, s) }); err != nil {
				t.Fatalf("winner: %v", err)
			}
			res, err := commitAt(t, tbl, s, func(tx *Transaction) { c.loser(tx, s) })
			if c.want == "" {
				if err != nil || res.Version != s.Version()+2 {
					t.Fatalf("loser: %+v, %v; want it committed after the winner", res, err)
				}
				return
			}
			var cme *ConcurrentModificationError
			if !errors.As(err, &cme) || !strings.Contains(cme.Reason, c.want) || cme.Version != s.Version()+1 {
				t.Fatalf("loser: %v; want a ConcurrentModificationError at %d: %s", err, s.Version()+1, c.want)
			}
		})
	}
}
