package deltalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// A checkpoint must hold every unexpired tombstone (docs/reference/delta-protocol.md §7.1),
// and after compaction that is a week of them: re-encoding them all into every checkpoint
// made a stream batch's cost grow with the table's age. Instead, a checkpoint written from
// a snapshot whose tombstones came from a checkpoint this package wrote copies that
// checkpoint's remove row groups byte for byte (their column chunks are position-free; only
// the footer's offsets move) and encodes only what is new: the other actions and the
// removes replayed from JSON since. The result is one ordinary V1 checkpoint file, read as
// any other (docs/decisions/0014-checkpoint-tombstones.md). Each remove row group spans
// less than carrySlack of deletion times, so expiry drops groups whole instead of
// re-encoding the week (the follow-up of 3 Dec 2026 in that decision).

// maxCarriedGroups bounds the remove row groups a checkpoint copies: past this many the
// tombstones are encoded afresh (a footer of hundreds of row groups would cost every
// reader). Carried checkpoints keep well under it by merging (mergeAbove).
const maxCarriedGroups = 32

// mergeAbove is the number of remove row groups past which a carried checkpoint merges the
// newest ones into its new row group (re-encoding their tombstones with those replayed
// since), as far as that group then spans less than carrySlack of deletion times. Each
// carried checkpoint with new removes (a compaction) adds a row group; merging keeps a
// week of hourly compactions' tombstones in about ten groups, each spanning less than a
// day and dropped whole once all its tombstones have expired, so that expiry never
// re-encodes them (docs/decisions/0014-checkpoint-tombstones.md, follow-up of 3 Dec 2026).
const mergeAbove = 12

// carrySlack is how long past its expiry a copied tombstone may stay in checkpoints. A row
// group of removes is dropped whole when all its tombstones have expired, so a group
// spanning less than carrySlack of deletion times never carries one longer; a group
// spanning more (written before groups were bounded, or after a writer idle for a day)
// makes the next checkpoint encode the tombstones afresh. Carrying an expired tombstone is
// harmless (VACUUM and log replay check deletionTimestamp themselves).
const carrySlack = 24 * time.Hour

// checkpointCounts counts, over the process, what writing checkpoints encoded and copied
// (tests and benchmarks read them: BenchmarkFactsAged and BenchmarkFactsFleet say where
// an aged table's checkpoint costs more than a young one's; docs/performance.md § The
// facts side alone, "The aged table's checkpoint"). A few atomic adds per checkpoint.
var checkpointCounts struct {
	written                                  atomic.Int64 // checkpoints built
	carried                                  atomic.Int64 // of them, copying an earlier checkpoint's remove row groups
	full                                     atomic.Int64 // of them, encoding every tombstone (there were some)
	encoded                                  atomic.Int64 // tombstones encoded
	copied                                   atomic.Int64 // remove row groups copied
	footer                                   atomic.Int64 // footer bytes written by carried checkpoints
	dropped                                  atomic.Int64 // remove row groups dropped whole, all expired
	merged                                   atomic.Int64 // remove row groups merged into a new one (re-encoded)
	reused                                   atomic.Int64 // copied groups' footer entries spliced as serialized before
	noCarrySlack, noCarryGroups, noCarryKeys atomic.Int64 // why a base was not carried
}

// tombstoneBase is the tombstones of a checkpoint whose remove row groups a later
// checkpoint can copy.
type tombstoneBase struct {
	groups []carriedGroup // they hold the removes, and nothing else; oldest first
	n      int            // the removes they hold
	keys   *keyChain      // the keys of the removes
	oldest int64          // the earliest deletionTimestamp (ms), 0 when one has none
	footer int            // the footer length of the checkpoint that made it, 0 unknown
}

