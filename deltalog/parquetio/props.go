package parquetio

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// The Parquet writer properties of a file depend only on its Arrow schema, its codec and
// the encodings chosen for its columns (writerProperties). A stream batch writes each of
// its files with a new Writer, so converting the schema to Parquet and building the
// per-column properties was done again for every file: ~0.1 ms of a 1,000-row bronze
// file's CPU and ~40 KB of its allocation (docs/performance.md § Small files). They are
// kept for the last propsCacheSize combinations; a WriterProperties is only read by the
// writers, so files written at the same time share one.

// propsCacheSize is how many (schema, codec, encodings) combinations are kept: a
// process writes a bronze and a facts table a stream, and a file's encodings vary with
// its data.
const propsCacheSize = 16

// propsEntry is one kept combination.
type propsEntry struct {
	schema *arrow.Schema
	codec  Codec
	encs   []colEncoding
	props  *parquet.WriterProperties
	// root is schema as Parquet (pqarrow.ToParquet's), flat whether every field is one
	// flat leaf column (flat.go: such files skip pqarrow.FileWriter).
	root *pqschema.GroupNode
	flat bool
	// pqSchema is schema as Parquet around root, shared read-only by the flat encoder's
	// files (arrow-go's file.Writer built it anew from root for each).
	pqSchema *pqschema.Schema
	// footer is, built once (footerTemplate), what arrow-go's metadata builder makes of
	// the footer of a file with one empty row group.
	footerOnce sync.Once
	footer     *metadata.FileMetaData
	footerErr  error
}

// footerTemplate is the footer arrow-go's FileMetaDataBuilder makes of a flat file of e
// with one empty row group, no key-value metadata: the fields every such file's footer
// shares (version, schema, created_by, column orders), read-only, and an empty row group
// to copy for each one (the flat encoder's). FileMetaDataBuilder.Finish built them anew
// for every file, converting the schema to Thrift and back and parsing created_by: about
// a tenth of a 1,000-row stream batch's Parquet encoding (docs/performance.md § Issue 13:
// a code-level cut). The files are the same bytes (TestFlatEncoderMatchesPqarrow,
// TestOwnChunksMatchPqarrow, TestFlatFootersFollowArrow).
func (e *propsEntry) footerTemplate() (*metadata.FileMetaData, error) {
	e.footerOnce.Do(func() {
		fmb := metadata.NewFileMetadataBuilder(e.pqSchema, e.props, make(metadata.KeyValueMetadata, 0))
		fmb.AppendRowGroup()
		e.footer, e.footerErr = fmb.Finish()
	})
	return e.footer, e.footerErr
}

// matches says whether e was built for schema (by pointer, else field by field:
// arrow.Schema.Equal, which compares names, types, nullability and field metadata),
// codec and encs.
func (e *propsEntry) matches(schema *arrow.Schema, codec Codec, encs []colEncoding) bool {
	if e.codec != codec || len(e.encs) != len(encs) {
		return false
	}
	for i, enc := range encs {
		if e.encs[i] != enc {
			return false
		}
	}
	return e.schema == schema || e.schema.Equal(schema)
}

// propsCache holds the kept combinations, the most recently used first.
var propsCache struct {
	mu      sync.Mutex
	entries []*propsEntry
}

// writerProperties returns the writer properties of a file of schema's records with
// codec and encs (one per top-level field), from the cache when it holds them. Errors are
// pqarrow.ToParquet's on a schema it cannot convert.
//
// The settings are:
//   - the codec, data page v1, statistics, decimals as INT32/INT64 up to precision 18
//     (as Spark writes them);
//   - each column's dictionary as encs says (dictionary.go): off for columns whose first
//     rows are unique enough, on with parquet-mr's fallback rule (Spark's writer) for the
//     others: a column chunk whose dictionary plus indices are not smaller than its plain
//     values when its first page is due drops the dictionary and is written plain.
//     arrow-go applies that rule only to uncompressed columns unless told; without it a
//     column of unique values builds a dictionary until DictionaryPageSizeLimit (1 MiB)
//     in each row group (docs/performance.md).
func writerProperties(schema *arrow.Schema, codec Codec, encs []colEncoding) (*parquet.WriterProperties, error) {
	e, err := fileSettings(schema, codec, encs)
	if err != nil {
		return nil, err
	}
	return e.props, nil
}

// fileSettings is writerProperties with the Parquet schema they were built for: the kept
// entry, shared and read-only.
func fileSettings(schema *arrow.Schema, codec Codec, encs []colEncoding) (*propsEntry, error) {
	propsCache.mu.Lock()
	for i, e := range propsCache.entries {
		if e.matches(schema, codec, encs) {
			copy(propsCache.entries[1:i+1], propsCache.entries[:i])
			propsCache.entries[0] = e
			propsCache.mu.Unlock()
			return e, nil
		}
	}
	propsCache.mu.Unlock()

	opts := baseProperties(codec)
	sc, err := pqarrow.ToParquet(schema, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	opts = append(opts, dictionaryProperties(sc, schema, encs)...)
	e := &propsEntry{schema: schema, codec: codec, encs: append([]colEncoding(nil), encs...), props: parquet.NewWriterProperties(opts...)}
	flatSettings(e, sc)

	propsCache.mu.Lock()
	defer propsCache.mu.Unlock()
	if len(propsCache.entries) < propsCacheSize {
		propsCache.entries = append(propsCache.entries, nil)
	}
	copy(propsCache.entries[1:], propsCache.entries)
	propsCache.entries[0] = e
	return e, nil
}
