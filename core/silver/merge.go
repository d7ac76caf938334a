package silver

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Counts are what applying a key range (or a whole apply) did to silver.
type Counts struct {
	// Inserted, Updated and Deleted count keys: a new row, a row replaced by a newer
	// image, a row removed.
	Inserted int64 `json:"inserted"`
	Updated  int64 `json:"updated"`
	Deleted  int64 `json:"deleted"`
	// FilesRemoved are the data files taken out of silver (rewritten, or replaced by a
	// rebuild); FilesAdded the data files written.
	FilesRemoved int `json:"files_removed"`
	FilesAdded   int `json:"files_added"`
	// BytesRewritten is the size of the files removed, BytesWritten of those added.
	BytesRewritten int64 `json:"bytes_rewritten"`
	BytesWritten   int64 `json:"bytes_written"`
	// DeletionVectors counts the files given a new deletion vector instead of a rewrite.
	DeletionVectors int `json:"deletion_vectors"`
}

func (c *Counts) add(o Counts) {
	c.Inserted += o.Inserted
	c.Updated += o.Updated
	c.Deleted += o.Deleted
	c.FilesRemoved += o.FilesRemoved
	c.FilesAdded += o.FilesAdded
	c.BytesRewritten += o.BytesRewritten
	c.BytesWritten += o.BytesWritten
	c.DeletionVectors += o.DeletionVectors
}

// pass is one key range applied to silver: the images of the range and what the commit
// will carry.
type pass struct {
	ssnap   *deltalog.Snapshot // silver as read (Version -1: no table yet)
	schema  *arrow.Schema      // silver's schema for this commit
	kc      keyColumnsInfo
	set     *imageSet
	lo, hi  []byte
	rebuild bool
	// waves are the chunk waves the pass applies (nil: none).
	waves *waveRun
	opts  *Options

	removes []deltalog.Remove
	adds    []deltalog.Add
	read    []deltalog.Add
	counts  Counts
}

// silverFile is one live silver file and what is known of its keys.
type silverFile struct {
	add deltalog.Add
	rng keyRange
	// rows are the file's live rows (numRecords less its deletion vector's cardinality).
	rows  int64
	small bool
	// delta: the file is in the delta layer (docs/silver.md § Deletion vectors).
	delta bool
	// deleted are the rows its deletion vector marks, read on first use (nil: not yet).
	deleted *deltalog.RowBitmap
}

func (p *pass) files() []silverFile {
	if p.ssnap.Version() < 0 {
		return nil
	}
	var out []silverFile
	for _, a := range p.ssnap.Files() {
		n, _ := a.LiveRecords()
		out = append(out, silverFile{add: a, rng: p.kc.rangeOf(&a), rows: n, small: a.Size < p.opts.targetFileSize()/4,
			delta: a.Tags[TagLayer] == layerDelta})
	}
	slices.SortStableFunc(out, func(a, b silverFile) int { return bytes.Compare(a.rng.min, b.rng.min) })
	return out
}

// keyedRows are rows of silver's schema with their keys' encodings, in the same order.
type keyedRows struct {
	rec  arrow.RecordBatch
	keys []string
}

// run applies the pass: an incremental merge, or a rebuild of the key range.
func (p *pass) run(ctx context.Context) error {
	switch {
	case p.rebuild:
		return p.runRebuild(ctx)
	case p.opts.CopyOnWrite:
		return p.runMerge(ctx)
	}
	return p.runMergeDV(ctx)
}

// action is what an image does to silver.
type action int

const (
	actSkip   action = iota // the row holds this image or a newer one, or the key is gone already
	actInsert               // no row: write one
	actUpdate               // an older row: replace it
	actDelete               // an older row, the key gone: remove it
)