// carriedGroup is one remove row group: its column chunks' bytes as written, and the
// footer that lists it (offsets in the frame of the file it was written to, in which its
// chunks began at start). A copy moves the offsets by where the chunks land minus start,
// so a group keeps pointing at the footer and bytes it was first written with, however
// many checkpoints copy it. It also keeps its rows, their keys and the span of their
// deletion times, so that it can be dropped whole when they have all expired, or merged.
// Of a group read from a checkpoint, the keys and the span are decoded when the base is
// built; the rows' other fields only when they are re-encoded (merged) or read
// (removeRows).
type carriedGroup struct {
	meta   *metadata.FileMetaData
	index  int
	chunks []byte
	start  int64

	rows           *removeRows
	n              int // the rows
	keys           map[fileKey]struct{}
	oldest, newest int64 // deletionTimestamp span (ms); a remove without one counts as 0

	// moved is the group's footer entry as the last checkpoint that copied it placed it,
	// shared by the copies of the group: a checkpoint that places it at the same offset and
	// ordinal (carried groups come first in the file, oldest first, so they keep their
	// place until an older one expires) splices its bytes into the footer without
	// building or serializing it again.
	moved *atomic.Pointer[movedGroup]
}

// movedGroup is a carried row group's footer entry moved to offset pos as row group
// ordinal: its RowGroup struct as Thrift's compact protocol writes it, the bytes the
// footer's row_groups list holds for it (rowGroupSplicer).
type movedGroup struct {
	pos     int64
	ordinal int
	entry   []byte
}

// entryLen is the length of m's entry, 0 for nil.
func (m *movedGroup) entryLen() int {
	if m == nil {
		return 0
	}
	return len(m.entry)
}

// setRows makes rows the group's, with their keys and span (decoding their key fields,
// when read from a checkpoint: an error when they cannot be decoded).
func (g *carriedGroup) setRows(rows *removeRows) error {
	rs, err := rows.keyed()
	if err != nil {
		return err
	}
	g.rows, g.n = rows, len(rs)
	g.keys = make(map[fileKey]struct{}, len(rs))
	g.oldest, g.newest = spanOf(rs)
	for _, r := range rs {
		g.keys[removeKey(r)] = struct{}{}
	}
	return nil
}

// spanOf is the earliest and latest deletionTimestamp of rs (a remove without one counts
// as 0).
func spanOf(rs []*Remove) (oldest, newest int64) {
	oldest = 1 << 62
	for _, r := range rs {
		ts := deletionMs(r)
		oldest, newest = min(oldest, ts), max(newest, ts)
	}
	return oldest, newest
}

// deletionMs is r's deletionTimestamp (ms since the epoch), 0 when it has none: the one
// rule by which checkpoints expire tombstones (tombstoneExpired) and group them by day.
func deletionMs(r *Remove) int64 {
	if r.DeletionTimestamp == nil {
		return 0
	}
	return *r.DeletionTimestamp
}

// baseOf is the base of groups (oldest first).
func baseOf(groups []carriedGroup) *tombstoneBase {
	b := &tombstoneBase{groups: groups, oldest: 1 << 62}
	for i := range groups {
		g := &groups[i]
		b.n += g.n
		b.keys = &keyChain{m: g.keys, next: b.keys}
		b.oldest = min(b.oldest, g.oldest)
	}
	return b
}

// keyChain is a set of file keys as a short chain of maps (one a row group), so extending
// a base by a few keys shares the older maps instead of copying them.
type keyChain struct {
	m    map[fileKey]struct{}
	next *keyChain
}

func (c *keyChain) has(k fileKey) bool {
	for ; c != nil; c = c.next {
		if _, ok := c.m[k]; ok {
			return true
		}
	}
	return false
}

func removeKey(r *Remove) fileKey {
	return fileKey{path: r.DecodedPath(), dvID: r.DeletionVector.UniqueID()}
}

// deletionDay is the UTC day of r's deletion (days since the epoch): a full encode puts
// the removes of each day in row groups of their own (so each spans less than
// carrySlack, and is later dropped whole).
func deletionDay(r *Remove) int64 { return deletionMs(r) / (24 * time.Hour).Milliseconds() }

