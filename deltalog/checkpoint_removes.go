package deltalog

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// The tombstones a snapshot's checkpoint holds are decoded here, as their readers need
// them, from the bytes and footer the open kept (docs/decisions/0014-checkpoint-tombstones.md,
// follow-up "Tombstones decoded by what reads them"). A cold maintenance run reads them
// twice: its checkpoint (the carry rule: each tombstone's file and deletion time) and
// VACUUM (each unexpired tombstone's file and deletion vector). Neither reads the other
// fields, which only a checkpoint that re-encodes tombstones (merging row groups, or
// encoding them all afresh) and Snapshot.Tombstones need. So each row group of removes is
// decoded in two steps, each at most once: its key leaves (path, deletionTimestamp,
// deletionVector), then, when asked for, the others, into copies of the first step's
// Removes (which stay as they were: a reader may hold them). The footer is parsed once,
// by the open, and shared (checkpointPart).

// checkpointPart is one checkpoint Parquet file as the open read it: its bytes and its
// footer, parsed once and shared, read-only, by every later decode of the same bytes (the
// adds' stats, the tombstones, a carry base). A footer is never looked up by key: it
// travels with the bytes it was parsed from, so no decode can pair one checkpoint's bytes
// with another's footer (two writers may each write the checkpoint of one version,
// different bytes under one name: docs/decisions/0014-checkpoint-tombstones.md, follow-up
// "The ranged open is not adopted").
type checkpointPart struct {
	data []byte
	md   *metadata.FileMetaData
}

// footerParses counts the footers newCheckpointPart parsed, over the process (tests: a
// cold open and every later decode of its checkpoint parse one).
var footerParses atomic.Int64

// newCheckpointPart parses data's footer. A panic of the Parquet reader on malformed bytes
// is returned as errUnreadableParquet.
func newCheckpointPart(data []byte) (_ *checkpointPart, err error) {
	defer recoverUnreadable(&err)
	footerParses.Add(1)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return &checkpointPart{data: data, md: pf.MetaData()}, nil
}

// open is a reader of p's bytes with p's footer (not parsed again), allocating from mem.
func (p *checkpointPart) open(mem memory.Allocator) (*file.Reader, error) {
	return file.NewParquetReader(bytes.NewReader(p.data), file.WithReadProps(parquet.NewReaderProperties(mem)), file.WithMetadata(p.md))
}

// removeKeyField reports whether the remove field name (under remove) says which file a
// tombstone protects or since when: what the carry rule (removeKey, the span of deletion
// times) and VACUUM read.
func removeKeyField(name string) bool {
	return name == "path" || name == "deletionTimestamp" || name == "deletionVector"
}

// removeFields are the remove fields a checkpoint's remove rows are decoded into, the
// ones Remove has and a checkpoint holds (docs/reference/delta-protocol.md §7.2; stats
// and tags are never written to checkpoints).
var removeFields = actionFields{
	action: "remove",
	scalars: map[string]bool{
		"path": true, "deletionTimestamp": true, "dataChange": true, "extendedFileMetadata": true,
		"size": true, "baseRowId": true, "defaultRowCommitVersion": true,
	},
	structs: map[string]map[string]bool{"deletionVector": dvLeaves},
	maps:    map[string]bool{"partitionValues": true},
}

// decodeRemoveLeaves decodes the remove rows of row group rg of pf straight from their
// leaf columns, as decodeAdds does the adds (actionLeaves.read), reading only the fields
// of removeFields whose name under remove want selects; an all-null leaf is not read (its
// field reads as its zero value). With rows nil the rows are made from remove.path, which
// want must select: one entry per row of the group, the row's Remove or nil for a row
// that is not a remove (the Removes of a group are one allocation). With rows given (as
// returned before, for the same group) the fields are set in those Removes. The values
// are those the Arrow decode of the same leaves gives (structCols.remove;
// TestRemoveLeavesMatchArrow).
func decodeRemoveLeaves(pf *file.Reader, rg int, rows []*Remove, want func(field string) bool) ([]*Remove, error) {
	l := actionLeaves{scalars: map[string]*leafValues{}, maps: map[string]*strMapLeaves{}}
	if err := l.read(pf, rg, nil, &removeFields, want); err != nil {
		return nil, err
	}
	if rows == nil {
		path := l.scalars["path"]
		if path == nil {
			return nil, errors.New("a row group of removes without remove.path")
		}
		rows = actionRows[Remove](path, l.actionDef)
	} else if len(rows) != l.rows {
		return nil, fmt.Errorf("%d rows for a row group of %d", len(rows), l.rows)
	}
	// Optional fields point into the decoded values (owned by this decode): no
	// allocation per row.
	fields := []struct {
		name string
		set  func(r *Remove, v *leafValues, k int)
	}{
		{"path", func(r *Remove, v *leafValues, k int) { r.Path = v.str(k) }},
		{"deletionTimestamp", func(r *Remove, v *leafValues, k int) { r.DeletionTimestamp = &v.ints[k] }},
		{"dataChange", func(r *Remove, v *leafValues, k int) { r.DataChange = v.boolean(k) }},
		{"extendedFileMetadata", func(r *Remove, v *leafValues, k int) { r.ExtendedFileMetadata = &v.bools[k] }},
		{"size", func(r *Remove, v *leafValues, k int) { r.Size = &v.ints[k] }},
		{"baseRowId", func(r *Remove, v *leafValues, k int) { r.BaseRowID = &v.ints[k] }},
		{"defaultRowCommitVersion", func(r *Remove, v *leafValues, k int) { r.DefaultRowCommitVersion = &v.ints[k] }},
	}
	for _, f := range fields {
		v := l.scalars[f.name]
		if v == nil {
			continue
		}
		if ok := len(v.ints) > 0 || len(v.bools) > 0 || len(v.ends) > 0; !ok {
			continue // no values
		}
		if f.name != "path" && f.name != "dataChange" && !typedFor(v, f.name) {
			return nil, fmt.Errorf("column remove.%s has an unexpected physical type", f.name)
		}
		eachRow(v, rows, f.set)
	}
	if l.dvDef >= 0 {
		decodeDVs(l.scalars, l.dvDef, rows, func(r *Remove) **DeletionVector { return &r.DeletionVector })
	}
	if m := l.maps["partitionValues"]; m != nil {
		if err := mapRows(m, rows, func(r *Remove, kv map[string]string) { r.PartitionValues = kv }); err != nil {
			return nil, fmt.Errorf("remove.partitionValues: %w", err)
		}
	}
	return rows, nil
}

