package deltalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
)

const (
	benchCommits       = 10_000
	benchCheckpointGap = 10
	// benchCheckpointsFrom is the first version given a checkpoint: checkpoints every 10
	// commits from here to the end. Older checkpoints would not change the read path
	// (the reader lists from _last_checkpoint) and cost minutes of setup.
	benchCheckpointsFrom = 9_000
)

var benchTables struct {
	once          sync.Once
	root          string // removed by TestMain
	withCP, plain string
	err           error
}

// benchTableDirs builds, once per process, a 10,000-commit table (one add, one txn and a
// commitInfo per commit) twice on local disk: with checkpoints every 10 commits and
// _last_checkpoint, and with JSON commits only.
func benchTableDirs(b *testing.B) (withCP, plain string) {
	benchTables.once.Do(func() {
		root, err := os.MkdirTemp("", "deltalog-open-bench-")
		if err != nil {
			benchTables.err = err
			return
		}
		benchTables.root = root
		benchTables.withCP = filepath.Join(root, "with-checkpoints")
		benchTables.plain = filepath.Join(root, "json-only")
		benchTables.err = writeBenchTables(benchTables.withCP, benchTables.plain, benchCommits, benchCheckpointsFrom)
		// Open as a reader opens a table nobody is committing to: localstore keeps the
		// listing of a directory unchanged for 2 s (a log just committed to is read
		// afresh; BenchmarkListLogTail/busy measures that).
		time.Sleep(2100 * time.Millisecond)
	})
	if benchTables.err != nil {
		b.Fatal(benchTables.err)
	}
	return benchTables.withCP, benchTables.plain
}

// writeBenchTables writes commits versions twice (see benchTableDirs), with checkpoints
// every benchCheckpointGap commits from version cpFrom in withCP.
func writeBenchTables(withCP, plain string, commits, cpFrom int64) error {
	for _, d := range []string{withCP, plain} {
		if err := os.MkdirAll(filepath.Join(d, "_delta_log"), 0o755); err != nil {
			return err
		}
	}
	p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	m := lgMetadata("p")
	var adds []Add
	for v := int64(0); v < commits; v++ {
		add := *lgAdd(int(v))
		add.Path = fmt.Sprintf("p=%d/part-%05d-3f0e8a8e-6a55-4c3e-9d57-%012d.c000.zstd.parquet", v%2, v, v)
		adds = append(adds, add)
		acts := []Action{
			{CommitInfo: &CommitInfo{Timestamp: 1700000000000 + v, Operation: "STREAMING UPDATE", EngineInfo: "mssqlcdc", UserMetadata: fmt.Sprintf(`{"batch":%d}`, v)}},
			{Add: &add},
			{Txn: &Txn{AppID: "bench", Version: v}},
		}
		if v == 0 {
			acts = append([]Action{{Protocol: p}, {MetaData: m}}, acts...)
		}
		data, err := EncodeActions(acts)
		if err != nil {
			return err
		}
		name := filepath.Join(withCP, filepath.FromSlash(CommitFileKey(v)))
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
		if err := os.Link(name, filepath.Join(plain, filepath.FromSlash(CommitFileKey(v)))); err != nil {
			return err
		}
		if v < cpFrom || v == 0 || v%benchCheckpointGap != 0 {
			continue
		}
		// Checkpoint of version v, as the txn side writes it every 10 commits.
		cp := []Action{{Protocol: p}, {MetaData: m}, {Txn: &Txn{AppID: "bench", Version: v}}}
		for i := range adds {
			cp = append(cp, Action{Add: &adds[i]})
		}
		pq, err := encodeCheckpoint(cp)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(withCP, filepath.FromSlash(CheckpointFileKey(v))), pq, 0o644); err != nil {
			return err
		}
		hint := fmt.Sprintf(`{"version":%d,"size":%d,"sizeInBytes":%d,"numOfAddFiles":%d}`, v, len(cp), len(pq), len(adds))
		if err := os.WriteFile(filepath.Join(withCP, filepath.FromSlash(LastCheckpointKey)), []byte(hint), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkOpen opens the latest snapshot of a 10,000-commit table on local disk, from
// its newest checkpoint (9 JSON commits to replay) and by replaying every JSON commit.
// Goal: under 100 ms per open with checkpoints.
func BenchmarkOpen(b *testing.B) {
	withCP, plain := benchTableDirs(b)
	for _, c := range []struct{ name, dir string }{{"checkpoint", withCP}, {"full-replay", plain}} {
		b.Run(c.name, func(b *testing.B) {
			ls, err := localfs.New(c.dir)
			if err != nil {
				b.Fatal(err)
			}
			tbl := Open(ls.Store(), ls, Options{})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s, err := tbl.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if s.Version() != benchCommits-1 || len(s.Files()) != benchCommits {
					b.Fatalf("version %d, %d files", s.Version(), len(s.Files()))
				}
				if v, _ := s.TxnVersion("bench"); v != benchCommits-1 {
					b.Fatalf("txn version %d", v)
				}
			}
		})
	}
}

// TestBenchTableShape checks the benchmark's table on a small scale: the snapshot read
// from a checkpoint equals the full replay.
func TestBenchTableShape(t *testing.T) {
	withCP, plain := t.TempDir(), t.TempDir()
	if err := writeBenchTables(withCP, plain, 25, 0); err != nil {
		t.Fatal(err)
	}
	a, err := openDir(t, withCP).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := openDir(t, plain).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a.CheckpointVersion() != 20 || b.CheckpointVersion() != -1 || len(a.Files()) != 25 {
		t.Fatalf("checkpoints %d/%d, %d files", a.CheckpointVersion(), b.CheckpointVersion(), len(a.Files()))
	}
	assertSameState(t, a, b)
}
