package silver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// selection says which bronze rows are images for silver (docs/silver.md § What is
// applied; docs/bronze.md § The current table).
type selection struct {
	// since: change rows (operations 1–4) count from this LSN on ("" all of them); rows
	// older than the snapshot silver stands on do not count.
	since string
	// snapshot, when set, is the snapshot a rebuild starts from: its operation-0 rows
	// (coalesce(_snapshot, _start_lsn) equal to it, whole or chunked) count.
	snapshot *string
	// open is the open chunked snapshot whose chunk rows (_snapshot = open, _chunk set)
	// count, "" none.
	open string
	// lo and hi bound the keys, [lo, hi); nil is open.
	lo, hi []byte
	// held, when set, picks only changes to these keys (those a chunk row is the image
	// of): the changes a chunk row is ranked with from bronze versions silver applied
	// before (docs/silver.md § Chunk waves).
	held map[string]bool
}

func (s *selection) inRange(k []byte) bool {
	return (s.lo == nil || bytes.Compare(k, s.lo) >= 0) && (s.hi == nil || bytes.Compare(k, s.hi) < 0)
}

// image is the latest bronze row of one key: its place in the change order and where its
// values are (row of batch in imageSet.batches).
type image struct {
	order bronze.Order
	batch int32
	row   int32
}

// imageSet is the latest image per key of the rows a selection picks.
type imageSet struct {
	schema  *arrow.Schema // silver's
	byKey   map[string]image
	batches []arrow.RecordBatch // silver-shaped rows holding the images' values
	// rows counts the rows picked (before ranking); maxLSN is the newest LSN among them
	// but chunk rows: a chunk's stamp L says how fresh its own keys are, not the others,
	// whose changes up to L the stream may not have delivered yet (docs/silver.md §
	// Position, applied_lsn).
	rows   int64
	maxLSN string
}

func (s *imageSet) release() {
	for _, b := range s.batches {
		b.Release()
	}
	s.batches = nil
}

// bronzeColumns are the metadata columns an image read needs besides silver's columns.
var bronzeColumns = []string{bronze.ColSeqval, bronze.ColOperation, bronze.ColCommandID, bronze.ColSnapshot, bronze.ColChunk}

// collectImages reads files (bronze add actions) at bsnap and keeps, per key, the latest
// row the selection picks (docs/bronze.md § The current table: the order
// (_start_lsn, _command_id, _seqval, _operation), NULL first). Files whose statistics
// show no key of the range are skipped. Only rows that were a key's latest when read are
// kept in memory.
func collectImages(ctx context.Context, bsnap *deltalog.Snapshot, files []deltalog.Add, kc keyColumnsInfo, sel selection, schema *arrow.Schema) (*imageSet, error) {
	set := &imageSet{schema: schema, byKey: map[string]image{}}
	if err := set.collect(ctx, bsnap, files, kc, sel); err != nil {
		set.release()
		return nil, err
	}
	return set, nil
}

