package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// checkpointColumns are the top-level checkpoint columns replay needs (docs/reference/delta-protocol.md
// §7.2), v2 checkpoints' sidecar and checkpointMetadata included.
var checkpointColumns = map[string]bool{
	"txn": true, "add": true, "remove": true, "metaData": true, "protocol": true, "domainMetadata": true,
	"sidecar": true, "checkpointMetadata": true,
}

// SidecarDir is the directory of v2 checkpoints' sidecar files (docs/delta-reading.md
// § V2 checkpoints).
const SidecarDir = LogDir + "_sidecars/"

// readCheckpoint reads every part of a checkpoint and returns its actions. A UUID-named
// v2 checkpoint may be JSON (one action per line, as a commit); a v2 checkpoint's sidecar
// actions are followed to the files under _delta_log/_sidecars/ that hold its add and
// remove actions (docs/delta-reading.md § V2 checkpoints). A missing sidecar makes the checkpoint
// unreadable (the caller falls back to an older one).
//
// The add actions of Parquet files are returned apart, as the []*Add (in row order, part
// by part; a JSON checkpoint's adds are among the actions), and without their stats
// (add.stats, or add.stats_parsed): the returned lazyStats reads them from the same bytes when first
// needed, so an open pays only for paths, sizes and partition values (issue: a 100k-file
// checkpoint is mostly stats). The remove actions (tombstones) of Parquet files are not
// returned at all: the returned lazyTombstones decodes them from the same bytes when first
// needed (a checkpoint written after compaction holds a week of them, which reading or
// appending never uses; docs/decisions/0014-checkpoint-tombstones.md).
func readCheckpoint(ctx context.Context, store storage.Store, keys []string) ([]Action, []*Add, *lazyStats, *lazyTombstones, error) {
	lazy := &lazyStats{}
	tombs := &lazyTombstones{}
	out, adds, err := readCheckpointParts(ctx, store, keys, lazy, tombs)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if len(lazy.parts) == 0 {
		lazy = nil
	}
	if len(tombs.parts) == 0 {
		tombs = nil
	}
	return out, adds, lazy, tombs, nil
}

// lazyTombstones holds the checkpoint files (bytes and footer, as the open read them)
// that may have remove rows, and decodes those rows when first needed, each row group in
// two steps, each at most once (removeRows): the key fields for the carry rule and VACUUM
// (keyed, carryBase), every field for Snapshot.Tombstones and a checkpoint that
// re-encodes them (load). Snapshots derived from one read share it. A nil
// *lazyTombstones has none.
//
// A file's bytes are held only while something may read them again: by parts until
// rowGroups lists their row groups, then by each group until it is decoded in full
// (removeRows.allFields), and, when there is one file, by one until carryBase has decided
// whether it is a base (a base keeps the bytes it copies). So after a cold maintenance
// run's full decode of a checkpoint that cannot be carried (several files, or Spark's
// row groups mixing removes with other actions) the snapshot no longer holds them, as
// before tombstones were decoded by what reads them.
type lazyTombstones struct {
	parts []*checkpointPart // nil once rowGroups ran
	one   *checkpointPart   // the one file, from rowGroups until carryBase ran

	groupsOnce sync.Once
	groups     []*removeRows // every row group with remove values, part by part, in order
	groupsErr  error

	keyOnce sync.Once
	keys    []*Remove
	keyErr  error

	allOnce sync.Once
	all     []*Remove
	allErr  error

	// base is the checkpoint file as a base a later checkpoint copies the remove row
	// groups of (checkpoint_carry.go), when it is one file whose removes have row groups
	// of their own; nil otherwise.
	baseOnce sync.Once
	base     *tombstoneBase
	baseErr  error

	done atomic.Bool // some decode ran
}

