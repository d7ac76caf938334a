package parquetio

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// Files whose columns are all flat (no struct, list or map) are encoded through arrow-go's
// file writer and its column chunk writers directly, each column's values handed to
// pqarrow.WriteArrowToColumn with definition levels computed here, instead of through
// pqarrow.FileWriter. The column chunk writers, and so the encodings, statistics, pages
// and metadata, are the same ones pqarrow drives: the files are byte for byte the ones
// pqarrow.FileWriter writes (TestFlatEncoderMatchesPqarrow). What it spares, per file:
// pqarrow's schema conversion and schema manifest (the Parquet schema is kept with the
// writer properties, props.go), and per column chunk its level builder, chunked-array
// slicing and write context. A stream batch writes ~20 column chunks in small files,
// where that machinery was a fifth of the CPU (docs/performance.md § Small files).
// Nested schemas keep pqarrow.FileWriter, whose level builder handles them.

// rowGroupEncoder encodes the row groups of one Parquet file, column after column.
type rowGroupEncoder interface {
	// newRowGroup starts a row group (closing the previous one).
	newRowGroup() error
	// writeColumn writes the next top-level column of the open row group from its
	// pieces (rows rows in all; a dictionary array is written as its dictionary).
	writeColumn(dt arrow.DataType, pieces []arrow.Array, rows int64) error
	// close closes the open row group and writes the footer.
	close() error
}

// newRowGroupEncoder returns the encoder of a file of schema's records into w with the
// kept settings e: flatEncoder when e's schema is flat, else pqarrow's.
func newRowGroupEncoder(w io.Writer, schema *arrow.Schema, e *propsEntry) (rowGroupEncoder, error) {
	if e.flat && !forcePqarrow {
		return newFlatEncoder(w, schema, e)
	}
	fw, err := pqarrow.NewFileWriter(schema, w, e.props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator)))
	if err != nil {
		return nil, err
	}
	return arrowEncoder{fw}, nil
}

// forcePqarrow makes every file go through pqarrow.FileWriter: set only by the test that
// compares the two.
var forcePqarrow bool

// arrowEncoder is pqarrow.FileWriter: nested schemas.
type arrowEncoder struct{ fw *pqarrow.FileWriter }

func (a arrowEncoder) newRowGroup() error { return a.fw.NewRowGroupChecked() }
func (a arrowEncoder) writeColumn(dt arrow.DataType, pieces []arrow.Array, rows int64) error {
	return writeColumn(a.fw, dt, pieces, rows)
}
func (a arrowEncoder) close() error { return a.fw.Close() }

// flatSchema says whether every field of s is one Parquet leaf column that
// pqarrow.WriteArrowToColumn writes from the array itself: no nested, extension,
// dictionary or null type.
func flatSchema(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.EXTENSION, arrow.DICTIONARY, arrow.NULL:
			return false
		}
		if isNested(f.Type) {
			return false
		}
	}
	return true
}

// flatEncoder writes a flat schema's columns through arrow-go's column chunk writers.
type flatEncoder struct {
	fw *file.Writer
	rg file.SerialRowGroupWriter
	// ctx carries pqarrow's write context (its scratch buffers) from column to column,
	// as pqarrow.FileWriter keeps one per file.
	ctx context.Context
	// defs is the definition levels' scratch, grown to the longest piece.
	defs []int16
}

func newFlatEncoder(w io.Writer, s *arrow.Schema, e *propsEntry) (*flatEncoder, error) {
	// The key-value metadata pqarrow.FileWriter writes without a stored Arrow schema: the
	// schema's own metadata, an empty list when it has none.
	meta := make(metadata.KeyValueMetadata, 0)
	md := s.Metadata()
	for i := range md.Len() {
		if err := meta.Append(md.Keys()[i], md.Values()[i]); err != nil {
			return nil, err
		}
	}
	fw, err := file.NewParquetWriterWithError(w, e.root, file.WithWriterProps(e.props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	props := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator))
	return &flatEncoder{fw: fw, ctx: pqarrow.NewArrowWriteContext(context.Background(), &props)}, nil
}