// runMerge applies the images to silver (docs/silver.md § How a key range is applied): it
// looks each image's key up in the files whose key range may hold it (reading only the key
// columns and _start_lsn), decides per key (an image is applied only when newer than the
// row's _start_lsn), then rewrites each touched file with its surviving rows and the new
// rows whose key falls in its range, in key order.
func (p *pass) runMerge(ctx context.Context) error {
	if err := p.chunkDeletes(ctx); err != nil {
		return err
	}
	imgs := p.set.sorted()
	if len(imgs) == 0 {
		return nil
	}
	files := p.files()
	// Look the keys up.
	acts, hits, err := p.decide(ctx, imgs, files)
	if err != nil {
		return err
	}
	// Each new row goes to the file whose key range it falls in (its home), so files stay
	// sorted and disjoint; keys past the ends go to the nearest file.
	homes := homeFiles(files)
	ups := map[int][]int{} // home file index (-1: none) -> image indexes, in key order
	for i, a := range acts {
		switch a {
		case actInsert:
			p.counts.Inserted++
		case actUpdate:
			p.counts.Updated++
		case actDelete:
			p.counts.Deleted++
			continue
		default:
			continue
		}
		h := homeOf(p.kc, files, homes, []byte(imgs[i].key))
		ups[h] = append(ups[h], i)
	}
	touched := map[int]bool{}
	for fi := range hits {
		touched[fi] = true
	}
	for h := range ups {
		if h >= 0 {
			touched[h] = true
		}
	}
	order := slices.Sorted(mapsKeys(touched))
	for _, fi := range order {
		f := &files[fi]
		parts, err := p.survivors(ctx, f, hits[fi], nil, nil)
		if err != nil {
			return err
		}
		if u := ups[fi]; len(u) > 0 {
			kr, err := p.imageRows(ctx, imgs, u)
			if err != nil {
				releaseParts(parts)
				return err
			}
			parts = append(parts, kr)
		}
		p.remove(f)
		err = p.write(ctx, parts, false)
		releaseParts(parts)
		if err != nil {
			return err
		}
	}
	if u := ups[-1]; len(u) > 0 {
		kr, err := p.imageRows(ctx, imgs, u)
		if err != nil {
			return err
		}
		err = p.write(ctx, []keyedRows{kr}, false)
		kr.rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func mapsKeys(m map[int]bool) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// imagesIn is the index range [a, b) of the sorted images a file's key range may hold.
func (p *pass) imagesIn(imgs []keyedImage, r keyRange) (int, int) {
	if !r.known {
		return 0, len(imgs)
	}
	a := sort.Search(len(imgs), func(i int) bool { return r.cmpKey(p.kc, []byte(imgs[i].key), r.min) >= 0 })
	b := sort.Search(len(imgs), func(i int) bool { return r.cmpKey(p.kc, []byte(imgs[i].key), r.max) > 0 })
	return a, b
}

// homeFiles are the indexes of the files new rows may go to, by their first key: the
// known ranges (exact or by statistics), the small ones only when there is no other.
func homeFiles(files []silverFile) []int {
	var big, all []int
	for i, f := range files {
		if !f.rng.known {
			continue
		}
		all = append(all, i)
		if !f.small {
			big = append(big, i)
		}
	}
	if len(big) > 0 {
		return big
	}
	return all
}

// homeOf is the home of key k: the last home file whose first key is at or below k, or
// the first home when k is below them all; -1 when there is no home file.
func homeOf(kc keyColumnsInfo, files []silverFile, homes []int, k []byte) int {
	if len(homes) == 0 {
		return -1
	}
	j := sort.Search(len(homes), func(i int) bool {
		r := files[homes[i]].rng
		return r.cmpKey(kc, k, r.min) < 0
	})
	if j == 0 {
		return homes[0]
	}
	return homes[j-1]
}

// physicalRows maps a file's live rows, in the order a scan returns them, to their
// physical positions in the Parquet file: the rows its deletion vector marks are skipped.
type physicalRows struct {
	deleted *deltalog.RowBitmap
	at      uint64
}

// next is the physical position of the next live row.
func (r *physicalRows) next() int64 {
	for r.deleted != nil && r.deleted.Contains(r.at) {
		r.at++
	}
	r.at++
	return int64(r.at - 1)
}

// physical starts the mapping of a file's live rows to physical positions, reading its
// deletion vector once.
func (p *pass) physical(ctx context.Context, file *silverFile) (*physicalRows, error) {
	if file.add.DeletionVector == nil {
		return &physicalRows{}, nil
	}
	if file.deleted == nil {
		d, err := p.ssnap.DeletedRows(ctx, &file.add)
		if err != nil {
			return nil, fmt.Errorf("read silver %s: %w", file.add.Path, err)
		}
		file.deleted = d
	}
	return &physicalRows{deleted: file.deleted}, nil
}

// lookup reads a file's key columns and _start_lsn and calls f for each live row with its
// key encoding, physical position and _start_lsn.
func (p *pass) lookup(ctx context.Context, file *silverFile, f func(key string, pos int64, lsn string)) error {
	cols := append(slices.Clone(p.kc.names), ColStartLSN)
	phys, err := p.physical(ctx, file)
	if err != nil {
		return err
	}
	it, err := p.ssnap.Scan(ctx, deltalog.ScanOptions{Files: []deltalog.Add{file.add}, Columns: cols})
	if err != nil {
		return fmt.Errorf("read silver: %w", err)
	}
	defer it.Close()
	var kb []byte
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read silver %s: %w", file.add.Path, err)
		}
		keys := keyColumns(rec, p.kc.names)
		lsnA, _ := rec.Column(len(p.kc.names)).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			kb = encodeKey(kb[:0], keys, i)
			lsn := ""
			if lsnA != nil && lsnA.IsValid(i) {
				lsn = lsnA.Value(i)
			}
			f(string(kb), phys.next(), lsn)
		}
		rec.Release()
	}
}

