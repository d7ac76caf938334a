package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// startPrefix and startSuffix frame the key of a start a bootstrap handed the stream:
// offsets/start-<L>.json (docs/stream.md "Checkpoint layout").
const (
	startPrefix = OffsetsDir + "start-"
	startSuffix = ".json"
)

// StartKey is where a bootstrap hands the stream its start, the snapshot at l:
// offsets/start-<L>.json, L in canonical form (0x + 20 hex digits). It lives in offsets/
// so that whatever removes the offsets (a reset of the checkpoint) removes it too, and its
// name holds the LSN, so the listing Resume makes anyway reads it. No batch number: Resume,
// Clean and versions that predate it never take it for a batch.
func StartKey(l lsn.LSN) string { return startPrefix + l.String() + startSuffix }

// startLSN is the LSN of a StartKey; ok false for any other key.
func startLSN(key string) (lsn.LSN, bool) {
	s, ok := strings.CutPrefix(key, startPrefix)
	if !ok {
		return lsn.Zero, false
	}
	if s, ok = strings.CutSuffix(s, startSuffix); !ok {
		return lsn.Zero, false
	}
	l, err := lsn.Parse(s)
	return l, err == nil && !l.IsZero()
}

// Start is a start a bootstrap handed the stream, written once its snapshot and its
// bootstrap facts row are committed: batch 0 of a fresh checkpoint reads the commits after
// Snapshot's LSN, without looking for the snapshot in the facts table. The file's content
// records it for people; the stream reads the LSN from the key.
type Start struct {
	AppID string `json:"app_id"`
	// Snapshot is the committed snapshot's offset ({lsn, commit_ts}); Resume fills in the
	// LSN only (the commit time is the source's to tell).
	Snapshot lsn.Offset `json:"snapshot"`
	// CaptureInstance is the capture instance the snapshot read ("" when unknown).
	CaptureInstance string    `json:"capture_instance,omitempty"`
	Writer          string    `json:"writer"`
	WrittenAt       time.Time `json:"written_at"`
}

// WriteStart records s (at StartKey(s.Snapshot.LSN)) as the start a fresh checkpoint hands
// the stream. With several, Resume takes the newest snapshot's. Once the checkpoint holds a
// batch, start files are ignored.
func (c *Checkpoint) WriteStart(ctx context.Context, s Start) error {
	s.AppID, s.Writer = c.appID, c.writer
	if s.WrittenAt.IsZero() {
		s.WrittenAt = time.Now().UTC()
	}
	if err := storage.PutJSON(ctx, c.store, StartKey(s.Snapshot.LSN), s); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

// DropStarts removes every start file (one LIST, and one DeleteObjects when there are any),
// before a snapshot that is to replace theirs is taken: until it hands over its own, the
// stream finds its start in the facts table.
func (c *Checkpoint) DropStarts(ctx context.Context) error {
	var keys []string
	for info, err := range c.store.List(ctx, startPrefix, "") {
		if err != nil {
			return fmt.Errorf("read checkpoint: %w", err)
		}
		if _, ok := startLSN(info.Key); ok {
			keys = append(keys, info.Key)
		}
	}
	if err := storage.DeleteKeys(ctx, c.store, keys); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}
