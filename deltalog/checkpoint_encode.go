package deltalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/thrift/lib/go/thrift"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// A checkpoint's row groups are written leaf by leaf, each leaf's definition and
// repetition levels and values computed here from the actions (cpLeaves), instead of
// building an Arrow record and handing it to pqarrow.FileWriter, which built a column
// chunk writer for each of the schema's 52 leaves in every row group whether the group
// held a value in it or not: ~2 ms and ~1.2 MB a row group whatever its rows
// (docs/performance.md § The checkpoint's row group). Here:
//   - the schema's Parquet form, the writer properties and the footer's shared fields are
//     built once per process (checkpointFormat) and shared, read-only;
//   - a column chunk whose values fit one data page (all of them but a long column of a
//     large checkpoint, and every leaf with no value) is written here as that page:
//     levels by parquetio.HybridEncoder, arrow-go's hybrid RLE encoder step for step,
//     plain values, statistics, and the page header (parquetio.AppendDataPageHeader) as
//     arrow-go computes and serializes them (cpColumn.ownPage);
//   - a larger one goes through arrow-go's column chunk writer, which cuts its pages,
//     and its page writer (parquetio.ChunkPager);
//   - the file is assembled from arrow-go's metadata builders as its file.Writer does
//     (checkpointEncoder).
// The files are byte for byte those pqarrow.FileWriter wrote from the same actions, which
// the tests keep as the oracle (TestCheckpointEncoderMatchesPqarrow): the checkpoint
// format of docs/decisions/0014-checkpoint-tombstones.md does not change.

// cpFormat is the checkpoint schema as Parquet and its writer properties (Snappy, data
// page V1, no dictionaries: encodeCheckpoint), read-only once built and shared by every
// checkpoint written in the process.
type cpFormat struct {
	schema *pqschema.Schema
	props  *parquet.WriterProperties
	// footer is the footer arrow-go's metadata builder makes of a file of one empty row
	// group: the fields every checkpoint's footer shares (version, schema, key-value
	// metadata, created_by, column orders), and a row group to copy for each new one.
	footer *metadata.FileMetaData
	leaves []cpLeaf // one per Parquet leaf, in the schema's column order
	maxDef []int16
	maxRep []int16
}

// checkpointFormat builds cpFormat once; the error is pqarrow.ToParquet's, or a leaf of the
// Parquet schema that cpLeaves does not describe in that place.
var checkpointFormat = sync.OnceValues(func() (*cpFormat, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDictionaryDefault(false),
	)
	sc, err := pqarrow.ToParquet(checkpointSchema, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	leaves := cpLeaves()
	if sc.NumColumns() != len(leaves) {
		return nil, fmt.Errorf("checkpoint schema: %d Parquet leaves, %d described", sc.NumColumns(), len(leaves))
	}
	f := &cpFormat{schema: sc, props: props, leaves: leaves}
	// The key-value metadata pqarrow.FileWriter writes without a stored Arrow schema: an
	// empty list (checkpointSchema has no metadata).
	fmb := metadata.NewFileMetadataBuilder(sc, props, make(metadata.KeyValueMetadata, 0))
	fmb.AppendRowGroup()
	if f.footer, err = fmb.Finish(); err != nil {
		return nil, err
	}
	for i, l := range leaves {
		c := sc.Column(i)
		if got := strings.Join(c.ColumnPath(), "."); got != l.path {
			return nil, fmt.Errorf("checkpoint schema: leaf %d is %s, described as %s", i, got, l.path)
		}
		f.maxDef = append(f.maxDef, c.MaxDefinitionLevel())
		f.maxRep = append(f.maxRep, c.MaxRepetitionLevel())
	}
	return f, nil
})

// cpLeaf is one leaf column of the checkpoint schema: fill appends, for an action whose
// own field (action: cpTxn, cpAdd, ...) is set, that row's levels and values of the leaf.
// A row whose field is not set has one level, definition 0.
type cpLeaf struct {
	path   string
	action int
	fill   func(a *Action, c *cpColumn)
}