// survivors reads a whole file and returns its rows (conformed to silver's schema) except
// those at the positions in drop, and, when lo or hi is set, except those with a key in
// [lo, hi) — the rows that stay when the file is rewritten.
func (p *pass) survivors(ctx context.Context, file *silverFile, drop []int64, lo, hi []byte) ([]keyedRows, error) {
	dropSet := make(map[int64]bool, len(drop))
	for _, d := range drop {
		dropSet[d] = true
	}
	ranged := lo != nil || hi != nil
	sel := selection{lo: lo, hi: hi}
	phys, err := p.physical(ctx, file)
	if err != nil {
		return nil, err
	}
	it, err := p.ssnap.Scan(ctx, deltalog.ScanOptions{Files: []deltalog.Add{file.add}})
	if err != nil {
		return nil, fmt.Errorf("read silver: %w", err)
	}
	defer it.Close()
	var out []keyedRows
	var kb []byte
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			releaseParts(out)
			return nil, fmt.Errorf("read silver %s: %w", file.add.Path, err)
		}
		keys := keyColumns(rec, p.kc.names)
		var keep []int32
		var ks []string
		for i := 0; i < int(rec.NumRows()); i++ {
			if dropSet[phys.next()] {
				continue
			}
			kb = encodeKey(kb[:0], keys, i)
			if ranged && sel.inRange(kb) {
				continue
			}
			keep = append(keep, int32(i))
			ks = append(ks, string(kb))
		}
		if len(keep) > 0 {
			sub, err := takeRows(ctx, rec, keep)
			if err != nil {
				rec.Release()
				releaseParts(out)
				return nil, err
			}
			out = append(out, keyedRows{rec: conform(sub, p.schema), keys: ks})
			sub.Release()
		}
		rec.Release()
	}
}

// imageRows are the values of the images at idx (indexes into imgs, in key order).
func (p *pass) imageRows(ctx context.Context, imgs []keyedImage, idx []int) (keyedRows, error) {
	byBatch := map[int32][]int32{}
	for _, i := range idx {
		im := imgs[i].img
		byBatch[im.batch] = append(byBatch[im.batch], im.row)
	}
	// Gather per batch, then put the rows in key order.
	var parts []arrow.RecordBatch
	where := map[[2]int32]int{} // (batch, row) -> row in the concatenation
	n := 0
	for _, b := range slices.Sorted(mapsKeys32(byBatch)) {
		rows := byBatch[b]
		sub, err := takeRows(ctx, p.set.batches[b], rows)
		if err != nil {
			for _, r := range parts {
				r.Release()
			}
			return keyedRows{}, err
		}
		for j, r := range rows {
			where[[2]int32{b, r}] = n + j
		}
		n += len(rows)
		parts = append(parts, sub)
	}
	all, err := concat(p.schema, parts)
	for _, r := range parts {
		r.Release()
	}
	if err != nil {
		return keyedRows{}, err
	}
	perm := make([]int32, len(idx))
	keys := make([]string, len(idx))
	for j, i := range idx {
		im := imgs[i].img
		perm[j] = int32(where[[2]int32{im.batch, im.row}])
		keys[j] = imgs[i].key
	}
	rec, err := takeRows(ctx, all, perm)
	all.Release()
	if err != nil {
		return keyedRows{}, err
	}
	return keyedRows{rec: rec, keys: keys}, nil
}

