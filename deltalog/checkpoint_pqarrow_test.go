package deltalog

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The checkpoint encoder as it was before checkpoint_encode.go: an Arrow record per row
// group, written by pqarrow.FileWriter. Kept as the oracle the encoder is compared with
// byte for byte (TestCheckpointEncoderMatchesPqarrow); docs/performance.md § The
// checkpoint's row group.

// encodeCheckpointPqarrow is encodeCheckpointByDay through pqarrow.FileWriter.
func encodeCheckpointPqarrow(actions []Action, byDay bool) ([]byte, error) {
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDictionaryDefault(false),
	)
	fw, err := pqarrow.NewFileWriter(checkpointSchema, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	for _, rows := range checkpointRowGroups(actions, byDay) {
		if err := writeCheckpointRows(fw, rows); err != nil {
			fw.Close()
			return nil, err
		}
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeCheckpointRows writes actions as one row group.
func writeCheckpointRows(fw *pqarrow.FileWriter, actions []Action) error {
	rec, err := checkpointRecord(actions)
	if err != nil {
		return err
	}
	defer rec.Release()
	return fw.Write(rec)
}

// checkpointRecord builds one record batch, one action per row.
func checkpointRecord(actions []Action) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, checkpointSchema)
	defer b.Release()
	sb := func(i int) *array.StructBuilder { return b.Field(i).(*array.StructBuilder) }
	for i := range actions {
		a := &actions[i]
		for c := range checkpointSchema.NumFields() {
			s := sb(c)
			var set bool
			switch c {
			case cpTxn:
				if set = a.Txn != nil; set {
					appendTxn(s, a.Txn)
				}
			case cpAdd:
				if set = a.Add != nil; set {
					appendAdd(s, a.Add)
				}
			case cpRemove:
				if set = a.Remove != nil; set {
					appendRemove(s, a.Remove)
				}
			case cpMetaData:
				if set = a.MetaData != nil; set {
					appendMetadata(s, a.MetaData)
				}
			case cpProtocol:
				if set = a.Protocol != nil; set {
					appendProtocol(s, a.Protocol)
				}
			case cpDomain:
				if set = a.DomainMetadata != nil; set {
					appendDomain(s, a.DomainMetadata)
				}
			}
			if !set {
				s.AppendNull()
			}
		}
		if a.count() != 1 || a.CommitInfo != nil || a.CDC != nil {
			return nil, errCheckpointRow
		}
	}
	return b.NewRecordBatch(), nil
}

func appendTxn(s *array.StructBuilder, t *Txn) {
	s.Append(true)
	s.FieldBuilder(0).(*array.StringBuilder).Append(t.AppID)
	s.FieldBuilder(1).(*array.Int64Builder).Append(t.Version)
	appendI64p(s.FieldBuilder(2), t.LastUpdated)
}

func appendAdd(s *array.StructBuilder, a *Add) {
	s.Append(true)
	s.FieldBuilder(0).(*array.StringBuilder).Append(a.Path)
	appendPartitionValues(s.FieldBuilder(1), a.PartitionValues, true)
	s.FieldBuilder(2).(*array.Int64Builder).Append(a.Size)
	s.FieldBuilder(3).(*array.Int64Builder).Append(a.ModificationTime)
	s.FieldBuilder(4).(*array.BooleanBuilder).Append(a.DataChange)
	appendStrMap(s.FieldBuilder(5), a.Tags, false)
	appendDV(s.FieldBuilder(6), a.DeletionVector)
	appendI64p(s.FieldBuilder(7), a.BaseRowID)
	appendI64p(s.FieldBuilder(8), a.DefaultRowCommitVersion)
	appendStr(s.FieldBuilder(9), a.ClusteringProvider)
	appendStr(s.FieldBuilder(10), a.Stats)
}

func appendRemove(s *array.StructBuilder, r *Remove) {
	s.Append(true)
	s.FieldBuilder(0).(*array.StringBuilder).Append(r.Path)
	appendI64p(s.FieldBuilder(1), r.DeletionTimestamp)
	s.FieldBuilder(2).(*array.BooleanBuilder).Append(r.DataChange)
	if r.ExtendedFileMetadata != nil {
		s.FieldBuilder(3).(*array.BooleanBuilder).Append(*r.ExtendedFileMetadata)
	} else {
		s.FieldBuilder(3).AppendNull()
	}
	appendPartitionValues(s.FieldBuilder(4), r.PartitionValues, false)
	appendI64p(s.FieldBuilder(5), r.Size)
	appendDV(s.FieldBuilder(6), r.DeletionVector)
	appendI64p(s.FieldBuilder(7), r.BaseRowID)
	appendI64p(s.FieldBuilder(8), r.DefaultRowCommitVersion)
}