// cpColumn is one leaf's levels and values for a row group, reused from leaf to leaf.
type cpColumn struct {
	defs, reps []int16
	i64        []int64
	i32        []int32
	bools      []bool
	strs       []parquet.ByteArray
	strEnds    []int // the end of each string value in text
	text       []byte

	page    []byte // the page being built
	levels  parquetio.HybridEncoder
	boolEnc boolEncoder
	pageOut parquetio.PageScratch
}

func (c *cpColumn) reset() {
	c.defs, c.reps = c.defs[:0], c.reps[:0]
	c.i64, c.i32, c.bools, c.strs, c.strEnds, c.text = c.i64[:0], c.i32[:0], c.bools[:0], c.strs[:0], c.strEnds[:0], c.text[:0]
}

// level appends a definition and a repetition level.
func (c *cpColumn) level(def, rep int16) {
	c.defs = append(c.defs, def)
	c.reps = append(c.reps, rep)
}

// The value appenders take the leaf's definition level when the value is there (its
// maximum) and the repetition level; the optional ones a nil or empty value as null
// (one level lower).

func (c *cpColumn) str(def, rep int16, v string) {
	c.level(def, rep)
	c.text = append(c.text, v...)
	c.strEnds = append(c.strEnds, len(c.text))
}

// optStr is a string written null when empty (appendStr's rule).
func (c *cpColumn) optStr(def int16, v string) {
	if v == "" {
		c.level(def-1, 0)
		return
	}
	c.str(def, 0, v)
}

func (c *cpColumn) int64(def int16, v int64) {
	c.level(def, 0)
	c.i64 = append(c.i64, v)
}

func (c *cpColumn) optInt64(def int16, v *int64) {
	if v == nil {
		c.level(def-1, 0)
		return
	}
	c.int64(def, *v)
}

func (c *cpColumn) int32(def int16, v int32) {
	c.level(def, 0)
	c.i32 = append(c.i32, v)
}

func (c *cpColumn) boolean(def int16, v bool) {
	c.level(def, 0)
	c.bools = append(c.bools, v)
}

func (c *cpColumn) optBool(def int16, v *bool) {
	if v == nil {
		c.level(def-1, 0)
		return
	}
	c.boolean(def, *v)
}

// strMap appends the key (value false) or value leaf of an optional map of strings whose
// parent is defined at def: null when m is nil and not required, else its entries by
// sorted key, an empty value written null when emptyIsNull (appendMap's rules).
func (c *cpColumn) strMap(def int16, m map[string]string, required, emptyIsNull, value bool) {
	if m == nil && !required {
		c.level(def, 0)
		return
	}
	if len(m) == 0 {
		c.level(def+1, 0)
		return
	}
	var rep int16
	for _, k := range sortedKeys(m) {
		switch v := m[k]; {
		case !value:
			c.str(def+2, rep, k)
		case v == "" && emptyIsNull:
			c.level(def+2, rep)
		default:
			c.str(def+3, rep, v)
		}
		rep = 1
	}
}

// strList appends the element leaf of an optional list of strings whose parent is defined
// at def: null when l is nil and not required (appendStrList's rule).
func (c *cpColumn) strList(def int16, l []string, required bool) {
	if l == nil && !required {
		c.level(def, 0)
		return
	}
	if len(l) == 0 {
		c.level(def+1, 0)
		return
	}
	var rep int16
	for _, v := range l {
		c.str(def+3, rep, v)
		rep = 1
	}
}