// writtenTombstones is the lazyTombstones of a checkpoint this package just wrote, b:
// nothing is left to decode but, in groups it copied from a checkpoint read cold, the
// fields other than the keys (b.rows).
func writtenTombstones(b *tombstoneBase) *lazyTombstones {
	if b == nil {
		return nil
	}
	l := &lazyTombstones{}
	l.groupsOnce.Do(func() {
		for i := range b.groups {
			l.groups = append(l.groups, b.groups[i].rows)
		}
	})
	l.baseOnce.Do(func() { l.base = b })
	l.done.Store(true)
	return l
}

// rowGroups lists, from the footers, the row groups that hold remove values.
func (l *lazyTombstones) rowGroups() ([]*removeRows, error) {
	if l == nil {
		return nil, nil
	}
	l.groupsOnce.Do(func() {
		for _, p := range l.parts {
			pf, err := p.open(memory.DefaultAllocator)
			if err != nil {
				l.groupsErr = err
				return
			}
			leaves := removeLeaves(pf)
			for rg := range pf.NumRowGroups() {
				if len(presentLeaves(pf, rg, leaves)) > 0 {
					l.groups = append(l.groups, &removeRows{part: p, rg: rg})
				}
			}
			pf.Close()
		}
		if len(l.parts) == 1 {
			l.one = l.parts[0]
		}
		l.parts = nil // the groups hold them now
	})
	return l.groups, l.groupsErr
}

// carryBase is the base a checkpoint of a snapshot with these tombstones may copy from,
// or nil; building it decodes the key fields of the removes (an error when they cannot
// be decoded), no more.
func (l *lazyTombstones) carryBase() (*tombstoneBase, error) {
	if l == nil {
		return nil, nil
	}
	l.baseOnce.Do(func() {
		groups, err := l.rowGroups()
		one := l.one
		l.one = nil // a base keeps what it copies
		if err != nil || one == nil {
			l.baseErr = err
			return
		}
		l.done.Store(true)
		byGroup := make(map[int]*removeRows, len(groups))
		for _, g := range groups {
			byGroup[g.rg] = g
		}
		l.base, l.baseErr = partBase(one, func(rg, _ int) (*removeRows, bool) {
			g := byGroup[rg]
			return g, g != nil
		})
	})
	return l.base, l.baseErr
}

// keyed returns the checkpoint's removes with their key fields (path,
// deletionTimestamp, deletionVector) set, and perhaps others: a caller reads only those
// (VACUUM). Shared: do not modify them.
func (l *lazyTombstones) keyed() ([]*Remove, error) {
	if l == nil {
		return nil, nil
	}
	l.keyOnce.Do(func() {
		l.keys, l.keyErr = l.collect((*removeRows).keyed)
	})
	return l.keys, l.keyErr
}

// load returns the checkpoint's removes with every field, decoding what keyed and
// carryBase did not. Shared: do not modify them.
func (l *lazyTombstones) load() ([]*Remove, error) {
	if l == nil {
		return nil, nil
	}
	l.allOnce.Do(func() {
		l.all, l.allErr = l.collect((*removeRows).allFields)
	})
	return l.all, l.allErr
}

// collect is the removes of every group, as rows returns them, in order.
func (l *lazyTombstones) collect(rows func(*removeRows) ([]*Remove, error)) ([]*Remove, error) {
	groups, err := l.rowGroups()
	if err != nil {
		return nil, err
	}
	l.done.Store(true)
	var out []*Remove
	for _, g := range groups {
		rs, err := rows(g)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// decoded reports whether some of the tombstones were decoded (tests: opening must not
// decode tombstones).
func (l *lazyTombstones) decoded() bool { return l != nil && l.done.Load() }

// fullyDecoded counts the row groups whose every field was decoded from the checkpoint's
// bytes (tests: a cold maintenance run decodes only what it needs).
func (l *lazyTombstones) fullyDecoded() int {
	n := 0
	if l != nil && l.decoded() {
		groups, _ := l.rowGroups()
		for _, g := range groups {
			if g.fullyDecoded.Load() {
				n++
			}
		}
	}
	return n
}

// lazyStats holds what is needed to fill in the stats of a checkpoint's add actions
// later: the Parquet bytes of each file that had add rows and those adds, in row order.
// Snapshots derived from one read share it; load runs once.
type lazyStats struct {
	once sync.Once
	// mu is held by load while it sets the stats, and by Snapshot.Totals while it reads
	// the adds without them.
	mu    sync.Mutex
	parts []lazyStatsPart // nil once loaded
}

type lazyStatsPart struct {
	part *checkpointPart
	adds []*Add
}

// load sets Stats on every add the checkpoint read left without. A file that cannot be
// decoded again (it decoded once, from the same bytes) leaves its adds' stats unknown,
// which readers treat as "no statistics", never as "no rows".
func (l *lazyStats) load() {
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range l.parts {
			_ = decodeStats(context.Background(), p.part, p.adds, memory.DefaultAllocator)
		}
		l.parts = nil
	})
}

