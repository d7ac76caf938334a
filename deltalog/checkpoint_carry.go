package deltalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
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

// tombstoneBase is a checkpoint file whose remove row groups a later checkpoint can copy.
type tombstoneBase struct {
	data    []byte
	groups  []int     // the row groups that hold only removes, ascending; they hold them all
	removes []*Remove // their rows
	keys    *keyChain // the keys of removes
	oldest  int64     // the earliest deletionTimestamp (ms), 0 when one has none
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
	sc := pf.MetaData().Schema
	leaves := make([]int, sc.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	var groups []int
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
			groups = append(groups, rg)
		}
	}
	return &tombstoneBase{data: data, groups: groups, removes: removes,
		keys: keysOf(removes, nil), oldest: oldestDeletion(removes, 1<<62)}
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
// then appends b's remove row groups. It returns the checkpoint, its row count and the
// base it makes for the next one.
func carriedCheckpoint(snap *Snapshot, others []Action, cutoff int64, b *tombstoneBase) ([]byte, int64, *tombstoneBase, error) {
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
		return nil, 0, nil, err
	}
	data, err := appendRowGroups(head, b.data, b.groups)
	if err != nil {
		return nil, 0, nil, err
	}
	// The new file's remove groups: the fresh ones after the others', then the copies.
	first := (len(others) + checkpointBatchRows - 1) / checkpointBatchRows
	n := first + (len(fresh)+checkpointBatchRows-1)/checkpointBatchRows + len(b.groups)
	next := &tombstoneBase{data: data, removes: b.removes, keys: b.keys, oldest: b.oldest}
	for g := first; g < n; g++ {
		next.groups = append(next.groups, g)
	}
	if len(fresh) > 0 {
		next.removes = append(slices.Clip(b.removes), fresh...)
		next.keys = keysOf(fresh, b.keys)
		next.oldest = oldestDeletion(fresh, b.oldest)
	}
	return data, int64(len(others) + len(next.removes)), next, nil
}

// appendRowGroups appends row groups of the Parquet file src to the Parquet file dst, which
// has the same schema: their column chunks are copied as they are (pages, dictionaries,
// statistics), and a new footer lists dst's row groups, then the copies with their offsets
// moved to where they now are. Page indexes and bloom filters of the copies are left out
// (this package writes neither).
func appendRowGroups(dst, src []byte, groups []int) ([]byte, error) {
	pd, err := file.NewParquetReader(bytes.NewReader(dst))
	if err != nil {
		return nil, err
	}
	defer pd.Close()
	ps, err := file.NewParquetReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	defer ps.Close()
	md, ms := pd.MetaData(), ps.MetaData()
	if !md.Schema.Equals(ms.Schema) {
		return nil, errors.New("append row groups: the schemas differ")
	}
	if len(dst) < 12 {
		return nil, errors.New("append row groups: not a Parquet file")
	}
	footer := int(binary.LittleEndian.Uint32(dst[len(dst)-8:]))
	end := len(dst) - 8 - footer
	if end < 4 {
		return nil, errors.New("append row groups: bad footer length")
	}
	var out bytes.Buffer
	out.Grow(end + len(src))
	out.Write(dst[:end])
	for _, g := range groups {
		if g < 0 || g >= len(ms.RowGroups) {
			return nil, fmt.Errorf("append row groups: no row group %d", g)
		}
		rg := ms.RowGroups[g]
		start, stop := int64(-1), int64(0)
		var total int64
		for _, c := range rg.Columns {
			if c.MetaData == nil || c.FilePath != nil || c.CryptoMetadata != nil {
				return nil, errors.New("append row groups: a column chunk without metadata, elsewhere or encrypted")
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
		if start < 4 || stop > int64(len(src)) || stop-start != total {
			return nil, fmt.Errorf("append row groups: row group %d is not one contiguous run of column chunks", g)
		}
		delta := int64(out.Len()) - start
		out.Write(src[start:stop])
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
	if _, err := md.WriteTo(&tail, nil); err != nil {
		return nil, err
	}
	out.Write(tail.Bytes())
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(tail.Len())))
	out.WriteString("PAR1")
	return out.Bytes(), nil
}

func shifted(p *int64, delta int64) *int64 {
	if p == nil || *p <= 0 {
		return p
	}
	v := *p + delta
	return &v
}