// dv appends leaf i (0 storageType … 4 cardinality) of a deletion vector whose parent is
// defined at def.
func (c *cpColumn) dv(def int16, dv *DeletionVector, i int) {
	if dv == nil {
		c.level(def, 0)
		return
	}
	switch i {
	case 0:
		c.str(def+2, 0, dv.StorageType)
	case 1:
		c.str(def+2, 0, dv.PathOrInlineDv)
	case 2:
		if dv.Offset == nil {
			c.level(def+1, 0)
		} else {
			c.int32(def+2, *dv.Offset)
		}
	case 3:
		c.int32(def+2, dv.SizeInBytes)
	case 4:
		c.int64(def+2, dv.Cardinality)
	}
}

// cpLeaves describes checkpointSchema's leaves in its column order, with the same values,
// nulls and empty collections as the Arrow builders of checkpointRecord wrote (the test
// oracle, checkpoint_pqarrow_test.go).
func cpLeaves() []cpLeaf {
	var ls []cpLeaf
	leaf := func(path string, action int, fill func(a *Action, c *cpColumn)) {
		ls = append(ls, cpLeaf{path: path, action: action, fill: fill})
	}
	leaf("txn.appId", cpTxn, func(a *Action, c *cpColumn) { c.str(2, 0, a.Txn.AppID) })
	leaf("txn.version", cpTxn, func(a *Action, c *cpColumn) { c.int64(2, a.Txn.Version) })
	leaf("txn.lastUpdated", cpTxn, func(a *Action, c *cpColumn) { c.optInt64(2, a.Txn.LastUpdated) })

	leaf("add.path", cpAdd, func(a *Action, c *cpColumn) { c.str(2, 0, a.Add.Path) })
	leaf("add.partitionValues.key_value.key", cpAdd, func(a *Action, c *cpColumn) { c.strMap(1, a.Add.PartitionValues, true, true, false) })
	leaf("add.partitionValues.key_value.value", cpAdd, func(a *Action, c *cpColumn) { c.strMap(1, a.Add.PartitionValues, true, true, true) })
	leaf("add.size", cpAdd, func(a *Action, c *cpColumn) { c.int64(2, a.Add.Size) })
	leaf("add.modificationTime", cpAdd, func(a *Action, c *cpColumn) { c.int64(2, a.Add.ModificationTime) })
	leaf("add.dataChange", cpAdd, func(a *Action, c *cpColumn) { c.boolean(2, a.Add.DataChange) })
	leaf("add.tags.key_value.key", cpAdd, func(a *Action, c *cpColumn) { c.strMap(1, a.Add.Tags, false, false, false) })
	leaf("add.tags.key_value.value", cpAdd, func(a *Action, c *cpColumn) { c.strMap(1, a.Add.Tags, false, false, true) })
	for i, name := range []string{"storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality"} {
		leaf("add.deletionVector."+name, cpAdd, func(a *Action, c *cpColumn) { c.dv(1, a.Add.DeletionVector, i) })
	}
	leaf("add.baseRowId", cpAdd, func(a *Action, c *cpColumn) { c.optInt64(2, a.Add.BaseRowID) })
	leaf("add.defaultRowCommitVersion", cpAdd, func(a *Action, c *cpColumn) { c.optInt64(2, a.Add.DefaultRowCommitVersion) })
	leaf("add.clusteringProvider", cpAdd, func(a *Action, c *cpColumn) { c.optStr(2, a.Add.ClusteringProvider) })
	leaf("add.stats", cpAdd, func(a *Action, c *cpColumn) { c.optStr(2, a.Add.Stats) })

	leaf("remove.path", cpRemove, func(a *Action, c *cpColumn) { c.str(2, 0, a.Remove.Path) })
	leaf("remove.deletionTimestamp", cpRemove, func(a *Action, c *cpColumn) { c.optInt64(2, a.Remove.DeletionTimestamp) })
	leaf("remove.dataChange", cpRemove, func(a *Action, c *cpColumn) { c.boolean(2, a.Remove.DataChange) })
	leaf("remove.extendedFileMetadata", cpRemove, func(a *Action, c *cpColumn) { c.optBool(2, a.Remove.ExtendedFileMetadata) })
	leaf("remove.partitionValues.key_value.key", cpRemove, func(a *Action, c *cpColumn) { c.strMap(1, a.Remove.PartitionValues, false, true, false) })
	leaf("remove.partitionValues.key_value.value", cpRemove, func(a *Action, c *cpColumn) { c.strMap(1, a.Remove.PartitionValues, false, true, true) })
	leaf("remove.size", cpRemove, func(a *Action, c *cpColumn) { c.optInt64(2, a.Remove.Size) })
	for i, name := range []string{"storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality"} {
		leaf("remove.deletionVector."+name, cpRemove, func(a *Action, c *cpColumn) { c.dv(1, a.Remove.DeletionVector, i) })
	}
	leaf("remove.baseRowId", cpRemove, func(a *Action, c *cpColumn) { c.optInt64(2, a.Remove.BaseRowID) })
	leaf("remove.defaultRowCommitVersion", cpRemove, func(a *Action, c *cpColumn) { c.optInt64(2, a.Remove.DefaultRowCommitVersion) })

	leaf("metaData.id", cpMetaData, func(a *Action, c *cpColumn) { c.str(2, 0, a.MetaData.ID) })
	leaf("metaData.name", cpMetaData, func(a *Action, c *cpColumn) { c.optStr(2, a.MetaData.Name) })
	leaf("metaData.description", cpMetaData, func(a *Action, c *cpColumn) { c.optStr(2, a.MetaData.Description) })
	leaf("metaData.format.provider", cpMetaData, func(a *Action, c *cpColumn) {
		provider := a.MetaData.Format.Provider
		if provider == "" {
			provider = "parquet"
		}
		c.str(3, 0, provider)
	})
	leaf("metaData.format.options.key_value.key", cpMetaData, func(a *Action, c *cpColumn) { c.strMap(2, a.MetaData.Format.Options, true, false, false) })
	leaf("metaData.format.options.key_value.value", cpMetaData, func(a *Action, c *cpColumn) { c.strMap(2, a.MetaData.Format.Options, true, false, true) })
	leaf("metaData.schemaString", cpMetaData, func(a *Action, c *cpColumn) { c.str(2, 0, a.MetaData.SchemaString) })
	leaf("metaData.partitionColumns.list.element", cpMetaData, func(a *Action, c *cpColumn) { c.strList(1, a.MetaData.PartitionColumns, true) })
	leaf("metaData.createdTime", cpMetaData, func(a *Action, c *cpColumn) { c.optInt64(2, a.MetaData.CreatedTime) })
	leaf("metaData.configuration.key_value.key", cpMetaData, func(a *Action, c *cpColumn) { c.strMap(1, a.MetaData.Configuration, true, false, false) })
	leaf("metaData.configuration.key_value.value", cpMetaData, func(a *Action, c *cpColumn) { c.strMap(1, a.MetaData.Configuration, true, false, true) })

	leaf("protocol.minReaderVersion", cpProtocol, func(a *Action, c *cpColumn) { c.int32(2, int32(a.Protocol.MinReaderVersion)) })
	leaf("protocol.minWriterVersion", cpProtocol, func(a *Action, c *cpColumn) { c.int32(2, int32(a.Protocol.MinWriterVersion)) })
	// The feature lists only at reader 3 / writer 7, where they are required and must be
	// non-null (docs/reference/delta-protocol.md §7.2); null otherwise.
	leaf("protocol.readerFeatures.list.element", cpProtocol, func(a *Action, c *cpColumn) {
		if a.Protocol.MinReaderVersion >= 3 {
			c.strList(1, a.Protocol.ReaderFeatures, true)
		} else {
			c.level(1, 0)
		}
	})
	leaf("protocol.writerFeatures.list.element", cpProtocol, func(a *Action, c *cpColumn) {
		if a.Protocol.MinWriterVersion >= 7 {
			c.strList(1, a.Protocol.WriterFeatures, true)
		} else {
			c.level(1, 0)
		}
	})

	leaf("domainMetadata.domain", cpDomain, func(a *Action, c *cpColumn) { c.str(2, 0, a.DomainMetadata.Domain) })
	leaf("domainMetadata.configuration", cpDomain, func(a *Action, c *cpColumn) { c.str(2, 0, a.DomainMetadata.Configuration) })
	leaf("domainMetadata.removed", cpDomain, func(a *Action, c *cpColumn) { c.boolean(2, a.DomainMetadata.Removed) })
	return ls
}

