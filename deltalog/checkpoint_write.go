package deltalog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// checkpointBatchRows is the number of actions per row group of a checkpoint: it bounds
// the memory the Arrow builders hold while writing a large table's checkpoint, and the
// memory a reader decodes at once. A variable so tests can make several row groups.
var checkpointBatchRows = 50_000

// The checkpoint schema (docs/reference/delta-protocol.md §7.2), in Spark's column order.
// Every column and nested field is nullable, as Spark writes them, except map keys;
// stats_parsed and partitionValues_parsed are not written (delta.checkpoint.writeStatsAsStruct
// is optional for readers, and every reader handles the stats string).
var (
	cpStrMap  = func() *arrow.MapType { return arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String) }
	cpStrList = func() *arrow.ListType {
		return arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	cpDV = arrow.StructOf(
		nf("storageType", arrow.BinaryTypes.String),
		nf("pathOrInlineDv", arrow.BinaryTypes.String),
		nf("offset", arrow.PrimitiveTypes.Int32),
		nf("sizeInBytes", arrow.PrimitiveTypes.Int32),
		nf("cardinality", arrow.PrimitiveTypes.Int64),
	)
	checkpointSchema = arrow.NewSchema([]arrow.Field{
		nf("txn", arrow.StructOf(
			nf("appId", arrow.BinaryTypes.String),
			nf("version", arrow.PrimitiveTypes.Int64),
			nf("lastUpdated", arrow.PrimitiveTypes.Int64),
		)),
		nf("add", arrow.StructOf(
			nf("path", arrow.BinaryTypes.String),
			nf("partitionValues", cpStrMap()),
			nf("size", arrow.PrimitiveTypes.Int64),
			nf("modificationTime", arrow.PrimitiveTypes.Int64),
			nf("dataChange", arrow.FixedWidthTypes.Boolean),
			nf("tags", cpStrMap()),
			nf("deletionVector", cpDV),
			nf("baseRowId", arrow.PrimitiveTypes.Int64),
			nf("defaultRowCommitVersion", arrow.PrimitiveTypes.Int64),
			nf("clusteringProvider", arrow.BinaryTypes.String),
			nf("stats", arrow.BinaryTypes.String),
		)),
		nf("remove", arrow.StructOf(
			nf("path", arrow.BinaryTypes.String),
			nf("deletionTimestamp", arrow.PrimitiveTypes.Int64),
			nf("dataChange", arrow.FixedWidthTypes.Boolean),
			nf("extendedFileMetadata", arrow.FixedWidthTypes.Boolean),
			nf("partitionValues", cpStrMap()),
			nf("size", arrow.PrimitiveTypes.Int64),
			nf("deletionVector", cpDV),
			nf("baseRowId", arrow.PrimitiveTypes.Int64),
			nf("defaultRowCommitVersion", arrow.PrimitiveTypes.Int64),
		)),
		nf("metaData", arrow.StructOf(
			nf("id", arrow.BinaryTypes.String),
			nf("name", arrow.BinaryTypes.String),
			nf("description", arrow.BinaryTypes.String),
			nf("format", arrow.StructOf(
				nf("provider", arrow.BinaryTypes.String),
				nf("options", cpStrMap()),
			)),
			nf("schemaString", arrow.BinaryTypes.String),
			nf("partitionColumns", cpStrList()),
			nf("createdTime", arrow.PrimitiveTypes.Int64),
			nf("configuration", cpStrMap()),
		)),
		nf("protocol", arrow.StructOf(
			nf("minReaderVersion", arrow.PrimitiveTypes.Int32),
			nf("minWriterVersion", arrow.PrimitiveTypes.Int32),
			nf("readerFeatures", cpStrList()),
			nf("writerFeatures", cpStrList()),
		)),
		nf("domainMetadata", arrow.StructOf(
			nf("domain", arrow.BinaryTypes.String),
			nf("configuration", arrow.BinaryTypes.String),
			nf("removed", arrow.FixedWidthTypes.Boolean),
		)),
	}, nil)
)