// collect folds the rows of files the selection picks into the set.
func (set *imageSet) collect(ctx context.Context, bsnap *deltalog.Snapshot, files []deltalog.Add, kc keyColumnsInfo, sel selection) error {
	var read []deltalog.Add
	for i := range files {
		if kc.fileMayHold(&files[i], sel.lo, sel.hi) {
			read = append(read, files[i])
		}
	}
	if len(read) == 0 {
		return nil
	}
	bsc, err := bsnap.ArrowSchema()
	if err != nil {
		return err
	}
	var cols []string
	for _, f := range set.schema.Fields() {
		if fieldIndexFold(bsc, f.Name) >= 0 {
			cols = append(cols, f.Name)
		}
	}
	for _, c := range bronzeColumns {
		if fieldIndexFold(bsc, c) >= 0 && !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	it, err := bsnap.Scan(ctx, deltalog.ScanOptions{Files: read, Columns: cols})
	if err != nil {
		return fmt.Errorf("read bronze: %w", err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read bronze: %w", err)
		}
		err = set.fold(ctx, rec, kc, sel)
		rec.Release()
		if err != nil {
			return err
		}
	}
}

// fold ranks one bronze record's rows into the set.
func (s *imageSet) fold(ctx context.Context, rec arrow.RecordBatch, kc keyColumnsInfo, sel selection) error {
	col := func(name string) arrow.Array {
		if i := fieldIndexFold(rec.Schema(), name); i >= 0 {
			return rec.Column(i)
		}
		return nil
	}
	lsnA, _ := col(bronze.ColStartLSN).(*array.String)
	seqA, _ := col(bronze.ColSeqval).(*array.String)
	opA, _ := col(bronze.ColOperation).(*array.Int32)
	cmdA, _ := col(bronze.ColCommandID).(*array.Int32)
	snapA, _ := col(bronze.ColSnapshot).(*array.String)
	chunkA := col(bronze.ColChunk)
	if lsnA == nil || opA == nil {
		return fmt.Errorf("bronze file lacks _start_lsn or _operation")
	}
	keys := keyColumns(rec, kc.names)
	var winners []int32
	var kb []byte
	batch := int32(len(s.batches))
	for i := 0; i < int(rec.NumRows()); i++ {
		if lsnA.IsNull(i) || opA.IsNull(i) {
			continue
		}
		op, lsn := opA.Value(i), lsnA.Value(i)
		chunked := false
		if op == bronze.OpSnapshot {
			if sel.held != nil {
				continue
			}
			snap := lsn
			if snapA != nil && snapA.IsValid(i) {
				snap = snapA.Value(i)
			}
			chunked = chunkA != nil && chunkA.IsValid(i)
			ok := sel.snapshot != nil && snap == *sel.snapshot
			if chunked && sel.open != "" && snap == sel.open {
				ok = true
			}
			if !ok {
				continue
			}
		} else if lsn < sel.since {
			continue
		}
		kb = encodeKey(kb[:0], keys, i)
		if !sel.inRange(kb) {
			continue
		}
		if sel.held != nil && !sel.held[string(kb)] {
			continue
		}
		s.rows++
		o := bronze.Order{LSN: lsn, CommandID: -1, Op: op}
		if cmdA != nil && cmdA.IsValid(i) {
			o.CommandID = int64(cmdA.Value(i))
		}
		if seqA != nil && seqA.IsValid(i) {
			o.Seqval = seqA.Value(i)
		}
		if !chunked {
			s.maxLSN = max(s.maxLSN, lsn)
		}
		if cur, ok := s.byKey[string(kb)]; ok && !cur.order.Less(o) {
			continue
		}
		s.byKey[string(kb)] = image{order: o, batch: batch, row: int32(len(winners))}
		winners = append(winners, int32(i))
	}
	if len(winners) == 0 {
		return nil
	}
	sub, err := takeRows(ctx, rec, winners)
	if err != nil {
		return err
	}
	s.batches = append(s.batches, conform(sub, s.schema))
	sub.Release()
	return nil
}

// takeRows is the record of rec's rows at idx, in that order (rec itself, retained, when
// idx is every row in order). The caller releases it.
func takeRows(ctx context.Context, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	if len(idx) == int(rec.NumRows()) {
		all := true
		for i, v := range idx {
			if int(v) != i {
				all = false
				break
			}
		}
		if all {
			rec.Retain()
			return rec, nil
		}
	}
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.AppendValues(idx, nil)
	ia := b.NewInt32Array()
	b.Release()
	defer ia.Release()
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		c, err := compute.TakeArray(ctx, rec.Column(i), ia)
		if err != nil {
			return nil, fmt.Errorf("take rows: %w", err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(idx))), nil
}

// chunkKeys are the keys whose image is a chunk row (operation 0).
func (s *imageSet) chunkKeys() map[string]bool {
	out := map[string]bool{}
	for k, im := range s.byKey {
		if im.order.Op == bronze.OpSnapshot {
			out[k] = true
		}
	}
	return out
}

// keyedImage is one key's image, for a pass that walks keys in order.
type keyedImage struct {
	key string
	img image
}

// sorted returns the images in key order.
func (s *imageSet) sorted() []keyedImage {
	out := make([]keyedImage, 0, len(s.byKey))
	for k, im := range s.byKey {
		out = append(out, keyedImage{key: k, img: im})
	}
	slices.SortFunc(out, func(a, b keyedImage) int { return strings.Compare(a.key, b.key) })
	return out
}
