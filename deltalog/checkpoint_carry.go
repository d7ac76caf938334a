package deltalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// A checkpoint must hold every unexpired tombstone (docs/reference/delta-protocol.md §7.1),
// and after compaction that is a week of them: re-encoding them all into every checkpoint
// made a stream batch's cost grow with the table's age. Instead, a checkpoint written from
// a snapshot whose tombstones came from a checkpoint this package wrote copies that
// checkpoint's remove row groups byte for byte (their column chunks are position-free; only
// the footer's offsets move) and encodes only what is new: the other actions and the
// removes replayed from JSON since. The result is one ordinary V1 checkpoint file, read as
// any other (docs/decisions/0014-checkpoint-tombstones.md).

// maxCarriedGroups bounds the remove row groups a checkpoint copies: each carried
// checkpoint adds one when new removes arrived (a compaction), and past this many the
// tombstones are encoded afresh into full row groups (a footer of hundreds of row groups
// would cost every reader).
const maxCarriedGroups = 24

// carrySlack is how long past its expiry a copied tombstone may stay in checkpoints before
// the tombstones are encoded afresh without the expired ones. Carrying an expired tombstone
// is harmless (VACUUM and log replay check deletionTimestamp themselves); the slack bounds
// how many.
const carrySlack = 24 * time.Hour

// tombstoneBase is the tombstones of a checkpoint whose remove row groups a later
// checkpoint can copy.
type tombstoneBase struct {
	groups  []carriedGroup // they hold the removes, and nothing else
	removes []*Remove      // their rows
	keys    *keyChain      // the keys of removes
	oldest  int64          // the earliest deletionTimestamp (ms), 0 when one has none
}

// carriedGroup is one remove row group: its column chunks' bytes as written, and the
// footer that lists it (offsets in the frame of the file it was written to, in which its
// chunks began at start). A copy moves the offsets by where the chunks land minus start,
// so a group keeps pointing at the footer and bytes it was first written with, however
// many checkpoints copy it.
type carriedGroup struct {
	meta   *metadata.FileMetaData
	index  int
	chunks []byte
	start  int64
}

// keyChain is a set of file keys as a short chain of maps, newest first, so extending a
// base by a few keys shares the older maps instead of copying them.
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

func keysOf(rs []*Remove, next *keyChain) *keyChain {
	m := make(map[fileKey]struct{}, len(rs))
	for _, r := range rs {
		m[removeKey(r)] = struct{}{}
	}
	return &keyChain{m: m, next: next}
}

func oldestDeletion(rs []*Remove, oldest int64) int64 {
	for _, r := range rs {
		ts := int64(0)
		if r.DeletionTimestamp != nil {
			ts = *r.DeletionTimestamp
		}
		oldest = min(oldest, ts)
	}
	return oldest
}

// newTombstoneBase makes data, a checkpoint holding removes, a base when the row groups
// with removes hold nothing else (as encodeCheckpoint writes them); nil otherwise (Spark's
// checkpoints mix actions in a row group).
func newTombstoneBase(data []byte, removes []*Remove) *tombstoneBase {
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	defer pf.Close()
	md := pf.MetaData()
	sc := md.Schema
	leaves := make([]int, sc.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	b := &tombstoneBase{removes: removes, keys: keysOf(removes, nil), oldest: oldestDeletion(removes, 1<<62)}
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
			return nil
		case withRemoves:
			g, err := groupOf(md, rg, data)
			if err != nil {
				return nil
			}
			b.groups = append(b.groups, g)
		}
	}
	return b
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
	return carriedGroup{meta: md, index: rg, chunks: data[start:stop], start: start}, nil
}

// carries reports whether a checkpoint of snap may copy b's remove row groups: there are
// not too many, none of their tombstones expired more than carrySlack before cutoff, and
// none names a file that is live again or was removed again since (the copy would then
// hold a stale tombstone beside its add, or two removes of one file).
func (b *tombstoneBase) carries(snap *Snapshot, cutoff int64) bool {
	if len(b.groups) == 0 || len(b.groups) > maxCarriedGroups || b.oldest <= cutoff-carrySlack.Milliseconds() {
		return false
	}
	for k := range snap.files.All() {
		if b.keys.has(k) {
			return false
		}
	}
	for k := range snap.tombstones.All() {
		if b.keys.has(k) {
			return false
		}
	}
	return true
}