func mapsKeys32(m map[int32][]int32) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// concat joins records of one schema.
func concat(schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, len(schema.Fields()))
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		if len(parts) == 0 {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, schema.Field(i).Type, 0)
			continue
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, fmt.Errorf("concatenate rows: %w", err)
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

func releaseParts(parts []keyedRows) {
	for _, p := range parts {
		p.rec.Release()
	}
}

// remove takes a file out of silver in this commit.
func (p *pass) remove(f *silverFile) {
	p.removes = append(p.removes, f.add.RemoveAction(p.opts.now().UnixMilli(), true))
	p.counts.FilesRemoved++
	p.counts.BytesRewritten += f.add.Size
}

// write writes the rows of parts in key order into new data files of at most the target
// size, tagged with their first and last keys, and with the delta layer when delta is set.
func (p *pass) write(ctx context.Context, parts []keyedRows, delta bool) error {
	var recs []arrow.RecordBatch
	var keys []string
	for _, kr := range parts {
		if kr.rec.NumRows() == 0 {
			continue
		}
		recs = append(recs, kr.rec)
		keys = append(keys, kr.keys...)
	}
	if len(recs) == 0 {
		return nil
	}
	all, err := concat(p.schema, recs)
	if err != nil {
		return err
	}
	defer all.Release()
	perm := make([]int32, len(keys))
	for i := range perm {
		perm[i] = int32(i)
	}
	sort.SliceStable(perm, func(a, b int) bool { return keys[perm[a]] < keys[perm[b]] })
	sorted, err := takeRows(ctx, all, perm)
	if err != nil {
		return err
	}
	defer sorted.Release()
	w := ingest.NewWriter(p.ssnap.Table().Store(), p.schema, parquetio.WriterOptions{TargetFileSize: p.opts.targetFileSize(), TempDir: p.opts.TempDir})
	if err := w.Write(ctx, sorted); err != nil {
		w.Abort(ctx)
		return err
	}
	files, err := w.Close(ctx)
	if err != nil {
		return err
	}
	var at int64
	for _, a := range files.Adds {
		n, _ := a.NumRecords()
		if n > 0 {
			a.Tags = map[string]string{
				TagKeyMin: hex.EncodeToString([]byte(keys[perm[at]])),
				TagKeyMax: hex.EncodeToString([]byte(keys[perm[at+n-1]])),
			}
			if delta {
				a.Tags[TagLayer] = layerDelta
			}
		}
		at += n
		p.adds = append(p.adds, a)
		p.counts.FilesAdded++
		p.counts.BytesWritten += a.Size
	}
	return nil
}

// runRebuild replaces the key range [lo, hi) of silver with the images: files wholly
// inside the range are removed unread, files straddling it are rewritten with their rows
// outside it, and every image that is not a deletion is written.
func (p *pass) runRebuild(ctx context.Context) error {
	// A straddling delta file's rows outside the range stay in the delta layer, where
	// they do not overlap another delta file; base rows go back to the base layer.
	var parts, deltaParts []keyedRows
	defer func() { releaseParts(parts); releaseParts(deltaParts) }()
	for _, f := range p.files() {
		if !f.rng.overlaps(p.kc, p.lo, p.hi) {
			continue
		}
		if !f.rng.inside(p.lo, p.hi) {
			kept, err := p.survivors(ctx, &f, nil, p.lo, p.hi)
			if err != nil {
				return err
			}
			if f.delta {
				deltaParts = append(deltaParts, kept...)
			} else {
				parts = append(parts, kept...)
			}
			p.read = append(p.read, f.add)
		}
		p.remove(&f)
		p.counts.Deleted += f.rows
	}
	imgs := p.set.sorted()
	var live []int
	for i := range imgs {
		if !bronze.Gone(imgs[i].img.order.Op) {
			live = append(live, i)
		}
	}
	p.counts.Inserted += int64(len(live))
	if len(live) > 0 {
		kr, err := p.imageRows(ctx, imgs, live)
		if err != nil {
			return err
		}
		parts = append(parts, kr)
	}
	if err := p.write(ctx, deltaParts, true); err != nil {
		return err
	}
	return p.write(ctx, parts, false)
}

// keyHex is a key's hex encoding, as bounds and tags store it.
func keyHex(k []byte) string { return strings.ToLower(hex.EncodeToString(k)) }