// typedFor reports whether v holds the kind of values the pointer field name points into
// (int64s, or bools for extendedFileMetadata).
func typedFor(v *leafValues, name string) bool {
	if name == "extendedFileMetadata" {
		return v.ints == nil && v.ends == nil
	}
	return v.bools == nil && v.ends == nil
}

// removeRows are the remove rows of one row group of a checkpoint file, decoded on
// demand in two steps, each once: keyed (the key fields, removeKeyField), then all (every
// field, into copies). A group whose rows are already known (a checkpoint this package
// wrote) has both at once (knownRows). Safe for concurrent use.
type removeRows struct {
	part *checkpointPart // nil once all ran, or for known rows
	rg   int

	keyOnce sync.Once
	byRow   []*Remove // the group's rows, nil where not a remove; key fields only
	keys    []*Remove // the removes among them, in row order
	keyErr  error

	allOnce sync.Once
	all     []*Remove // keys' removes with every field, in row order
	allErr  error

	// fullyDecoded is set when all decoded leaves (tests: a cold maintenance run decodes
	// only what it needs).
	fullyDecoded atomic.Bool
}

// knownRows is the removeRows of rs, a group's removes in row order.
func knownRows(rs []*Remove) *removeRows {
	g := &removeRows{keys: rs, all: rs}
	g.keyOnce.Do(func() {})
	g.allOnce.Do(func() {})
	return g
}

// keyed returns the group's removes, in row order, with their key fields (path,
// deletionTimestamp, deletionVector) set, and perhaps others: a caller reads only those.
// They are shared: do not modify them.
func (g *removeRows) keyed() ([]*Remove, error) {
	g.keyOnce.Do(func() {
		g.keyErr = g.decode(func(pf *file.Reader) error {
			rows, err := decodeRemoveLeaves(pf, g.rg, nil, removeKeyField)
			if err != nil {
				return err
			}
			g.byRow = rows
			for _, r := range rows {
				if r != nil {
					g.keys = append(g.keys, r)
				}
			}
			return nil
		})
	})
	return g.keys, g.keyErr
}

// allFields returns the group's removes, in row order, with every field set, decoding
// the leaves keyed did not (its Removes are copied, not changed). They are shared: do not
// modify them.
func (g *removeRows) allFields() ([]*Remove, error) {
	g.allOnce.Do(func() {
		if _, err := g.keyed(); err != nil {
			g.allErr = err
			return
		}
		g.allErr = g.decode(func(pf *file.Reader) error {
			rows := make([]*Remove, len(g.byRow))
			slab := make([]Remove, len(g.keys))
			for i, r := range g.byRow {
				if r != nil {
					slab[0] = *r
					rows[i] = &slab[0]
					slab = slab[1:]
				}
			}
			rows, err := decodeRemoveLeaves(pf, g.rg, rows, func(f string) bool { return !removeKeyField(f) })
			if err != nil {
				return err
			}
			g.all = make([]*Remove, 0, len(g.keys))
			for _, r := range rows {
				if r != nil {
					g.all = append(g.all, r)
				}
			}
			g.fullyDecoded.Store(true)
			return nil
		})
		g.part, g.byRow = nil, nil
	})
	return g.all, g.allErr
}

// decode runs f on a reader of the group's file, a panic of the Parquet reader returned
// as errUnreadableParquet.
func (g *removeRows) decode(f func(pf *file.Reader) error) (err error) {
	defer recoverUnreadable(&err)
	pf, err := g.part.open(memory.DefaultAllocator)
	if err != nil {
		return err
	}
	defer pf.Close()
	return f(pf)
}