// newTombstoneBase makes data, a checkpoint holding removes (in row order), a base when
// the row groups with removes hold nothing else (as encodeCheckpoint writes them); nil
// otherwise (Spark's checkpoints mix actions in a row group).
func newTombstoneBase(data []byte, removes []*Remove) *tombstoneBase {
	p, err := newCheckpointPart(data)
	if err != nil {
		return nil
	}
	row := 0
	b, err := partBase(p, func(_, n int) (*removeRows, bool) {
		if row+n > len(removes) {
			return nil, false
		}
		rows := knownRows(removes[row : row+n : row+n])
		row += n
		return rows, true
	})
	if err != nil || row != len(removes) {
		return nil
	}
	return b
}

// partBase makes the checkpoint file p a base when the row groups with removes hold
// nothing else; nil otherwise. rowsOf(rg, n) gives the removes of row group rg, of n rows
// (false: none known, no base). An error says the removes' key fields could not be
// decoded.
func partBase(p *checkpointPart, rowsOf func(rg, n int) (*removeRows, bool)) (*tombstoneBase, error) {
	pf, err := p.open(memory.DefaultAllocator)
	if err != nil {
		return nil, nil
	}
	defer pf.Close()
	md, data := p.md, p.data
	sc := md.Schema
	leaves := make([]int, sc.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	var groups []carriedGroup
	for rg := range pf.NumRowGroups() {
		withRemoves, others := false, false
		for _, l := range presentLeaves(pf, rg, leaves) {
			if sc.Column(l).ColumnPath()[0] == "remove" {
				withRemoves = true
			} else {
				others = true
			}
		}
		switch {
		case withRemoves && others:
			return nil, nil
		case withRemoves:
			g, err := groupOf(md, rg, data)
			n := int(md.RowGroups[rg].NumRows)
			rows, ok := rowsOf(rg, n)
			if err != nil || !ok {
				return nil, nil
			}
			if err := g.setRows(rows); err != nil {
				return nil, err
			}
			if g.n != n {
				return nil, nil // a row of the group is no remove
			}
			groups = append(groups, g)
		}
	}
	return baseOf(groups), nil // the files list them oldest first
}

// groupOf is row group rg of the Parquet file data, whose footer is md.
func groupOf(md *metadata.FileMetaData, rg int, data []byte) (carriedGroup, error) {
	if rg < 0 || rg >= len(md.RowGroups) {
		return carriedGroup{}, fmt.Errorf("no row group %d", rg)
	}
	start, stop := int64(-1), int64(0)
	var total int64
	for _, c := range md.RowGroups[rg].Columns {
		if c.MetaData == nil || c.FilePath != nil || c.CryptoMetadata != nil {
			return carriedGroup{}, errors.New("a column chunk without metadata, elsewhere or encrypted")
		}
		first := c.MetaData.DataPageOffset
		if d := c.MetaData.DictionaryPageOffset; d != nil && *d > 0 && *d < first {
			first = *d
		}
		if start < 0 || first < start {
			start = first
		}
		stop = max(stop, first+c.MetaData.TotalCompressedSize)
		total += c.MetaData.TotalCompressedSize
	}
	if start < 4 || stop > int64(len(data)) || stop-start != total {
		return carriedGroup{}, fmt.Errorf("row group %d is not one contiguous run of column chunks", rg)
	}
	return carriedGroup{meta: md, index: rg, chunks: data[start:stop], start: start, moved: new(atomic.Pointer[movedGroup])}, nil
}

// carries reports whether a checkpoint of snap may copy b's remove row groups: none of
// the groups it keeps (those with a tombstone unexpired at cutoff) holds a tombstone that
// expired more than carrySlack before cutoff, there are not too many, and none names a
// file that is live again or was removed again since (the copy would then hold a stale
// tombstone beside its add, or two removes of one file).
func (b *tombstoneBase) carries(snap *Snapshot, cutoff int64) bool {
	if len(b.groups) == 0 {
		return false
	}
	for i := range b.groups {
		if g := &b.groups[i]; g.newest > cutoff && g.oldest <= cutoff-carrySlack.Milliseconds() {
			checkpointCounts.noCarrySlack.Add(1)
			return false
		}
	}
	if len(b.groups) > maxCarriedGroups {
		checkpointCounts.noCarryGroups.Add(1)
		return false
	}
	for k := range snap.files.All() {
		if b.keys.has(k) {
			checkpointCounts.noCarryKeys.Add(1)
			return false
		}
	}
	for k := range snap.tombstones.All() {
		if b.keys.has(k) {
			checkpointCounts.noCarryKeys.Add(1)
			return false
		}
	}
	return true
}

// carriedCheckpoint encodes others and the unexpired tombstones snap replayed from JSON,
// after b's remove row groups but those whose tombstones have all expired at cutoff
// (dropped whole). When more than mergeAbove groups would remain, the newest are merged
// into the new one as far as it then spans less than carrySlack. It returns the checkpoint's parts
// (to be written one after the other: the copied row groups are never gathered into one
// buffer), its size and row count, and the base it makes for the next one.
func carriedCheckpoint(snap *Snapshot, others []Action, cutoff int64, b *tombstoneBase) ([][]byte, int64, int64, *tombstoneBase, error) {
	var fresh []*Remove
	for _, r := range snap.tombstones.All() {
		if !tombstoneExpired(*r, cutoff) {
			c := *r
			c.Stats, c.Tags = "", nil // never in checkpoints
			fresh = append(fresh, &c)
		}
	}
	kept := make([]carriedGroup, 0, len(b.groups)+1)
	for _, g := range b.groups {
		if g.newest > cutoff {
			kept = append(kept, g)
		} else {
			checkpointCounts.dropped.Add(1)
		}
	}
	if len(fresh) > 0 && len(kept)+1 > mergeAbove {
		oldest, newest := spanOf(fresh)
		n := len(kept)
		for n > 0 && max(newest, kept[n-1].newest)-min(oldest, kept[n-1].oldest) < carrySlack.Milliseconds() {
			oldest, newest = min(oldest, kept[n-1].oldest), max(newest, kept[n-1].newest)
			n--
		}
		for _, g := range kept[n:] {
			rs, err := g.rows.allFields()
			if err != nil {
				return nil, 0, 0, nil, err
			}
			fresh = append(fresh, rs...)
		}
		checkpointCounts.merged.Add(int64(len(kept) - n))
		kept = kept[:n]
	}
	slices.SortFunc(fresh, func(x, y *Remove) int { return compareKeys(removeKey(x), removeKey(y)) })
	acts := slices.Clip(others)
	for _, r := range fresh {
		acts = append(acts, Action{Remove: r})
	}
	head, err := encodeCheckpoint(acts)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	checkpointCounts.encoded.Add(int64(len(fresh)))
	parts, size, md, err := appendRowGroups(head, kept, b.footer)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	// The fresh removes' row groups follow the others' in head.
	var groups []carriedGroup
	first := (len(others) + checkpointBatchRows - 1) / checkpointBatchRows
	for g := first; g < first+(len(fresh)+checkpointBatchRows-1)/checkpointBatchRows; g++ {
		cg, err := groupOf(md, g, head)
		if err != nil {
			return nil, 0, 0, nil, err
		}
		at := (g - first) * checkpointBatchRows
		if err := cg.setRows(knownRows(fresh[at:min(at+checkpointBatchRows, len(fresh)):min(at+checkpointBatchRows, len(fresh))])); err != nil {
			return nil, 0, 0, nil, err
		}
		groups = append(groups, cg)
	}
	next := baseOf(append(kept, groups...))
	next.footer = int(binary.LittleEndian.Uint32(parts[len(parts)-1][len(parts[len(parts)-1])-8:]))
	return parts, size, int64(len(others) + next.n), next, nil
}

// appendRowGroups puts row groups copied from other Parquet files with the same schema
// before the row groups of the Parquet file dst: their column chunks are copied as they
// are (pages, dictionaries, statistics), then dst's, and a new footer lists the copies,
// then dst's row groups, with their offsets moved to where they now are. The copies come
// first so that a group carried by checkpoint after checkpoint keeps its place, and its
// footer entry is serialized once and its bytes spliced into later footers
// (carriedGroup.moved, rowGroupSplicer). Page indexes and bloom filters of the copies are
// left out (this package writes neither). footerHint is the footer length of the
// checkpoint the groups were last copied into (0: unknown), to size the new one's buffer
// once. It returns the new file as parts to write in order, its size, and dst's footer as
// read (dst's own offsets).
func appendRowGroups(dst []byte, groups []carriedGroup, footerHint int) ([][]byte, int64, *metadata.FileMetaData, error) {
	pd, err := file.NewParquetReader(bytes.NewReader(dst))
	if err != nil {
		return nil, 0, nil, err
	}
	defer pd.Close()
	md := pd.MetaData()
	own, ownRows := md.RowGroups, md.NumRows
	rows := ownRows
	footer := int(binary.LittleEndian.Uint32(dst[len(dst)-8:]))
	end := len(dst) - 8 - footer
	if end < 4 || len(own) == 0 {
		return nil, 0, nil, errors.New("append row groups: bad footer")
	}
	parts := make([][]byte, 0, len(groups)+3)
	parts = append(parts, dst[:4]) // "PAR1"
	entries := make([][]byte, 0, len(groups))
	moved := slices.Grow(own[:0:0], len(own))
	pos := int64(4)
	for i := range len(groups) + len(own) {
		// dst's own row groups, after the copies: their chunks follow the copies' chunks.
		rg, delta := own[max(i-len(groups), 0)], pos-4
		if i < len(groups) {
			g := &groups[i]
			if !md.Schema.Equals(g.meta.Schema) {
				return nil, 0, nil, errors.New("append row groups: the schemas differ")
			}
			parts = append(parts, g.chunks)
			at := pos
			pos += int64(len(g.chunks))
			rows += g.meta.RowGroups[g.index].NumRows
			if m := g.moved.Load(); m != nil && m.pos == at && m.ordinal == i {
				entries = append(entries, m.entry)
				checkpointCounts.reused.Add(1)
				continue
			}
			rg, delta = g.meta.RowGroups[g.index], at-g.start
		}
		m := *rg
		m.Columns = slices.Clone(rg.Columns)
		for j, c := range rg.Columns {
			cc, cm := *c, *c.MetaData
			cm.DataPageOffset += delta
			cm.DictionaryPageOffset = shifted(cm.DictionaryPageOffset, delta)
			cm.IndexPageOffset = shifted(cm.IndexPageOffset, delta)
			cm.BloomFilterOffset, cm.BloomFilterLength = nil, nil
			cc.MetaData = &cm
			if cc.FileOffset > 0 {
				cc.FileOffset += delta
			}
			cc.OffsetIndexOffset, cc.OffsetIndexLength, cc.ColumnIndexOffset, cc.ColumnIndexLength = nil, nil, nil, nil
			m.Columns[j] = &cc
		}
		m.FileOffset = shifted(m.FileOffset, delta)
		ordinal := int16(i)
		m.Ordinal = &ordinal
		if i >= len(groups) {
			moved = append(moved, &m)
			continue
		}
		buf := thrift.NewTMemoryBufferLen(groups[i].moved.Load().entryLen() + 1024)
		proto := thrift.NewTCompactProtocolConf(buf, nil)
		if err := m.Write(context.Background(), proto); err != nil {
			return nil, 0, nil, err
		}
		entry := buf.Bytes()
		groups[i].moved.Store(&movedGroup{pos: pos - int64(len(groups[i].chunks)), ordinal: i, entry: entry})
		entries = append(entries, entry)
	}
	parts = append(parts, dst[4:end])
	pos += int64(end - 4)
	md.RowGroups, md.NumRows = moved, rows
	buf := thrift.NewTMemoryBufferLen(max(footerHint+footerHint/8, footer) + 8)
	proto := &rowGroupSplicer{TCompactProtocol: thrift.NewTCompactProtocolConf(buf, nil), out: buf, entries: entries}
	err = md.FileMetaData.Write(context.Background(), proto)
	if err == nil && proto.entries != nil {
		err = errors.New("append row groups: the footer has no row_groups list")
	}
	if err == nil {
		err = proto.Flush(context.Background())
	}
	md.RowGroups, md.NumRows = own, ownRows // the caller reads dst's own groups
	if err != nil {
		return nil, 0, nil, err
	}
	n := buf.Len()
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
	buf.WriteString("PAR1")
	tail := buf.Bytes()
	parts = append(parts, tail)
	checkpointCounts.copied.Add(int64(len(groups)))
	checkpointCounts.footer.Add(int64(n))
	return parts, pos + int64(len(tail)), md, nil
}

// rowGroupSplicer writes a Parquet footer (the FileMetaData struct in Thrift's compact
// protocol) whose row_groups list (FileMetaData's field 4) begins with entries, RowGroup
// structs already serialized by the same protocol, and goes on with the row groups of the
// FileMetaData being written. The compact protocol encodes a struct's field ids as deltas
// from the previous field of the same struct, starting from 0, so a struct's bytes do not
// depend on where it stands: an entry spliced in is byte for byte what writing its
// RowGroup there would give (docs/decisions/0014-checkpoint-tombstones.md, follow-up "The
// carried groups' footer entries"; TestCarriedFooterSpliced). entries is nil once
// spliced.
type rowGroupSplicer struct {
	*thrift.TCompactProtocol
	out     *thrift.TMemoryBuffer
	entries [][]byte
	depth   int  // structs open; FileMetaData is 1
	next    bool // the field just begun is FileMetaData.row_groups
}

func (p *rowGroupSplicer) WriteStructBegin(ctx context.Context, name string) error {
	p.depth++
	return p.TCompactProtocol.WriteStructBegin(ctx, name)
}

func (p *rowGroupSplicer) WriteStructEnd(ctx context.Context) error {
	p.depth--
	return p.TCompactProtocol.WriteStructEnd(ctx)
}

func (p *rowGroupSplicer) WriteFieldBegin(ctx context.Context, name string, typeID thrift.TType, id int16) error {
	p.next = p.depth == 1 && id == 4 && typeID == thrift.LIST
	return p.TCompactProtocol.WriteFieldBegin(ctx, name, typeID, id)
}

func (p *rowGroupSplicer) WriteListBegin(ctx context.Context, elemType thrift.TType, size int) error {
	if !p.next || elemType != thrift.STRUCT {
		return p.TCompactProtocol.WriteListBegin(ctx, elemType, size)
	}
	p.next = false
	if err := p.TCompactProtocol.WriteListBegin(ctx, elemType, len(p.entries)+size); err != nil {
		return err
	}
	if err := p.TCompactProtocol.Flush(ctx); err != nil {
		return err
	}
	for _, e := range p.entries {
		if _, err := p.out.Write(e); err != nil {
			return err
		}
	}
	p.entries = nil
	return nil
}

func shifted(p *int64, delta int64) *int64 {
	if p == nil || *p <= 0 {
		return p
	}
	v := *p + delta
	return &v
}

// partsReader reads byte slices one after the other as one seekable stream, so that a
// store that needs a seekable body (S3's PutObject) sends the parts without gathering them.
type partsReader struct {
	parts [][]byte
	size  int64
	off   int64
}

func newPartsReader(parts [][]byte) *partsReader {
	r := &partsReader{parts: parts}
	for _, p := range parts {
		r.size += int64(len(p))
	}
	return r
}

func (r *partsReader) Read(b []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n, at := 0, int64(0)
	for _, p := range r.parts {
		if end := at + int64(len(p)); r.off < end && n < len(b) {
			c := copy(b[n:], p[r.off-at:])
			n += c
			r.off += int64(c)
		}
		at += int64(len(p))
	}
	return n, nil
}

func (r *partsReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	}
	if offset < 0 {
		return 0, errors.New("partsReader: seek before the start")
	}
	r.off = offset
	return offset, nil
}