func (f *flatEncoder) newRowGroup() error {
	if f.rg != nil {
		if err := f.rg.Close(); err != nil {
			return err
		}
	}
	rg, err := f.fw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	f.rg = rg
	return nil
}

// writeColumn writes each piece with its definition levels (1 where a value is, 0 where
// NULL, none for a required column), as pqarrow's level builder gives them for a flat
// column; the column writer skips the NULL slots by the validity bitmap.
func (f *flatEncoder) writeColumn(dt arrow.DataType, pieces []arrow.Array, rows int64) error {
	cw, err := f.rg.NextColumn()
	if err != nil {
		return err
	}
	optional := cw.Descr().SchemaNode().RepetitionType() == parquet.Repetitions.Optional
	if startsPlain(cw, pieces, rows) {
		cw.FallbackToPlain()
	}
	var written int64
	for _, p := range pieces {
		n := p.Len()
		if n == 0 {
			continue
		}
		var defs []int16
		if optional {
			if cap(f.defs) < n {
				f.defs = make([]int16, n)
			}
			defs = f.defs[:n]
			if p.NullN() == 0 {
				for i := range defs {
					defs[i] = 1
				}
			} else {
				for i := range defs {
					defs[i] = 0
					if p.IsValid(i) {
						defs[i] = 1
					}
				}
			}
		}
		var err error
		if d, ok := p.(*array.Dictionary); ok && len(pieces) == 1 {
			err = writeOwnDictionary(f.ctx, cw, d, defs, optional)
		} else {
			err = pqarrow.WriteArrowToColumn(f.ctx, cw, p, defs, nil, optional)
		}
		if err != nil {
			return err
		}
		written += int64(n)
	}
	if written != rows {
		return fmt.Errorf("parquetio: column %s: %d values for a row group of %d rows", cw.Descr().Name(), written, rows)
	}
	return nil
}

func (f *flatEncoder) close() error {
	if f.rg != nil {
		if err := f.rg.Close(); err != nil {
			return err
		}
	}
	return f.fw.Close()
}

// flatSettings fills e's Parquet schema root and whether its schema is flat.
func flatSettings(e *propsEntry, sc *pqschema.Schema) {
	e.root = sc.Root()
	e.flat = flatSchema(e.schema)
}

// dictWriter is the part of arrow-go's dictionary encoder (parquet/internal/encoding's
// DictEncoder, which a column chunk writer's CurrentEncoder is while it encodes with a
// dictionary) that writeOwnDictionary uses.
type dictWriter interface {
	NormalizeDict(arrow.Array) (arrow.Array, error)
	PutDictionary(arrow.Array) error
	PreservedDictionary() arrow.Array
	NumEntries() int
}

