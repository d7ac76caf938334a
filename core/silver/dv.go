package silver

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// runMergeDV applies the images with deletion vectors (docs/silver.md § Deletion vectors).
// Silver's files form two layers, each sorted by key with disjoint files: the base and a
// delta layer. A replaced or deleted row is marked in its file's deletion vector (a base
// file past Options.MaxDeletedFraction is rewritten instead); new rows (inserts and the new
// images of updates) are merged into the delta layer, rewriting the delta files over their
// key span. Once the delta layer over a span holds more than 1/foldDivisor of the base rows
// there, both are folded into new base files.
func (p *pass) runMergeDV(ctx context.Context) error {
	if err := p.chunkDeletes(ctx); err != nil {
		return err
	}
	imgs := p.set.sorted()
	if len(imgs) == 0 {
		return nil
	}
	files := p.files()
	acts, hits, err := p.decide(ctx, imgs, files)
	if err != nil {
		return err
	}
	var fresh []int // images written as rows, in key order
	for i, a := range acts {
		switch a {
		case actInsert:
			p.counts.Inserted++
			fresh = append(fresh, i)
		case actUpdate:
			p.counts.Updated++
			fresh = append(fresh, i)
		case actDelete:
			p.counts.Deleted++
		}
	}

	// The delta files the new rows' span reaches, and those with replaced rows; then every
	// delta file inside the span that makes, so the delta layer stays disjoint.
	inD := map[int]bool{}
	var lo, hi []byte
	widen := func(a, b []byte) {
		if lo == nil || bytes.Compare(a, lo) < 0 {
			lo = a
		}
		if hi == nil || bytes.Compare(b, hi) > 0 {
			hi = b
		}
	}
	if len(fresh) > 0 {
		widen([]byte(imgs[fresh[0]].key), []byte(imgs[fresh[len(fresh)-1]].key))
	}
	for fi := range hits {
		if files[fi].delta {
			inD[fi] = true
			if files[fi].rng.exact {
				widen(files[fi].rng.min, files[fi].rng.max)
			}
		}
	}
	if lo == nil {
		// Only deletions of base rows: no delta file to rewrite.
		return p.markDeleted(ctx, files, hits)
	}
	for changed := true; changed; {
		changed = false
		for fi := range files {
			f := &files[fi]
			if !f.delta || inD[fi] || !spanOverlaps(p.kc, f.rng, lo, hi) {
				continue
			}
			inD[fi] = true
			changed = true
			if f.rng.exact {
				widen(f.rng.min, f.rng.max)
			} else {
				// A delta file without exact bounds (not ours): fold everything it may hold.
				lo, hi = []byte{0x00}, bytes.Repeat([]byte{0xFF}, 64)
			}
		}
	}

	// Fold when the delta layer over [lo, hi] outgrows its share of the base there.
	var deltaRows, baseRows int64
	var base []int
	for fi := range files {
		f := &files[fi]
		switch {
		case inD[fi]:
			deltaRows += f.rows - int64(len(hits[fi]))
		case !f.delta && spanOverlaps(p.kc, f.rng, lo, hi):
			base = append(base, fi)
			baseRows += f.rows
		}
	}
	deltaRows += int64(len(fresh))
	fold := deltaRows*foldDivisor > baseRows

	var parts []keyedRows
	defer func() { releaseParts(parts) }()
	rewrite := func(fi int) error {
		kept, err := p.survivors(ctx, &files[fi], hits[fi], nil, nil)
		if err != nil {
			return err
		}
		parts = append(parts, kept...)
		p.remove(&files[fi])
		return nil
	}
	for _, fi := range slices.Sorted(mapsKeys(inD)) {
		if err := rewrite(fi); err != nil {
			return err
		}
		p.read = append(p.read, files[fi].add)
	}
	rest := hits
	if fold {
		rest = map[int][]int64{}
		for fi, h := range hits {
			rest[fi] = h
		}
		for _, fi := range base {
			if err := rewrite(fi); err != nil {
				return err
			}
			delete(rest, fi)
		}
	}
	for fi := range inD {
		delete(rest, fi)
	}
	if len(fresh) > 0 {
		kr, err := p.imageRows(ctx, imgs, fresh)
		if err != nil {
			return err
		}
		parts = append(parts, kr)
	}
	if err := p.write(ctx, parts, !fold); err != nil {
		return err
	}
	return p.markDeleted(ctx, files, rest)
}