// actionSet says whether a's field of checkpointSchema's top-level column i is set.
func actionSet(a *Action, i int) bool {
	switch i {
	case cpTxn:
		return a.Txn != nil
	case cpAdd:
		return a.Add != nil
	case cpRemove:
		return a.Remove != nil
	case cpMetaData:
		return a.MetaData != nil
	case cpProtocol:
		return a.Protocol != nil
	case cpDomain:
		return a.DomainMetadata != nil
	}
	return false
}

// checkpointEncoder writes the row groups of one checkpoint file. It assembles the file
// as arrow-go's file.Writer does (the magic, each row group's column chunks, the footer
// from arrow-go's metadata builders), so that a column chunk of one page can be written
// without a column chunk writer (cpColumn.ownPage, parquetio.WritePlainChunk), as that writer
// would have written it. The others go through a column chunk writer and arrow-go's page
// writer. One encoder writes one file, from one goroutine.
type checkpointEncoder struct {
	f    *cpFormat
	sink tellBuffer
	// footer is this file's footer: cpFormat.footer's shared fields, this file's row groups
	// (arrow-go's FileMetaDataBuilder.Snapshot built the shared ones anew for every file,
	// converting the schema to Thrift and back: a tenth of a checkpoint's encode).
	footer *metadata.FileMetaData
	// pager is the page writer of chunks of more than a page, spill its scratch.
	pager parquetio.ChunkPager
	spill parquetio.FooterEntryScratch
	rgs   int16
	col   cpColumn
}