func readCheckpointParts(ctx context.Context, store storage.Store, keys []string, lazy *lazyStats, tombs *lazyTombstones) ([]Action, []*Add, error) {
	var out []Action
	var adds []*Add
	// readPart reads one checkpoint Parquet file (a part or a sidecar) into out and adds.
	// Its footer is parsed once, here, and kept with its bytes for the later decodes.
	readPart := func(data []byte) error {
		n := len(adds)
		p, err := newCheckpointPart(data)
		if err != nil {
			return err
		}
		if out, err = decodePartLeaves(ctx, p, out, &adds, memory.DefaultAllocator, forOpen); err != nil {
			return err
		}
		lazy.add(p, adds[n:])
		tombs.add(p)
		return nil
	}
	for _, key := range keys {
		data, err := store.GetRange(ctx, key, 0, -1)
		if err != nil {
			return nil, nil, err
		}
		if strings.HasSuffix(key, ".json") {
			acts, err := DecodeActions(data)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", key, err)
			}
			out = append(out, acts...)
			continue
		}
		if err := readPart(data); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	var sidecars []Sidecar
	for _, a := range out {
		if a.Sidecar != nil {
			sidecars = append(sidecars, *a.Sidecar)
		}
	}
	for _, sc := range sidecars {
		key, err := sidecarKey(store.URL(), sc.Path)
		if err != nil {
			return nil, nil, err
		}
		data, err := store.GetRange(ctx, key, 0, -1)
		if err != nil {
			return nil, nil, fmt.Errorf("sidecar: %w", err)
		}
		if err := readPart(data); err != nil {
			return nil, nil, fmt.Errorf("sidecar %s: %w", key, err)
		}
	}
	return out, adds, nil
}

// add keeps p when it may hold remove rows: its remove column has a value in some row
// group, or the file has no statistics to tell.
func (l *lazyTombstones) add(p *checkpointPart) {
	pf, err := p.open(memory.DefaultAllocator)
	if err != nil {
		return // it decoded a moment ago; an error here leaves nothing to keep
	}
	defer pf.Close()
	leaves := removeLeaves(pf)
	if len(leaves) == 0 {
		return
	}
	for rg := range pf.NumRowGroups() {
		if len(presentLeaves(pf, rg, leaves)) > 0 {
			l.parts = append(l.parts, p)
			return
		}
	}
}

// removeLeaves are the leaf columns of pf under remove.
func removeLeaves(pf *file.Reader) []int {
	sc := pf.MetaData().Schema
	var leaves []int
	for i := 0; i < sc.NumColumns(); i++ {
		if p := sc.Column(i).ColumnPath(); len(p) > 0 && p[0] == "remove" {
			leaves = append(leaves, i)
		}
	}
	return leaves
}

// add records adds, the add rows of p in order, decoded without stats. adds is kept,
// not copied.
func (l *lazyStats) add(p *checkpointPart, adds []*Add) {
	if len(adds) > 0 {
		l.parts = append(l.parts, lazyStatsPart{part: p, adds: adds})
	}
}

