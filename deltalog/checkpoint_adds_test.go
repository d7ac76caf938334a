package deltalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// richAdd is add i with every field the open reads set in some rows and null or empty in
// others, so that each leaf's definition levels are exercised.
func richAdd(i int) *Add {
	a := &Add{
		Path:             fmt.Sprintf("p=%d/part-%05d%%20x.parquet", i%3, i),
		Size:             int64(1000 + i),
		ModificationTime: 1700000000000 + int64(i),
		DataChange:       i%2 == 0,
		Stats:            fmt.Sprintf(`{"numRecords":%d}`, i),
	}
	switch i % 4 {
	case 0:
		a.PartitionValues = map[string]string{"p": fmt.Sprint(i % 3), "q": ""} // "" is null
	case 1:
		a.PartitionValues = map[string]string{"p": "x"}
	}
	if i%5 == 0 {
		a.Tags = map[string]string{"INSERTION_TIME": fmt.Sprint(i), "empty": ""}
	}
	switch i % 6 {
	case 0:
		a.DeletionVector = &DeletionVector{StorageType: "u", PathOrInlineDv: fmt.Sprintf("ab^-aqEH.-t@S}K{vb[*k^%d", i), Offset: lgPtr32(int32(i)), SizeInBytes: 40, Cardinality: int64(i%7 + 1)}
	case 3:
		a.DeletionVector = &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 2}
	}
	if i%7 == 0 {
		a.BaseRowID, a.DefaultRowCommitVersion = lgPtr(int64(i*100)), lgPtr(int64(i%4))
	}
	if i%8 == 0 {
		a.ClusteringProvider = "liquid"
	}
	return a
}

func lgPtr32(v int32) *int32 { return &v }