// tellBuffer is the file being written, with the position arrow-go's writers ask for.
type tellBuffer struct{ bytes.Buffer }

func (b *tellBuffer) Tell() int64 { return int64(b.Len()) }

func newCheckpointEncoder() (*checkpointEncoder, error) {
	f, err := checkpointFormat()
	if err != nil {
		return nil, err
	}
	e := &checkpointEncoder{f: f}
	shared := *f.footer.FileMetaData
	shared.RowGroups, shared.NumRows = nil, 0
	e.footer = &metadata.FileMetaData{FileMetaData: &shared}
	e.sink.WriteString("PAR1")
	return e, nil
}

// writeRows writes actions as one row group.
func (e *checkpointEncoder) writeRows(actions []Action) error {
	for i := range actions {
		if a := &actions[i]; a.count() != 1 || a.CommitInfo != nil || a.CDC != nil {
			return errCheckpointRow
		}
	}
	rg := *e.f.footer.RowGroups[0] // empty: its fields are set by rgb and its chunks' builders
	rgb := metadata.NewRowGroupMetaDataBuilder(e.f.props, e.f.schema, &rg)
	c := &e.col
	for li, l := range e.f.leaves {
		c.reset()
		for i := range actions {
			if a := &actions[i]; actionSet(a, l.action) {
				l.fill(a, c)
			} else {
				c.level(0, 0)
			}
		}
		meta := rgb.NextColumnChunk()
		own, err := c.ownPage(&e.sink, meta, e.f.props, e.f.maxDef[li], e.f.maxRep[li])
		if !own && err == nil {
			if err := e.startColumn(meta, li); err != nil {
				return err
			}
			reps := c.reps
			if e.f.maxRep[li] == 0 {
				reps = nil
			}
			cw := file.NewColumnChunkWriter(meta, &e.pager, e.f.props)
			err = c.write(cw, reps)
			if cerr := cw.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("checkpoint column %s: %w", l.path, err)
		}
	}
	rgb.SetNumRows(len(actions))
	if err := rgb.Finish(0, e.rgs); err != nil {
		return err
	}
	e.footer.RowGroups = append(e.footer.RowGroups, &rg)
	e.footer.NumRows += rg.NumRows
	e.rgs++
	return nil
}