// decodeStats reads the add stats of one checkpoint file (add.stats, else
// add.stats_parsed rendered as JSON) into adds, which are its add rows in order.
func decodeStats(ctx context.Context, p *checkpointPart, adds []*Add, mem memory.Allocator) (err error) {
	defer recoverUnreadable(&err)
	if len(adds) == 0 {
		return nil
	}
	pf, err := p.open(mem)
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, mem)
	if err != nil {
		return err
	}
	sc := pf.MetaData().Schema
	var stats, parsed, path []int
	for i := 0; i < sc.NumColumns(); i++ {
		p := sc.Column(i).ColumnPath()
		switch {
		case len(p) < 2 || p[0] != "add":
		case p[1] == "stats":
			stats = append(stats, i)
		case p[1] == "stats_parsed":
			parsed = append(parsed, i)
		case p[1] == "path":
			path = append(path, i)
		}
	}
	leaves := stats
	if len(leaves) == 0 {
		leaves = parsed
	}
	if len(leaves) == 0 {
		return nil
	}
	// add.path comes along so that a row whose stats are null still counts as an add.
	leaves = append(path, leaves...)
	next := 0
	for rg := range pf.NumRowGroups() {
		if len(path) > 0 && len(presentLeaves(pf, rg, path)) == 0 {
			continue // add.path all null: no add rows (a group of removes, say)
		}
		tbl, err := fr.ReadRowGroups(ctx, leaves, []int{rg})
		if err != nil {
			return err
		}
		tr := array.NewTableReader(tbl, 64*1024)
		for tr.Next() {
			rec := tr.RecordBatch()
			sa, ok := rec.Column(0).(*array.Struct)
			if !ok {
				break
			}
			add := newStructCols(sa)
			for i := range int(rec.NumRows()) {
				if !add.valid(i) {
					continue
				}
				if next >= len(adds) {
					tr.Release()
					tbl.Release()
					return fmt.Errorf("checkpoint has more add rows than it had")
				}
				st := add.str("stats", i)
				if st == "" {
					st = add.parsedStats(i)
				}
				adds[next].Stats = st
				next++
			}
		}
		tr.Release()
		tbl.Release()
	}
	return nil
}

// sidecarKey is the store key of a sidecar path: a file name (the usual form) under
// _delta_log/_sidecars/, or an absolute URI inside the table.
func sidecarKey(rootURL, p string) (string, error) {
	if !strings.Contains(p, "://") && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "file:") {
		return SidecarDir + decodePath(p), nil
	}
	root, err := url.Parse(rootURL)
	if err != nil {
		return "", err
	}
	k, ok := tableKey(root, p)
	if !ok {
		return "", fmt.Errorf("sidecar %q is outside the table", p)
	}
	return k, nil
}

// decodeCheckpoint appends the actions of one checkpoint Parquet file to out, the adds
// with their stats. Only the leaves of the needed columns are read; a missing column is
// treated as all-null. Row groups are decoded one at a time, so the memory held at once
// for decoding is one row group's (Spark writes checkpoints in row groups of its Parquet
// block size, this package in checkpointBatchRows actions), not the whole file's.
func decodeCheckpoint(ctx context.Context, data []byte, out []Action) ([]Action, error) {
	return decodeCheckpointWith(ctx, data, out, memory.DefaultAllocator, true)
}

// decodeCheckpointWith is decodeCheckpoint with an allocator, reading the adds' stats
// only when withStats (else decodeStats fills them in later).
func decodeCheckpointWith(ctx context.Context, data []byte, out []Action, mem memory.Allocator, withStats bool) ([]Action, error) {
	n := len(out)
	p, err := newCheckpointPart(data)
	if err != nil {
		return nil, err
	}
	out, err = decodePartLeaves(ctx, p, out, nil, mem, allLeaves)
	if err != nil || !withStats {
		return out, err
	}
	var adds []*Add
	for _, a := range out[n:] {
		if a.Add != nil {
			adds = append(adds, a.Add)
		}
	}
	return out, decodeStats(ctx, p, adds, mem)
}