func appendMetadata(s *array.StructBuilder, m *Metadata) {
	s.Append(true)
	s.FieldBuilder(0).(*array.StringBuilder).Append(m.ID)
	appendStr(s.FieldBuilder(1), m.Name)
	appendStr(s.FieldBuilder(2), m.Description)
	f := s.FieldBuilder(3).(*array.StructBuilder)
	f.Append(true)
	provider := m.Format.Provider
	if provider == "" {
		provider = "parquet"
	}
	f.FieldBuilder(0).(*array.StringBuilder).Append(provider)
	appendStrMap(f.FieldBuilder(1), m.Format.Options, true)
	s.FieldBuilder(4).(*array.StringBuilder).Append(m.SchemaString)
	appendStrList(s.FieldBuilder(5), m.PartitionColumns, true)
	appendI64p(s.FieldBuilder(6), m.CreatedTime)
	appendStrMap(s.FieldBuilder(7), m.Configuration, true)
}

// appendProtocol writes the feature lists only at reader 3 / writer 7, where they are
// required and must be non-null (docs/reference/delta-protocol.md §7.2); null otherwise.
func appendProtocol(s *array.StructBuilder, p *Protocol) {
	s.Append(true)
	s.FieldBuilder(0).(*array.Int32Builder).Append(int32(p.MinReaderVersion))
	s.FieldBuilder(1).(*array.Int32Builder).Append(int32(p.MinWriterVersion))
	if p.MinReaderVersion >= 3 {
		appendStrList(s.FieldBuilder(2), p.ReaderFeatures, true)
	} else {
		s.FieldBuilder(2).AppendNull()
	}
	if p.MinWriterVersion >= 7 {
		appendStrList(s.FieldBuilder(3), p.WriterFeatures, true)
	} else {
		s.FieldBuilder(3).AppendNull()
	}
}

func appendDomain(s *array.StructBuilder, d *DomainMetadata) {
	s.Append(true)
	s.FieldBuilder(0).(*array.StringBuilder).Append(d.Domain)
	s.FieldBuilder(1).(*array.StringBuilder).Append(d.Configuration)
	s.FieldBuilder(2).(*array.BooleanBuilder).Append(d.Removed)
}

func appendDV(b array.Builder, dv *DeletionVector) {
	s := b.(*array.StructBuilder)
	if dv == nil {
		s.AppendNull()
		return
	}
	s.Append(true)
	s.FieldBuilder(0).(*array.StringBuilder).Append(dv.StorageType)
	s.FieldBuilder(1).(*array.StringBuilder).Append(dv.PathOrInlineDv)
	if dv.Offset != nil {
		s.FieldBuilder(2).(*array.Int32Builder).Append(*dv.Offset)
	} else {
		s.FieldBuilder(2).AppendNull()
	}
	s.FieldBuilder(3).(*array.Int32Builder).Append(dv.SizeInBytes)
	s.FieldBuilder(4).(*array.Int64Builder).Append(dv.Cardinality)
}

func appendStr(b array.Builder, v string) {
	if v == "" {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(v)
}

func appendI64p(b array.Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(*v)
}

// appendStrMap writes m with sorted keys. A nil map is null unless required, in which case
// it is an empty map.
func appendStrMap(b array.Builder, m map[string]string, required bool) {
	appendMap(b, m, required, false)
}

// appendPartitionValues writes partition values: as appendStrMap, except that an empty
// value is written as null (docs/reference/delta-protocol.md §3: the empty string
// means null). Other string maps (configuration, options, tags) keep empty strings.
func appendPartitionValues(b array.Builder, m map[string]string, required bool) {
	appendMap(b, m, required, true)
}

func appendMap(b array.Builder, m map[string]string, required, emptyIsNull bool) {
	mb := b.(*array.MapBuilder)
	if m == nil && !required {
		mb.AppendNull()
		return
	}
	mb.Append(true)
	kb := mb.KeyBuilder().(*array.StringBuilder)
	ib := mb.ItemBuilder().(*array.StringBuilder)
	for _, k := range sortedKeys(m) {
		kb.Append(k)
		if v := m[k]; v == "" && emptyIsNull {
			ib.AppendNull()
		} else {
			ib.Append(v)
		}
	}
}

func appendStrList(b array.Builder, l []string, required bool) {
	lb := b.(*array.ListBuilder)
	if l == nil && !required {
		lb.AppendNull()
		return
	}
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for _, v := range l {
		vb.Append(v)
	}
}