// writeOwnDictionary writes a dictionary array built by ownDictionary (dictionary.go) as
// the column chunk's dictionary and indices: what pqarrow.WriteArrowToColumn does with a
// dictionary array given to a fresh column chunk writer (writeDictionaryArrow in
// arrow-go's parquet/pqarrow/encode_dict_compute.go), call for call, except for the
// page statistics. pqarrow takes them from the dictionary values the indices reference,
// found with compute.UniqueArray over the indices (and compute.TakeArray when some are
// unreferenced or NULL): arrow-go's compute executor, its hash kernel and a goroutine per
// call, ~5 % of a 1,000-row stream batch's CPU by profile (docs/performance.md § Parquet
// CPU of a small file). ownDictionary's dictionary holds exactly the distinct values of
// the non-NULL rows, each referenced, so the statistics are taken from it directly and
// come out the same (TestFlatEncoderMatchesPqarrow compares the files byte for byte). Any other state (the writer not encoding with a dictionary, a dictionary
// already put, a dictionary with duplicates) goes through pqarrow as before.
func writeOwnDictionary(ctx context.Context, cw file.ColumnChunkWriter, d *array.Dictionary, defs []int16, optional bool) error {
	enc, ok := cw.CurrentEncoder().(dictWriter)
	if !ok || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict || enc.PreservedDictionary() != nil || !arrow.IsBaseBinary(d.Dictionary().DataType().ID()) {
		return pqarrow.WriteArrowToColumn(ctx, cw, d, defs, nil, optional)
	}
	normalized, err := enc.NormalizeDict(d.Dictionary())
	if err != nil {
		return err
	}
	defer normalized.Release()
	if err := enc.PutDictionary(normalized); err != nil {
		return err
	}
	if enc.NumEntries() != normalized.Len() {
		// Duplicates in the dictionary: pqarrow falls back to plain (the encoder's
		// memo no longer matches the indices), and so does its dense path from here.
		cw.FallbackToPlain()
		return pqarrow.WriteArrowToColumn(ctx, cw, d, defs, nil, optional)
	}
	indices := d.Indices()
	if stats := cw.PageStatistics(); stats != nil {
		nonNull := indices.Len() - indices.NullN()
		stats.IncNulls(int64(max(len(defs)-nonNull, 0)))
		stats.IncNumValues(int64(nonNull))
		if err := stats.UpdateFromArrow(normalized, false); err != nil {
			return err
		}
	}
	return cw.WriteDictIndices(indices, defs, nil)
}

// maxEarlyPlainRows bounds the row groups in which startsPlain may start a dictionary
// column plain: far below the values whose dictionary indices could fill a data page
// (DataPageSize, 1 MiB, at up to ~4 bytes a value) before arrow-go's cost check has seen
// them all.
const maxEarlyPlainRows = 1 << 16

// startsPlain says whether the column chunk writer cw, about to encode pieces (rows rows)
// with a dictionary, would drop it for plain anyway by its cost check (parquet-mr's rule,
// which the writer properties turn on for every dictionary column, dictionary.go), and
// so can start plain. arrow-go applies the check after each batch of WriteBatchSize
// values until the first data page is cut, and then re-encodes what it buffered as
// plain: in a small file, after hashing every value into a dictionary. The writer's
// choice (chooseEncodings) estimates the indices bit-packed; arrow-go's check takes an
// upper bound of their RLE size, so a column of ~700–850 distinct values in 1,000 rows
// (timestamps, amounts, ids of a stream batch) is chosen for a dictionary that arrow-go
// then drops: its hash table grown four times over for nothing, ~7 % of a batch's
// allocation (docs/performance.md § Parquet CPU of a small file). dictionaryLoses counts
// the distinct values and applies arrow-go's estimate (arrowIndexBytes); when it says the
// dictionary loses over the whole row group, arrow-go's last check, which sees every
// value (no page is cut under maxEarlyPlainRows), drops it too, so starting plain writes
// the same bytes (TestArrowIndexBytes, TestStartsPlainMatchesArrow). Only types whose
// Parquet values are their Arrow values one to one are counted (integers, dates, times,
// timestamps, decimals stored as integers, strings and binaries in one piece); floats
// (NaN, -0) and the rest keep arrow-go's course.
func startsPlain(cw file.ColumnChunkWriter, pieces []arrow.Array, rows int64) bool {
	if rows == 0 || rows > maxEarlyPlainRows || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict ||
		!cw.Properties().DictionaryCostFallbackEnabledFor(cw.Descr().Path()) {
		return false
	}
	width := 0
	switch cw.Descr().PhysicalType() {
	case parquet.Types.Int32:
		width = 4
	case parquet.Types.Int64:
		width = 8
	case parquet.Types.ByteArray:
	default:
		return false
	}
	seen := distinctPool.Get().(*distinctSets)
	defer distinctPool.Put(seen)
	return seen.dictionaryLoses(pieces, width)
}