// errUnreadableParquet is the error a checkpoint's decoding returns when arrow-go's Parquet
// reader panicked on its bytes: a page header of a data page without its
// data_page_header, for one, which a footer pointing into the middle of a column chunk
// meets (TestCheckpointWithBadPageFallsBack). The open then falls back to an older
// checkpoint, as for any unreadable one (the package doc, doc.go).
var errUnreadableParquet = errors.New("the Parquet reader failed on the file")

// recoverUnreadable, deferred, turns a panic into errUnreadableParquet in *err.
func recoverUnreadable(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", errUnreadableParquet, r)
	}
}

// A leafFilter says whether decodeCheckpointLeaves reads the leaf column at path p
// (top-level column first); hasStats is whether the file has an add.stats column.
type leafFilter func(p []string, hasStats bool) bool

// allLeaves reads every column replay needs but the adds' stats (decodeStats reads those).
func allLeaves(p []string, _ bool) bool {
	return len(p) > 0 && checkpointColumns[p[0]] && !isAddStats(p)
}

func isAddStats(p []string) bool {
	return p[0] == "add" && len(p) > 1 && (p[1] == "stats" || p[1] == "stats_parsed" || p[1] == "partitionValues_parsed")
}

// forOpen is what an open reads: everything but the adds' stats and the removes.
func forOpen(p []string, hasStats bool) bool {
	return allLeaves(p, hasStats) && p[0] != "remove"
}

// onlyRemoves reads the remove rows alone (lazyTombstones).
func onlyRemoves(p []string, _ bool) bool { return len(p) > 0 && p[0] == "remove" }

// decodeCheckpointLeaves appends to out the actions of one checkpoint Parquet file that
// the leaf columns keep selects hold, the adds without their stats; with adds not nil,
// the adds are appended there instead, in row order (an open: an Action per add would
// cost 80 bytes each). The add rows are decoded by decodeAdds, straight from their
// leaves; the other actions (a few rows, or the removes) through Arrow.
//
// A panic of the Parquet reader on malformed pages is returned as an error
// (errUnreadableParquet), so that such a checkpoint is unreadable like any other.
func decodeCheckpointLeaves(ctx context.Context, data []byte, out []Action, adds *[]*Add, mem memory.Allocator, keep leafFilter) ([]Action, error) {
	p, err := newCheckpointPart(data)
	if err != nil {
		return nil, err
	}
	return decodePartLeaves(ctx, p, out, adds, mem, keep)
}