// startColumn points the page writer at the column chunk meta, leaf li of the row group.
func (e *checkpointEncoder) startColumn(meta *metadata.ColumnChunkMetaDataBuilder, li int) error {
	return e.pager.Start(&e.sink, meta, e.f.props, e.rgs, int16(li), &e.spill)
}

// close writes the footer and returns the file.
func (e *checkpointEncoder) close() ([]byte, error) {
	start := e.sink.Len()
	// The footer's Thrift bytes go straight into the file.
	proto := thrift.NewTCompactProtocolConf(&thrift.TMemoryBuffer{Buffer: &e.sink.Buffer}, nil)
	if err := e.footer.FileMetaData.Write(context.Background(), proto); err != nil {
		return nil, err
	}
	if err := proto.Flush(context.Background()); err != nil {
		return nil, err
	}
	n := e.sink.Len() - start
	e.sink.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
	e.sink.WriteString("PAR1")
	return e.sink.Bytes(), nil
}

// ownPage writes the column chunk of a column with levels as arrow-go's column chunk
// writer writes it when its values fit one data page (plain-encoded, under
// DataPageSize: the writer cuts a page only once its values reach it), and reports
// whether they did. The page holds the repetition levels, then the definition levels,
// each a 4-byte length and the RLE/bit-packed hybrid encoding (parquetio.HybridEncoder,
// fed by WriteBatchSize levels as the writer feeds its encoder), then the values, plain;
// the page and the chunk carry the same statistics (cpColumn.statistics), and the chunk
// is written as parquetio.WritePlainChunk writes a flat data file's.
// TestCheckpointEncoderMatchesPqarrow holds it to arrow-go's bytes.
func (c *cpColumn) ownPage(sink *tellBuffer, meta *metadata.ColumnChunkMetaDataBuilder, props *parquet.WriterProperties, maxDef, maxRep int16) (bool, error) {
	n := len(c.defs)
	if n == 0 {
		return false, nil
	}
	descr := meta.Descr()
	size := 0
	switch descr.PhysicalType() {
	case parquet.Types.Int64:
		size = 8 * len(c.i64)
	case parquet.Types.Int32:
		size = 4 * len(c.i32)
	case parquet.Types.Boolean:
		size = (len(c.bools) + 7) / 8
	case parquet.Types.ByteArray:
		size = 4*len(c.strEnds) + len(c.text)
	default:
		return false, nil
	}
	if int64(size) >= props.DataPageSize() {
		return false, nil
	}
	batch := int(props.WriteBatchSize())
	raw := c.page[:0]
	if maxRep > 0 {
		raw = c.levels.AppendLevels(raw, c.reps, maxRep, batch)
	}
	raw = c.levels.AppendLevels(raw, c.defs, maxDef, batch)
	raw = c.plain(raw, descr.PhysicalType(), maxDef, batch)
	c.page = raw
	st, values := c.statistics(descr)
	return true, parquetio.WritePlainChunk(sink, sink.Tell(), meta, props, raw, n, n-values, st, &c.pageOut)
}