// carriedCheckpoint encodes others and the unexpired tombstones snap replayed from JSON,
// then appends b's remove row groups. It returns the checkpoint's parts (to be written one
// after the other: the copied row groups are never gathered into one buffer), its size and
// row count, and the base it makes for the next one.
func carriedCheckpoint(snap *Snapshot, others []Action, cutoff int64, b *tombstoneBase) ([][]byte, int64, int64, *tombstoneBase, error) {
	var fresh []*Remove
	for _, r := range snap.tombstones.All() {
		if !tombstoneExpired(*r, cutoff) {
			c := *r
			c.Stats, c.Tags = "", nil // never in checkpoints
			fresh = append(fresh, &c)
		}
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
	parts, size, md, err := appendRowGroups(head, b.groups)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	next := &tombstoneBase{removes: b.removes, keys: b.keys, oldest: b.oldest}
	// The fresh removes' row groups follow the others' in head.
	first := (len(others) + checkpointBatchRows - 1) / checkpointBatchRows
	for g := first; g < first+(len(fresh)+checkpointBatchRows-1)/checkpointBatchRows; g++ {
		cg, err := groupOf(md, g, head)
		if err != nil {
			return nil, 0, 0, nil, err
		}
		next.groups = append(next.groups, cg)
	}
	next.groups = append(next.groups, b.groups...)
	if len(fresh) > 0 {
		next.removes = append(slices.Clip(b.removes), fresh...)
		next.keys = keysOf(fresh, b.keys)
		next.oldest = oldestDeletion(fresh, b.oldest)
	}
	return parts, size, int64(len(others) + len(next.removes)), next, nil
}

// appendRowGroups appends row groups copied from other Parquet files with the same schema
// to the Parquet file dst: their column chunks are copied as they are (pages,
// dictionaries, statistics), and a new footer lists dst's row groups, then the copies with
// their offsets moved to where they now are. Page indexes and bloom filters of the copies
// are left out (this package writes neither). It returns the new file as parts to write in
// order, its size, and dst's footer (as read; its first row groups are dst's own).
func appendRowGroups(dst []byte, groups []carriedGroup) ([][]byte, int64, *metadata.FileMetaData, error) {
	pd, err := file.NewParquetReader(bytes.NewReader(dst))
	if err != nil {
		return nil, 0, nil, err
	}
	defer pd.Close()
	md := pd.MetaData()
	own := len(md.RowGroups)
	footer := int(binary.LittleEndian.Uint32(dst[len(dst)-8:]))
	end := len(dst) - 8 - footer
	if end < 4 {
		return nil, 0, nil, errors.New("append row groups: bad footer length")
	}
	parts := [][]byte{dst[:end]}
	pos := int64(end)
	for _, g := range groups {
		if !md.Schema.Equals(g.meta.Schema) {
			return nil, 0, nil, errors.New("append row groups: the schemas differ")
		}
		rg := g.meta.RowGroups[g.index]
		delta := pos - g.start
		parts = append(parts, g.chunks)
		pos += int64(len(g.chunks))
		moved := *rg
		moved.Columns = slices.Clone(rg.Columns)
		for i, c := range rg.Columns {
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
			moved.Columns[i] = &cc
		}
		moved.FileOffset = shifted(moved.FileOffset, delta)
		ordinal := int16(len(md.RowGroups))
		moved.Ordinal = &ordinal
		md.RowGroups = append(md.RowGroups, &moved)
		md.NumRows += moved.NumRows
	}
	var tail bytes.Buffer
	_, err = md.WriteTo(&tail, nil)
	md.RowGroups = md.RowGroups[:own:own] // the caller reads dst's own groups
	if err != nil {
		return nil, 0, nil, err
	}
	tail.Write(binary.LittleEndian.AppendUint32(nil, uint32(tail.Len())))
	tail.WriteString("PAR1")
	parts = append(parts, tail.Bytes())
	return parts, pos + int64(tail.Len()), md, nil
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