func nf(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

// Column indexes in checkpointSchema.
const (
	cpTxn = iota
	cpAdd
	cpRemove
	cpMetaData
	cpProtocol
	cpDomain
)

// WriteCheckpoint writes a classic V1 checkpoint of snap's version,
// _delta_log/<v:020>.checkpoint.parquet, then points _delta_log/_last_checkpoint at it
// (docs/reference/delta-protocol.md §7, §8). The checkpoint holds the protocol,
// the metadata, every live add (with stats as a JSON string), the remove tombstones
// younger than delta.deletedFileRetentionDuration (default one week), every txn and the
// live domain metadata; never commitInfo or cdc. Writing the same checkpoint twice is
// harmless (the last one wins). _last_checkpoint is not moved back when it already
// points at a newer checkpoint. ErrNoTable for a snapshot with no version; the table must
// be writable (Snapshot.CanWrite).
func WriteCheckpoint(ctx context.Context, snap *Snapshot) error {
	_, err := writeCheckpoint(ctx, snap)
	return err
}

// writeCheckpoint is WriteCheckpoint, also returning what the checkpoint holds as a base
// for the next one (nil when it has no tombstones).
func writeCheckpoint(ctx context.Context, snap *Snapshot) (*tombstoneBase, error) {
	if snap.Version() < 0 {
		return nil, ErrNoTable
	}
	if err := snap.CanWrite(); err != nil {
		return nil, err
	}
	retention, err := tombstoneRetention(snap.Metadata())
	if err != nil {
		return nil, err
	}
	cutoff := snap.Table().Options().now().Add(-retention).UnixMilli()
	return putCheckpoint(ctx, snap, cutoff)
}

// buildCheckpoint encodes the checkpoint of snap (tombstones deleted at or before cutoff
// left out, or carried within carrySlack), returning its parts (to write in order), its
// size and row count, and its base.
func buildCheckpoint(snap *Snapshot, cutoff int64) ([][]byte, int64, int64, *tombstoneBase, error) {
	// The carry rule reads the checkpoint's tombstones' keys alone; their other fields are
	// decoded only when they are re-encoded (checkpoint_removes.go).
	b, err := snap.cpTombstones.carryBase()
	if err != nil {
		return nil, 0, 0, nil, err
	}
	checkpointCounts.written.Add(1)
	others := checkpointOthers(snap)
	if b != nil && b.carries(snap, cutoff) {
		if parts, size, rows, next, err := carriedCheckpoint(snap, others, cutoff, b); err == nil {
			checkpointCounts.carried.Add(1)
			return parts, size, rows, next, nil
		}
		// A base that cannot be copied: encode everything, as without one.
	}
	removes, err := checkpointRemoves(snap, cutoff)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	// Oldest day first, as carried checkpoints order their groups; a row group a day.
	slices.SortStableFunc(removes, func(x, y *Remove) int { return cmp.Compare(deletionDay(x), deletionDay(y)) })
	actions := slices.Clip(others)
	for _, r := range removes {
		actions = append(actions, Action{Remove: r})
	}
	data, err := encodeCheckpointByDay(actions, true)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	if len(removes) > 0 {
		checkpointCounts.full.Add(1)
		checkpointCounts.encoded.Add(int64(len(removes)))
	}
	var next *tombstoneBase
	if len(removes) > 0 {
		next = newTombstoneBase(data, removes)
	}
	return [][]byte{data}, int64(len(data)), int64(len(actions)), next, nil
}

func putCheckpoint(ctx context.Context, snap *Snapshot, cutoff int64) (*tombstoneBase, error) {
	parts, size, rows, next, err := buildCheckpoint(snap, cutoff)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", snap.Version(), err)
	}
	return next, publishCheckpoint(ctx, snap, parts, size, rows)
}

// publishCheckpoint writes parts, one after the other, as snap's checkpoint (size bytes,
// rows actions) and points _last_checkpoint at it.
func publishCheckpoint(ctx context.Context, snap *Snapshot, parts [][]byte, size, rows int64) error {
	store := snap.Table().Store()
	key := CheckpointFileKey(snap.Version())
	if err := store.Put(ctx, key, newPartsReader(parts), size); err != nil {
		return fmt.Errorf("write checkpoint %d: %w", snap.Version(), err)
	}
	if cur, ok, err := ReadLastCheckpoint(ctx, store); err == nil && ok && cur.Version > snap.Version() {
		return nil
	}
	lc := LastCheckpoint{
		Version:       snap.Version(),
		Size:          rows,
		SizeInBytes:   size,
		NumOfAddFiles: int64(len(snap.Files())),
	}
	hint, err := json.Marshal(lc)
	if err != nil {
		return fmt.Errorf("encode _last_checkpoint: %w", err)
	}
	if err := store.Put(ctx, LastCheckpointKey, bytes.NewReader(hint), int64(len(hint))); err != nil {
		return fmt.Errorf("write _last_checkpoint: %w", err)
	}
	return nil
}

// tombstoneRetention is delta.deletedFileRetentionDuration, or DefaultTombstoneRetention.
func tombstoneRetention(m Metadata) (time.Duration, error) {
	v, ok := m.Configuration["delta.deletedFileRetentionDuration"]
	if !ok {
		return DefaultTombstoneRetention, nil
	}
	d, err := ParseInterval(v)
	if err != nil {
		return 0, fmt.Errorf("delta.deletedFileRetentionDuration: %w", err)
	}
	return d, nil
}