// decodePartLeaves is decodeCheckpointLeaves of a file whose footer is parsed.
func decodePartLeaves(ctx context.Context, p *checkpointPart, out []Action, adds *[]*Add, mem memory.Allocator, keep leafFilter) (_ []Action, err error) {
	defer recoverUnreadable(&err)
	pf, err := p.open(mem)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	var leaves []int
	sc := pf.MetaData().Schema
	hasStats := false
	for i := 0; i < sc.NumColumns(); i++ {
		if p := sc.Column(i).ColumnPath(); len(p) > 1 && p[0] == "add" && p[1] == "stats" {
			hasStats = true
		}
	}
	for i := 0; i < sc.NumColumns(); i++ {
		if p := sc.Column(i).ColumnPath(); keep(p, hasStats) && (p[0] != "add" || isAddLeaf(p)) {
			leaves = append(leaves, i)
		}
	}
	if len(leaves) == 0 {
		return out, nil
	}
	var fr *pqarrow.FileReader
	for rg := range pf.NumRowGroups() {
		rgLeaves := presentLeaves(pf, rg, leaves)
		if len(rgLeaves) == 0 {
			continue
		}
		var addLeaves, others []int
		for _, l := range rgLeaves {
			if sc.Column(l).ColumnPath()[0] == "add" {
				addLeaves = append(addLeaves, l)
			} else {
				others = append(others, l)
			}
		}
		var rowAdds []*Add
		if len(addLeaves) > 0 {
			if rowAdds, err = decodeAdds(pf, rg, addLeaves); err != nil {
				return nil, err
			}
		}
		if adds != nil {
			n := 0
			for _, a := range rowAdds {
				if a != nil {
					n++
				}
			}
			*adds = slices.Grow(*adds, n)
			for _, a := range rowAdds {
				if a != nil {
					*adds = append(*adds, a)
				}
			}
			rowAdds = nil
		}
		if len(others) == 0 {
			for _, a := range rowAdds {
				if a != nil {
					out = append(out, Action{Add: a})
				}
			}
			continue
		}
		if fr == nil {
			if fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, mem); err != nil {
				return nil, err
			}
		}
		limit := int(pf.MetaData().RowGroup(rg).NumRows())
		if len(addLeaves) > 0 {
			// Rows past the last one with another action are adds: Arrow stops there.
			if limit, err = rowsBefore(pf, rg, others); err != nil {
				return nil, err
			}
		}
		if out, err = decodeRowGroup(ctx, fr, others, rg, rowAdds, limit, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// presentLeaves drops from leaves those of the top-level columns that hold no value in
// row group rg: every leaf's column chunk statistics say all its values are null. A
// checkpoint is one action per row, so in a group of adds the remove, metaData,
// domainMetadata... columns are all null, and decoding them into Arrow would cost as much
// as the adds (a 100k-file checkpoint has some 40 leaves). Without statistics a column is
// read.
func presentLeaves(pf *file.Reader, rg int, leaves []int) []int {
	md := pf.MetaData()
	rows := md.RowGroups[rg].NumRows
	hasValue := map[string]bool{}
	for _, leaf := range leaves {
		top := md.Schema.Column(leaf).ColumnPath()[0]
		if hasValue[top] {
			continue
		}
		if nulls, ok := chunkNullCount(md, rg, leaf); !ok || nulls != rows {
			hasValue[top] = true
		}
	}
	out := make([]int, 0, len(leaves))
	for _, leaf := range leaves {
		if hasValue[md.Schema.Column(leaf).ColumnPath()[0]] {
			out = append(out, leaf)
		}
	}
	return out
}

// decodeRowGroup appends the actions of row group rg, reading the leaf columns leaves
// (none of add's) through Arrow, up to row limit; adds, when not nil, holds the group's
// add rows by row (decodeAdds); past limit only those are read.
func decodeRowGroup(ctx context.Context, fr *pqarrow.FileReader, leaves []int, rg int, adds []*Add, limit int, out []Action) ([]Action, error) {
	// Batches of at most limit rows: past it only adds are left, which are known.
	fr.Props.BatchSize = int64(min(64*1024, max(limit, 1)))
	rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	row := 0 // of the row group, at the start of the batch
	for row < limit && rr.Next() {
		rec := rr.RecordBatch()
		chunk := map[string]structCols{}
		for i, f := range rec.Schema().Fields() {
			sa, ok := rec.Column(i).(*array.Struct)
			if !ok {
				return nil, fmt.Errorf("column %s is %s, not a struct", f.Name, f.Type)
			}
			chunk[f.Name] = newStructCols(sa)
		}
		rows := int(rec.NumRows())
		for i := range rows {
			if row+i < len(adds) && adds[row+i] != nil {
				out = append(out, Action{Add: adds[row+i]})
			} else if r, ok := chunk["remove"].remove(i); ok {
				out = append(out, Action{Remove: r})
			} else if t, ok := chunk["txn"].txn(i); ok {
				out = append(out, Action{Txn: t})
			} else if m, ok := chunk["metaData"].metadata(i); ok {
				out = append(out, Action{MetaData: m})
			} else if p, ok := chunk["protocol"].protocol(i); ok {
				out = append(out, Action{Protocol: p})
			} else if d, ok := chunk["domainMetadata"].domain(i); ok {
				out = append(out, Action{DomainMetadata: d})
			} else if sc, ok := chunk["sidecar"].sidecar(i); ok {
				out = append(out, Action{Sidecar: sc})
			} else if cm, ok := chunk["checkpointMetadata"].checkpointMetadata(i); ok {
				out = append(out, Action{CheckpointMetadata: cm})
			}
		}
		row += rows
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if row < limit {
		return nil, fmt.Errorf("row group %d: read %d of %d rows", rg, row, limit)
	}
	for ; row < len(adds); row++ {
		if adds[row] != nil {
			out = append(out, Action{Add: adds[row]})
		}
	}
	return out, nil
}

// structCols gives typed access to the fields of a struct array by name. The zero value
// (a missing column) reads as null everywhere.
type structCols struct {
	arr    *array.Struct
	fields map[string]arrow.Array
}

func newStructCols(a *array.Struct) structCols {
	st := a.DataType().(*arrow.StructType)
	f := make(map[string]arrow.Array, st.NumFields())
	for i, fd := range st.Fields() {
		f[fd.Name] = a.Field(i)
	}
	return structCols{arr: a, fields: f}
}

func (s structCols) valid(i int) bool { return s.arr != nil && s.arr.IsValid(i) }

func (s structCols) field(name string, i int) arrow.Array {
	f := s.fields[name]
	if f == nil || f.IsNull(i) {
		return nil
	}
	return f
}

func (s structCols) sub(name string, i int) (structCols, bool) {
	f, ok := s.field(name, i).(*array.Struct)
	if !ok {
		return structCols{}, false
	}
	return newStructCols(f), true
}

func (s structCols) str(name string, i int) string {
	switch f := s.field(name, i).(type) {
	case *array.String:
		return f.Value(i)
	case *array.LargeString:
		return f.Value(i)
	case *array.Binary:
		return string(f.Value(i))
	}
	return ""
}

func (s structCols) i64p(name string, i int) *int64 {
	if v, ok := intValue(s.field(name, i), i); ok {
		return &v
	}
	return nil
}

func (s structCols) i64(name string, i int) int64 {
	v, _ := intValue(s.field(name, i), i)
	return v
}

func (s structCols) boolp(name string, i int) *bool {
	if f, ok := s.field(name, i).(*array.Boolean); ok {
		v := f.Value(i)
		return &v
	}
	return nil
}

func (s structCols) boolean(name string, i int) bool {
	p := s.boolp(name, i)
	return p != nil && *p
}

func intValue(a arrow.Array, i int) (int64, bool) {
	switch f := a.(type) {
	case *array.Int64:
		return f.Value(i), true
	case *array.Int32:
		return int64(f.Value(i)), true
	case *array.Int16:
		return int64(f.Value(i)), true
	case *array.Int8:
		return int64(f.Value(i)), true
	}
	return 0, false
}

// strMap reads a map<string,string> (or the legacy list<struct<key,value>> form); null
// values read as "" (docs/reference/delta-protocol.md §3: empty means null).
func (s structCols) strMap(name string, i int) map[string]string {
	var keys, items arrow.Array
	var start, end int64
	switch f := s.field(name, i).(type) {
	case *array.Map:
		keys, items = f.Keys(), f.Items()
		start, end = f.ValueOffsets(i)
	case *array.List:
		kv, ok := f.ListValues().(*array.Struct)
		if !ok {
			return nil
		}
		c := newStructCols(kv)
		keys, items = c.fields["key"], c.fields["value"]
		start, end = f.ValueOffsets(i)
	default:
		return nil
	}
	if end == start {
		return nil // an empty map reads as nil: one allocation less per add
	}
	out := make(map[string]string, end-start)
	for j := int(start); j < int(end); j++ {
		k := stringAt(keys, j)
		out[k] = stringAt(items, j)
	}
	return out
}

func stringAt(a arrow.Array, j int) string {
	if a == nil || a.IsNull(j) {
		return ""
	}
	switch f := a.(type) {
	case *array.String:
		return f.Value(j)
	case *array.LargeString:
		return f.Value(j)
	case *array.Binary:
		return string(f.Value(j))
	}
	return ""
}

func (s structCols) strList(name string, i int) []string {
	f, ok := s.field(name, i).(*array.List)
	if !ok {
		return nil
	}
	start, end := f.ValueOffsets(i)
	out := make([]string, 0, end-start)
	for j := int(start); j < int(end); j++ {
		out = append(out, stringAt(f.ListValues(), j))
	}
	return out
}

func (s structCols) deletionVector(i int) *DeletionVector {
	dv, ok := s.sub("deletionVector", i)
	if !ok {
		return nil
	}
	d := &DeletionVector{
		StorageType:    dv.str("storageType", i),
		PathOrInlineDv: dv.str("pathOrInlineDv", i),
		SizeInBytes:    int32(dv.i64("sizeInBytes", i)),
		Cardinality:    dv.i64("cardinality", i),
	}
	if o := dv.i64p("offset", i); o != nil {
		off := int32(*o)
		d.Offset = &off
	}
	return d
}

// parsedStats renders add.stats_parsed (the typed stats of a checkpoint written with
// delta.checkpoint.writeStatsAsStruct) as the JSON stats document add.stats would hold
// (docs/reference/delta-protocol.md §4.1), or "" when the row has none.
func (s structCols) parsedStats(i int) string {
	sp, ok := s.field("stats_parsed", i).(*array.Struct)
	if !ok {
		return ""
	}
	v := sp.GetOneForMarshal(i)
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func (s structCols) sidecar(i int) (*Sidecar, bool) {
	if !s.valid(i) {
		return nil, false
	}
	return &Sidecar{Path: s.str("path", i), SizeInBytes: s.i64("sizeInBytes", i),
		ModificationTime: s.i64("modificationTime", i), Tags: s.strMap("tags", i)}, true
}

func (s structCols) checkpointMetadata(i int) (*CheckpointMetadata, bool) {
	if !s.valid(i) {
		return nil, false
	}
	return &CheckpointMetadata{Version: s.i64("version", i), Tags: s.strMap("tags", i)}, true
}

func (s structCols) remove(i int) (*Remove, bool) {
	if !s.valid(i) {
		return nil, false
	}
	return &Remove{
		Path:                    s.str("path", i),
		DeletionTimestamp:       s.i64p("deletionTimestamp", i),
		DataChange:              s.boolean("dataChange", i),
		ExtendedFileMetadata:    s.boolp("extendedFileMetadata", i),
		PartitionValues:         s.strMap("partitionValues", i),
		Size:                    s.i64p("size", i),
		DeletionVector:          s.deletionVector(i),
		BaseRowID:               s.i64p("baseRowId", i),
		DefaultRowCommitVersion: s.i64p("defaultRowCommitVersion", i),
	}, true
}

func (s structCols) txn(i int) (*Txn, bool) {
	if !s.valid(i) {
		return nil, false
	}
	return &Txn{AppID: s.str("appId", i), Version: s.i64("version", i), LastUpdated: s.i64p("lastUpdated", i)}, true
}

func (s structCols) metadata(i int) (*Metadata, bool) {
	if !s.valid(i) {
		return nil, false
	}
	m := &Metadata{
		ID:               s.str("id", i),
		Name:             s.str("name", i),
		Description:      s.str("description", i),
		SchemaString:     s.str("schemaString", i),
		PartitionColumns: s.strList("partitionColumns", i),
		Configuration:    s.strMap("configuration", i),
		CreatedTime:      s.i64p("createdTime", i),
	}
	if f, ok := s.sub("format", i); ok {
		m.Format = Format{Provider: f.str("provider", i), Options: f.strMap("options", i)}
	}
	return m, true
}

func (s structCols) protocol(i int) (*Protocol, bool) {
	if !s.valid(i) {
		return nil, false
	}
	return &Protocol{
		MinReaderVersion: int(s.i64("minReaderVersion", i)),
		MinWriterVersion: int(s.i64("minWriterVersion", i)),
		ReaderFeatures:   s.strList("readerFeatures", i),
		WriterFeatures:   s.strList("writerFeatures", i),
	}, true
}

func (s structCols) domain(i int) (*DomainMetadata, bool) {
	if !s.valid(i) {
		return nil, false
	}
	return &DomainMetadata{Domain: s.str("domain", i), Configuration: s.str("configuration", i), Removed: s.boolean("removed", i)}, true
}