// The adds decoded straight from their Parquet leaves (decodeAdds) equal those written,
// field by field, over several row groups in which adds are mixed with other actions
// (protocol, metaData, txns, domains first, removes in groups of their own), with null,
// empty and multi-entry maps, deletion vectors with and without offset, and row-tracking
// fields in some rows only.
func TestCheckpointAddsRoundTrip(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 97
	acts := []Action{
		{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureDeletionVectors}, WriterFeatures: []string{FeatureDeletionVectors}}},
		{MetaData: lgMetadata("p")},
		{Txn: &Txn{AppID: "a", Version: 3}},
		{DomainMetadata: &DomainMetadata{Domain: "d", Configuration: "{}"}},
	}
	for i := range 500 {
		acts = append(acts, Action{Add: richAdd(i)})
	}
	for i := range 150 {
		acts = append(acts, Action{Remove: &Remove{Path: fmt.Sprintf("gone-%d", i), DeletionTimestamp: lgPtr(int64(i)), DataChange: true}})
	}
	data, err := encodeCheckpoint(acts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeCheckpoint(context.Background(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	js := func(a Action) string { b, _ := json.Marshal(a); return string(b) }
	if len(got) != len(acts) {
		t.Fatalf("decoded %d actions, want %d", len(got), len(acts))
	}
	for i := range acts {
		if js(got[i]) != js(acts[i]) {
			t.Fatalf("action %d:\n got %s\nwant %s", i, js(got[i]), js(acts[i]))
		}
	}

	// An open's read: the adds apart, in order, without stats; no removes.
	var adds []*Add
	others, err := decodeCheckpointLeaves(context.Background(), data, nil, &adds, memory.DefaultAllocator, forOpen)
	if err != nil {
		t.Fatal(err)
	}
	if len(others) != 4 || len(adds) != 500 {
		t.Fatalf("open read %d other actions and %d adds, want 4 and 500", len(others), len(adds))
	}
	for i, a := range adds {
		want := *richAdd(i)
		want.Stats = ""
		if js(Action{Add: a}) != js(Action{Add: &want}) {
			t.Fatalf("add %d:\n got %s\nwant %s", i, js(Action{Add: a}), js(Action{Add: &want}))
		}
	}
}

// A checkpoint laid out as other writers may lay it out: add.path required, size and
// modificationTime as int32 where they fit, partitionValues as the legacy
// list<struct<key,value>>, a deletion vector's offset as int64, no tags column. The adds
// read are the same.
func TestCheckpointAddsOtherLayouts(t *testing.T) {
	kv := arrow.StructOf(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true})
	dv := arrow.StructOf(
		arrow.Field{Name: "storageType", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "pathOrInlineDv", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "offset", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "sizeInBytes", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "cardinality", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	addType := arrow.StructOf(
		arrow.Field{Name: "path", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "partitionValues", Type: arrow.ListOf(kv), Nullable: true},
		arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "modificationTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "dataChange", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		arrow.Field{Name: "deletionVector", Type: dv, Nullable: true},
		arrow.Field{Name: "stats", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	protoType := arrow.StructOf(
		arrow.Field{Name: "minReaderVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "minWriterVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "protocol", Type: protoType, Nullable: true},
		{Name: "add", Type: addType, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	pb := b.Field(0).(*array.StructBuilder)
	ab := b.Field(1).(*array.StructBuilder)
	// Row 0: protocol; rows 1..n: adds.
	pb.Append(true)
	pb.FieldBuilder(0).(*array.Int32Builder).Append(1)
	pb.FieldBuilder(1).(*array.Int32Builder).Append(2)
	ab.AppendNull()
	const n = 40
	var want []Add
	for i := range n {
		pb.AppendNull()
		ab.Append(true)
		a := Add{Path: fmt.Sprintf("f-%d.parquet", i), Size: int64(10 + i), ModificationTime: int64(100 + i), DataChange: i%3 != 0}
		ab.FieldBuilder(0).(*array.StringBuilder).Append(a.Path)
		lb := ab.FieldBuilder(1).(*array.ListBuilder)
		if i%4 == 3 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			eb := lb.ValueBuilder().(*array.StructBuilder)
			for j := range i % 4 {
				eb.Append(true)
				eb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("k%d", j))
				if j == 1 {
					eb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
				} else {
					eb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i))
				}
				if a.PartitionValues == nil {
					a.PartitionValues = map[string]string{}
				}
				a.PartitionValues[fmt.Sprintf("k%d", j)] = map[bool]string{true: "", false: fmt.Sprintf("v%d", i)}[j == 1]
			}
		}
		ab.FieldBuilder(2).(*array.Int32Builder).Append(int32(a.Size))
		ab.FieldBuilder(3).(*array.Int64Builder).Append(a.ModificationTime)
		ab.FieldBuilder(4).(*array.BooleanBuilder).Append(a.DataChange)
		db := ab.FieldBuilder(5).(*array.StructBuilder)
		if i%5 == 0 {
			a.DeletionVector = &DeletionVector{StorageType: "u", PathOrInlineDv: fmt.Sprintf("dv%d", i), Offset: lgPtr32(int32(i)), SizeInBytes: 3, Cardinality: 1}
			db.Append(true)
			db.FieldBuilder(0).(*array.StringBuilder).Append(a.DeletionVector.StorageType)
			db.FieldBuilder(1).(*array.StringBuilder).Append(a.DeletionVector.PathOrInlineDv)
			db.FieldBuilder(2).(*array.Int64Builder).Append(int64(i))
			db.FieldBuilder(3).(*array.Int32Builder).Append(3)
			db.FieldBuilder(4).(*array.Int64Builder).Append(1)
		} else {
			db.AppendNull()
		}
		ab.FieldBuilder(6).(*array.StringBuilder).Append(fmt.Sprintf(`{"numRecords":%d}`, i))
		a.Stats = fmt.Sprintf(`{"numRecords":%d}`, i)
		want = append(want, a)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(16))
	fw, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := decodeCheckpoint(context.Background(), buf.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n+1 || got[0].Protocol == nil || got[0].Protocol.MinWriterVersion != 2 {
		t.Fatalf("decoded %d actions, first %+v", len(got), got[0])
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for i, a := range got[1:] {
		if a.Add == nil || js(a.Add) != js(&want[i]) {
			t.Fatalf("add %d:\n got %s\nwant %s", i, js(a.Add), js(&want[i]))
		}
	}
}
