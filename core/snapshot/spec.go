package snapshot

import (
	"context"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Tables are the opened tables and stores a Job writes: bronze, the facts table (nil
// without one) and the checkpoint prefix.
type Tables struct {
	Bronze     *deltalog.Table
	Facts      *deltalog.Table
	Checkpoint storage.Store
	Writer     parquetio.WriterOptions
}

// DefaultRowGroupBytes bounds each range writer's buffered row group when Tables.Writer
// leaves it 0: numPartitions writers run at once in one Lambda, so parquetio's default
// (64 MiB) would be too much.
const DefaultRowGroupBytes = 16 << 20

// FromSpec is the Job of a validated table spec. The caller sets Standalone and
// Resnapshot for snapshot(target).
func FromSpec(spec *config.Spec, src source.Source, t Tables) *Job {
	if t.Writer.RowGroupBytes == 0 {
		t.Writer.RowGroupBytes = DefaultRowGroupBytes
	}
	j := &Job{
		AppID:           spec.AppID,
		Target:          spec.Bronze,
		CaptureInstance: spec.Source.CaptureInstance,
		NumPartitions:   spec.Options.NumPartitions,
		SnapshotKeys:    spec.Options.SnapshotKeys,
		Isolation:       source.ReadCommitted,
		Source:          src,
		Bronze:          &DeltaBronze{Table: t.Bronze, Writer: t.Writer},
		Staging:         t.Checkpoint,
		Checkpoint:      &StreamCheckpoint{C: checkpoint.New(t.Checkpoint, spec.AppID)},
	}
	if spec.EffectiveIsolation() == config.IsolationSnapshot {
		j.Isolation = source.Snapshot
	}
	if ms := spec.Options.LockTimeoutMs; ms != nil {
		d := time.Duration(*ms) * time.Millisecond
		j.LockTimeout = &d
	}
	if spec.Options.SnapshotLsn != "" {
		j.SnapshotLSN, _ = lsn.Parse(spec.Options.SnapshotLsn) // validated by config
	}
	if t.Facts != nil {
		j.Facts = &FactsTable{Table: t.Facts, Writer: t.Writer}
	}
	return j
}

// StreamCheckpoint is Checkpoint on the stream's checkpoint (core/checkpoint).
type StreamCheckpoint struct {
	C *checkpoint.Checkpoint
}

// Latest implements Checkpoint: the last committed batch's end, else the pending batch's
// start.
func (c *StreamCheckpoint) Latest(ctx context.Context) (lsn.Offset, bool, error) {
	st, err := c.C.Resume(ctx)
	if err != nil {
		return lsn.Offset{}, false, err
	}
	var o lsn.Offset
	switch {
	case st.Last != nil:
		o = st.Last.End
	case st.Pending != nil:
		o = st.Pending.Start
	default:
		return lsn.Offset{}, false, nil
	}
	return o, true, nil
}