// plain appends the column's values, plain-encoded: integers little-endian, booleans a
// bit each from the lowest (as arrow-go's encoder packs them, handed the values of batch
// levels at a time: boolEncoder), strings each a 4-byte length and the bytes.
func (c *cpColumn) plain(b []byte, t parquet.Type, maxDef int16, batch int) []byte {
	switch t {
	case parquet.Types.Int64:
		for _, v := range c.i64 {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	case parquet.Types.Int32:
		for _, v := range c.i32 {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
	case parquet.Types.Boolean:
		c.boolEnc.start()
		v := 0
		for start := 0; start < len(c.defs); start += batch {
			n := 0
			for _, d := range c.defs[start:min(start+batch, len(c.defs))] {
				if d == maxDef {
					n++
				}
			}
			b = c.boolEnc.put(b, c.bools[v:v+n])
			v += n
		}
		b = c.boolEnc.flush(b)
	case parquet.Types.ByteArray:
		start := 0
		for _, end := range c.strEnds {
			b = binary.LittleEndian.AppendUint32(b, uint32(end-start))
			b = append(b, c.text[start:end]...)
			start = end
		}
	}
	return b
}

// statistics are the minimum and maximum of the column's values as arrow-go's typed
// statistics encode them, when there are values: plain-encoded (a string without its
// length), in the column's sort order (integers and booleans signed, strings unsigned,
// byte by byte); and the count of values. parquetio.WritePlainChunk completes them.
func (c *cpColumn) statistics(descr *pqschema.Column) (st metadata.EncodedStatistics, values int) {
	switch descr.PhysicalType() {
	case parquet.Types.Int64:
		if values = len(c.i64); values > 0 {
			lo, hi := slices.Min(c.i64), slices.Max(c.i64)
			st.SetMin(binary.LittleEndian.AppendUint64(nil, uint64(lo)))
			st.SetMax(binary.LittleEndian.AppendUint64(nil, uint64(hi)))
		}
	case parquet.Types.Int32:
		if values = len(c.i32); values > 0 {
			lo, hi := slices.Min(c.i32), slices.Max(c.i32)
			st.SetMin(binary.LittleEndian.AppendUint32(nil, uint32(lo)))
			st.SetMax(binary.LittleEndian.AppendUint32(nil, uint32(hi)))
		}
	case parquet.Types.Boolean:
		if values = len(c.bools); values > 0 {
			lo, hi := byte(1), byte(0)
			for _, v := range c.bools {
				if v {
					hi = 1
				} else {
					lo = 0
				}
			}
			st.SetMin([]byte{lo})
			st.SetMax([]byte{hi})
		}
	case parquet.Types.ByteArray:
		if values = len(c.strEnds); values > 0 {
			var lo, hi []byte
			start := 0
			for i, end := range c.strEnds {
				v := c.text[start:end]
				if i == 0 || bytes.Compare(v, lo) < 0 {
					lo = v
				}
				if i == 0 || bytes.Compare(v, hi) > 0 {
					hi = v
				}
				start = end
			}
			st.SetMin(append([]byte{}, lo...)) // never nil: an empty minimum is one
			st.SetMax(append([]byte{}, hi...))
		}
	}
	return st, values
}

// write hands the column's levels and values to cw.
func (c *cpColumn) write(cw file.ColumnChunkWriter, reps []int16) error {
	var err error
	switch w := cw.(type) {
	case *file.ByteArrayColumnChunkWriter:
		if c.text == nil {
			// An empty string is a value, not a null, to the statistics: never a nil slice.
			c.text = make([]byte, 0, 64)
		}
		start := 0
		for _, end := range c.strEnds {
			c.strs = append(c.strs, c.text[start:end:end])
			start = end
		}
		_, err = w.WriteBatch(c.strs, c.defs, reps)
	case *file.Int64ColumnChunkWriter:
		_, err = w.WriteBatch(c.i64, c.defs, reps)
	case *file.Int32ColumnChunkWriter:
		_, err = w.WriteBatch(c.i32, c.defs, reps)
	case *file.BooleanColumnChunkWriter:
		_, err = w.WriteBatch(c.bools, c.defs, reps)
	default:
		err = fmt.Errorf("unexpected column writer %T", cw)
	}
	return err
}
