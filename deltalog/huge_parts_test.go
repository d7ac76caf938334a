package deltalog

import (
	"bytes"
	"context"
	"runtime"
	"testing"
)

// allocatedBy is the number of bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A checkpoint file name claiming a huge part count, or a _last_checkpoint with a huge
// "parts", must not make the reader allocate for every claimed part (a Lambda would die of
// out-of-memory and retry into the same crash). The bad file is ignored, as the protocol's
// rule for incomplete multi-part checkpoints allows, and the table opens from its commits.
func TestHugeCheckpointPartCount(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		put  map[string]string
	}{
		{"file name", map[string]string{
			LogDir + "00000000000000000002.checkpoint.0000000001.0999999999.parquet": "not parquet",
		}},
		{"_last_checkpoint", map[string]string{
			LastCheckpointKey: `{"version":2,"size":3,"parts":999999999}`,
		}},
		{"both", map[string]string{
			LogDir + "00000000000000000002.checkpoint.0000000001.0999999999.parquet": "not parquet",
			LastCheckpointKey: `{"version":2,"size":3,"parts":999999999}`,
		}},
		{"negative parts", map[string]string{
			LastCheckpointKey: `{"version":2,"size":3,"parts":-5}`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := lgBase(t)
			lgCommit(t, tbl, 1, Action{Add: lgAdd(1)})
			lgCommit(t, tbl, 2, Action{Add: lgAdd(2)})
			for k, v := range c.put {
				if err := tbl.Store().Put(ctx, k, bytes.NewReader([]byte(v)), int64(len(v))); err != nil {
					t.Fatal(err)
				}
			}
			var s *Snapshot
			var err error
			n := allocatedBy(func() { s, err = tbl.Snapshot(ctx) })
			if err != nil {
				t.Fatal(err)
			}
			if s.Version() != 2 || len(s.Files()) != 2 || s.CheckpointVersion() != -1 {
				t.Fatalf("version %d, %d files, checkpoint %d; want 2, 2, -1", s.Version(), len(s.Files()), s.CheckpointVersion())
			}
			if n > 16<<20 {
				t.Fatalf("opening allocated %d MiB", n>>20)
			}
		})
	}
}