// checkpointOthers are the actions of snap's checkpoint but the removes: protocol,
// metadata, txns, domains and live files.
func checkpointOthers(snap *Snapshot) []Action {
	p, m := snap.Protocol(), snap.Metadata()
	out := []Action{{Protocol: &p}, {MetaData: &m}}
	for _, t := range snap.Txns() {
		out = append(out, Action{Txn: &t})
	}
	for _, d := range snap.DomainMetadata() {
		out = append(out, Action{DomainMetadata: &d})
	}
	files := snap.Files()
	for i := range files {
		out = append(out, Action{Add: &files[i]})
	}
	return out
}

// checkpointRemoves are the tombstones of snap deleted after cutoff (ms since the epoch; a
// remove without deletionTimestamp counts as deleted at 0, as Spark treats it), without
// stats or tags.
func checkpointRemoves(snap *Snapshot, cutoff int64) ([]*Remove, error) {
	tombstones, err := snap.Tombstones()
	if err != nil {
		return nil, err
	}
	var out []*Remove
	for i := range tombstones {
		if r := &tombstones[i]; !tombstoneExpired(*r, cutoff) {
			r.Stats, r.Tags = "", nil // never in checkpoints
			out = append(out, r)
		}
	}
	return out, nil
}

// tombstoneExpired reports whether remove r was deleted at or before cutoff (ms since the
// epoch), a remove without deletionTimestamp counting as deleted at 0.
func tombstoneExpired(r Remove, cutoff int64) bool {
	return deletionMs(&r) <= cutoff
}

// rebaseTombstones makes s's tombstones those of the checkpoint it was just written to,
// b (nil: none): after it, s is what a read from that checkpoint gives, and the next
// checkpoint copies b's remove row groups. s must not be shared yet.
func (s *Snapshot) rebaseTombstones(b *tombstoneBase) {
	s.tombstones = newFileSet[Remove](0)
	s.cpTombstones = writtenTombstones(b)
}

// encodeCheckpoint writes actions as one checkpoint Parquet file (Snappy, data page V1,
// as Spark writes them; plain encoding, no dictionaries: a checkpoint's leaves are mostly
// unique (paths, stats, sizes, times), and arrow-go built a dictionary for each leaf
// until its page limit before falling back, so dictionaries made a 40-file checkpoint
// 14 % larger, 15 % more allocation and half again the CPU, and one of 10,000 files 24 %
// larger and twice the CPU; docs/performance.md § Requests per stream batch). The remove actions go into row groups of their own, after the
// others: a reader that skips the columns that are all null in a row group (this
// package's open, which leaves tombstones undecoded) then skips them whole, and the
// other row groups' remove columns cost nothing to skip (docs/decisions/0014-checkpoint-tombstones.md).
func encodeCheckpoint(actions []Action) ([]byte, error) {
	return encodeCheckpointByDay(actions, false)
}

// encodeCheckpointByDay is encodeCheckpoint, also starting a new row group of removes
// where the UTC day of deletion changes from one remove to the next when byDay is set
// (docs/decisions/0014-checkpoint-tombstones.md, follow-up of 3 Dec 2026).
func encodeCheckpointByDay(actions []Action, byDay bool) ([]byte, error) {
	e, err := newCheckpointEncoder()
	if err != nil {
		return nil, err
	}
	groups := checkpointRowGroups(actions, byDay)
	// About what a row group's column chunk headers and footer entry take, and an action's
	// bytes, so the file is not copied as it doubles.
	e.sink.Grow(8<<10*len(groups) + 128*len(actions))
	for _, rows := range groups {
		if err := e.writeRows(rows); err != nil {
			return nil, err
		}
	}
	return e.close()
}

// checkpointRowGroups splits actions into the row groups of their checkpoint: the others,
// then the removes (a new group for each UTC day of deletion when byDay is set), at most
// checkpointBatchRows each; one empty group when there are no actions.
func checkpointRowGroups(actions []Action, byDay bool) [][]Action {
	others := make([]Action, 0, len(actions))
	var removes []Action
	for _, a := range actions {
		if a.Remove != nil {
			removes = append(removes, a)
		} else {
			others = append(others, a)
		}
	}
	groups := [][]Action{others}
	if byDay {
		for start := 0; start < len(removes); {
			end := start + 1
			for end < len(removes) && deletionDay(removes[end].Remove) == deletionDay(removes[start].Remove) {
				end++
			}
			groups = append(groups, removes[start:end])
			start = end
		}
	} else {
		groups = append(groups, removes)
	}
	var out [][]Action
	for _, group := range groups {
		for start := 0; start < len(group); start += checkpointBatchRows {
			out = append(out, group[start:min(start+checkpointBatchRows, len(group))])
		}
	}
	if len(actions) == 0 {
		out = append(out, nil) // one empty row group, as before
	}
	return out
}

var errCheckpointRow = errors.New("checkpoint rows hold one txn, add, remove, metaData, protocol or domainMetadata each")