// decide looks the images' keys up in the files that may hold them and says what each
// image does; hits are, per file index, the physical positions of the rows replaced or
// deleted.
func (p *pass) decide(ctx context.Context, imgs []keyedImage, files []silverFile) ([]action, map[int][]int64, error) {
	acts := make([]action, len(imgs))
	for i := range imgs {
		acts[i] = actInsert
		if bronze.Gone(imgs[i].img.order.Op) {
			acts[i] = actSkip
		}
	}
	idx := make(map[string]int, len(imgs))
	for i, im := range imgs {
		idx[im.key] = i
	}
	hits := map[int][]int64{}
	for fi := range files {
		f := &files[fi]
		if a, b := p.imagesIn(imgs, f.rng); a >= b {
			continue
		}
		p.read = append(p.read, f.add)
		err := p.lookup(ctx, f, func(k string, pos int64, rowLSN string) {
			i, ok := idx[k]
			if !ok {
				return
			}
			im := imgs[i].img
			if im.order.LSN <= rowLSN {
				acts[i] = actSkip // the row holds this image or a newer one
				return
			}
			hits[fi] = append(hits[fi], pos)
			if bronze.Gone(im.order.Op) {
				acts[i] = actDelete
			} else {
				acts[i] = actUpdate
			}
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return acts, hits, nil
}

// spanOverlaps reports whether a file may hold a key in [lo, hi] (both included).
func spanOverlaps(kc keyColumnsInfo, r keyRange, lo, hi []byte) bool {
	if !r.known {
		return true
	}
	return r.cmpKey(kc, lo, r.max) <= 0 && r.cmpKey(kc, hi, r.min) >= 0
}

// markDeleted gives each file in hits a deletion vector marking those rows and the rows
// its old one marked, or rewrites it when the deleted share would pass the threshold. The
// bitmaps of one commit go to one DV file, or inline when small enough.
func (p *pass) markDeleted(ctx context.Context, files []silverFile, hits map[int][]int64) error {
	type marked struct {
		fi   int
		rows *deltalog.RowBitmap
	}
	var dvs []marked
	var parts []keyedRows
	defer func() { releaseParts(parts) }()
	for _, fi := range slices.Sorted(mapsKeys64(hits)) {
		f := &files[fi]
		if len(hits[fi]) == 0 {
			continue
		}
		n, ok := f.add.NumRecords()
		rows := deltalog.NewRowBitmap()
		if f.add.DeletionVector != nil {
			if _, err := p.physical(ctx, f); err != nil {
				return err
			}
			for _, r := range f.deleted.Rows() {
				rows.Add(r)
			}
		}
		for _, h := range hits[fi] {
			rows.Add(uint64(h))
		}
		if !ok || float64(rows.Cardinality()) > p.opts.maxDeletedFraction()*float64(n) {
			// Rewrite: the file's survivors, in key order, in the same layer; they stay
			// inside its key range, so the layer stays disjoint.
			kept, err := p.survivors(ctx, f, hits[fi], nil, nil)
			if err != nil {
				return err
			}
			p.remove(f)
			if err := p.write(ctx, kept, f.delta); err != nil {
				releaseParts(kept)
				return err
			}
			releaseParts(kept)
			continue
		}
		dvs = append(dvs, marked{fi: fi, rows: rows})
	}
	var inline []*deltalog.DeletionVector
	var onDisk []*deltalog.RowBitmap
	for _, m := range dvs {
		if raw := deltalog.EncodeRoaringBitmapArray(m.rows); len(raw) <= p.opts.InlineDVBytes {
			inline = append(inline, deltalog.InlineDeletionVector(m.rows))
		} else {
			inline = append(inline, nil)
			onDisk = append(onDisk, m.rows)
		}
	}
	written, err := deltalog.WriteDeletionVectorFile(ctx, p.ssnap.Table().Store(), "", onDisk)
	if err != nil {
		return fmt.Errorf("write silver deletion vectors: %w", err)
	}
	for i, m := range dvs {
		dv := inline[i]
		if dv == nil {
			dv, written = written[0], written[1:]
			p.counts.BytesWritten += int64(dv.SizeInBytes)
		}
		f := &files[m.fi]
		p.removes = append(p.removes, f.add.RemoveAction(p.opts.now().UnixMilli(), true))
		p.adds = append(p.adds, f.add.WithDeletionVector(dv))
		p.counts.DeletionVectors++
	}
	return nil
}

func mapsKeys64(m map[int][]int64) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
