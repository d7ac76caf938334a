package deltalog

import (
	"bytes"
	"context"
	"testing"
)

// A _last_checkpoint far behind the target (its update failed, or a writer died between
// the checkpoint and the hint) must not turn every open into a replay of all the commits
// since: past hintedReplayLimit commits the log is listed from the hint, which finds the
// newer checkpoint.
func TestFarBehindHintFindsNewerCheckpoint(t *testing.T) {
	ctx := context.Background()
	tbl := lgBase(t)
	for v := int64(1); v <= 60; v++ {
		lgCommit(t, tbl, v, Action{Add: lgAdd(int(v))})
		if v == 10 || v == 50 {
			s, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteCheckpoint(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := []byte(`{"version":10,"size":12}`)
	if err := tbl.Store().Put(ctx, LastCheckpointKey, bytes.NewReader(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	s, err := reopen(tbl).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.CheckpointVersion() != 50 || s.Version() != 60 || len(s.Files()) != 60 {
		t.Fatalf("checkpoint %d, version %d, %d files; want checkpoint 50, version 60, 60 files", s.CheckpointVersion(), s.Version(), len(s.Files()))
	}
}
