package deltalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// goldenDVFile is table-with-dv-small's deletion vector file, written by Databricks: one
// bitmap holding rows 0 and 9 (testdata/protocol/README.md).
func goldenDVFile(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(protocolTablesDir, "table-with-dv-small", "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Our encoder writes the bytes Databricks wrote for the same rows, and our decoder reads
// them back: the format is the protocol's, not only our own round trip.
func TestRoaringMatchesDatabricks(t *testing.T) {
	file := goldenDVFile(t)
	if file[0] != 1 {
		t.Fatalf("version byte %d", file[0])
	}
	size := binary.BigEndian.Uint32(file[1:])
	bitmap := file[5 : 5+size]
	if crc := binary.BigEndian.Uint32(file[5+size:]); crc != crc32.ChecksumIEEE(bitmap) {
		t.Fatalf("golden CRC %08x", crc)
	}
	rows, err := DecodeRoaringBitmapArray(bitmap, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows.Rows(); !slices.Equal(got, []uint64{0, 9}) {
		t.Fatalf("rows %v, want [0 9]", got)
	}
	if enc := EncodeRoaringBitmapArray(NewRowBitmap(0, 9)); !bytes.Equal(enc, bitmap) {
		t.Fatalf("encoded\n%x\nDatabricks wrote\n%x", enc, bitmap)
	}
	data, offsets, sizes := EncodeDeletionVectorFile([]*RowBitmap{NewRowBitmap(9, 0)})
	if !bytes.Equal(data, file) || offsets[0] != 1 || sizes[0] != 36 {
		t.Fatalf("DV file %x (offset %d, size %d), Databricks wrote %x (offset 1, size 36)", data, offsets[0], sizes[0], file)
	}
}

// The protocol's inline example (docs/delta-reading.md § Deletion vectors) is in
// the older native layout; it holds rows 3, 4, 7, 11, 18 and 29.
func TestRoaringProtocolInlineExample(t *testing.T) {
	dv := &DeletionVector{StorageType: DVStorageInline, PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	rows, err := readDeletionVector(context.Background(), nil, dv, "f.parquet", 30)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows.Rows(); !slices.Equal(got, []uint64{3, 4, 7, 11, 18, 29}) {
		t.Fatalf("rows %v", got)
	}
}

// The protocol's UUID example: "ab" prefix and a Z85 UUID name
// ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin.
func TestDVFileKey(t *testing.T) {
	for _, c := range []struct {
		dv   DeletionVector
		want string
	}{
		{DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^"}, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"},
		{DeletionVector{StorageType: "u", PathOrInlineDv: "vBn[lx{q8@P<9BNH/isA"}, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"},
		{DeletionVector{StorageType: "p", PathOrInlineDv: "s3://bucket/lake/t/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"}, "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"},
		{DeletionVector{StorageType: "p", PathOrInlineDv: "s3a://bucket/lake/t/x/y.bin"}, "x/y.bin"},
	} {
		got, err := dvFileKey("s3://bucket/lake/t", &c.dv)
		if err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.dv, got, err, c.want)
		}
	}
	for _, dv := range []DeletionVector{
		{StorageType: "u", PathOrInlineDv: "short"},
		{StorageType: "u", PathOrInlineDv: "ab~-aqEH.-t@S}K{vb[*k^"},
		{StorageType: "p", PathOrInlineDv: "s3://other/t/x.bin"},
		{StorageType: "i", PathOrInlineDv: "00000"},
		{StorageType: "x", PathOrInlineDv: "00000"},
	} {
		var dvE *DeletionVectorError
		if _, err := dvFileKey("s3://bucket/lake/t", &dv); !errors.As(err, &dvE) {
			t.Errorf("%+v: %v, want *DeletionVectorError", dv, err)
		}
	}
}

// randomRows draws sets of the shapes Roaring encodes differently: sparse (arrays), dense
// (bitsets), consecutive (runs), several containers and several 2^32 buckets.
func randomRows(r *rand.Rand) []uint64 {
	var rows []uint64
	switch r.IntN(5) {
	case 0: // sparse
		for range r.IntN(200) {
			rows = append(rows, r.Uint64N(1<<20))
		}
	case 1: // dense in one container
		for i := range uint64(1 << 16) {
			if r.IntN(3) == 0 {
				rows = append(rows, i)
			}
		}
	case 2: // runs
		for range r.IntN(20) {
			start, n := r.Uint64N(1<<22), r.Uint64N(10000)
			for i := range n {
				rows = append(rows, start+i)
			}
		}
	case 3: // several buckets
		for range r.IntN(50) {
			rows = append(rows, r.Uint64N(4)<<32|r.Uint64N(1<<18))
		}
	case 4: // exactly the array/bitset boundary
		n := roaringArrayMax - 1 + r.IntN(3)
		for i := range n {
			rows = append(rows, uint64(i)*7)
		}
	}
	return rows
}

func TestRoaringRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 150 {
		rows := randomRows(r)
		want := NewRowBitmap(rows...)
		enc := EncodeRoaringBitmapArray(want)
		got, err := DecodeRoaringBitmapArray(enc, 1<<40)
		if err != nil {
			t.Fatalf("case %d (%d rows): %v", i, want.Cardinality(), err)
		}
		if !slices.Equal(got.Rows(), want.Rows()) || got.Cardinality() != want.Cardinality() {
			t.Fatalf("case %d: %d rows back, want %d", i, got.Cardinality(), want.Cardinality())
		}
		// A bound below the largest row is refused, never truncated.
		if want.Cardinality() > 0 {
			all := want.Rows()
			if _, err := DecodeRoaringBitmapArray(enc, all[len(all)-1]); err == nil {
				t.Fatalf("case %d: row %d accepted under bound %d", i, all[len(all)-1], all[len(all)-1])
			}
		}
		// Every truncation is an error, never a shorter set.
		for cut := 0; cut < len(enc); cut += 1 + len(enc)/50 {
			if _, err := DecodeRoaringBitmapArray(enc[:cut], 1<<40); err == nil {
				t.Fatalf("case %d: %d of %d bytes decoded", i, cut, len(enc))
			}
		}
	}
}

// Runs are used where they are smaller, as Spark's runOptimize does, so long deleted
// ranges cost bytes per range, not per row.
func TestRoaringRunsAreCompact(t *testing.T) {
	b := &RowBitmap{}
	for i := range uint64(1_000_000) {
		b.Add(i)
	}
	if enc := EncodeRoaringBitmapArray(b); len(enc) > 300 { // 16 one-run containers; bitsets would be 128 KiB
		t.Fatalf("a run of 1M rows took %d bytes", len(enc))
	}
}

func TestRoaringRejects(t *testing.T) {
	good := EncodeRoaringBitmapArray(NewRowBitmap(1, 5, 70000))
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for name, b := range map[string][]byte{
		"empty":     nil,
		"bad magic": mutate(func(b []byte) []byte { b[0]++; return b }),
		"trailing":  append(bytes.Clone(good), 0),
		"key top bit": mutate(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12:], 1<<31)
			return b
		}),
		"huge bucket count": mutate(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[4:], 1<<60)
			return b
		}),
		"bad cookie": mutate(func(b []byte) []byte { b[16] = 0; return b }),
	} {
		var dvE *DeletionVectorError
		if _, err := DecodeRoaringBitmapArray(b, 1<<40); !errors.As(err, &dvE) {
			t.Errorf("%s: %v, want *DeletionVectorError", name, err)
		}
	}
}

func TestZ85RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		b := make([]byte, 4*r.IntN(20))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		got, err := z85Decode(z85Encode(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%x: %x %v", b, got, err)
		}
	}
	if _, err := z85Decode("abcd"); err == nil {
		t.Fatal("length 4 accepted")
	}
	if _, err := z85Decode("#####"); err == nil {
		t.Fatal("overflowing group accepted")
	}
}

func TestDeletionVectorWriteRead(t *testing.T) {
	ctx := context.Background()
	tbl := openDir(t, t.TempDir())
	a, b := NewRowBitmap(0, 3, 99), NewRowBitmap(7)
	dvs, err := WriteDeletionVectorFile(ctx, tbl.Store(), "ab1", []*RowBitmap{a, b})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []*RowBitmap{a, b} {
		got, err := readDeletionVector(ctx, tbl.Store(), dvs[i], "f", 100)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Rows(), want.Rows()) || dvs[i].Cardinality != want.Cardinality() {
			t.Fatalf("DV %d: %v, want %v", i, got.Rows(), want.Rows())
		}
	}
	key, _ := dvFileKey(tbl.Store().URL(), dvs[0])
	if filepath.Dir(key) != "ab1" {
		t.Fatalf("DV file %s not under its prefix", key)
	}
	inline := InlineDeletionVector(NewRowBitmap(2, 4))
	got, err := readDeletionVector(ctx, tbl.Store(), inline, "f", 5)
	if err != nil || !slices.Equal(got.Rows(), []uint64{2, 4}) {
		t.Fatalf("inline: %v %v", got.Rows(), err)
	}
	// A descriptor that disagrees with the file is refused, never half-read.
	for name, dv := range map[string]DeletionVector{
		"cardinality": {StorageType: "u", PathOrInlineDv: dvs[0].PathOrInlineDv, Offset: dvs[0].Offset, SizeInBytes: dvs[0].SizeInBytes, Cardinality: 2},
		"size":        {StorageType: "u", PathOrInlineDv: dvs[0].PathOrInlineDv, Offset: dvs[0].Offset, SizeInBytes: dvs[0].SizeInBytes + 1, Cardinality: 3},
		"offset":      {StorageType: "u", PathOrInlineDv: dvs[0].PathOrInlineDv, Offset: lgPtr(int32(2)), SizeInBytes: dvs[0].SizeInBytes, Cardinality: 3},
		"missing":     {StorageType: "u", PathOrInlineDv: "ab1" + z85Encode(make([]byte, 16)), Offset: dvs[0].Offset, SizeInBytes: dvs[0].SizeInBytes, Cardinality: 3},
	} {
		var dvE *DeletionVectorError
		if _, err := readDeletionVector(ctx, tbl.Store(), &dv, "f", 100); !errors.As(err, &dvE) {
			t.Errorf("%s: %v, want *DeletionVectorError", name, err)
		}
	}
	// A flipped bit in the bitmap fails its CRC.
	data, _ := os.ReadFile(filepath.Join(tbl.Store().URL()[len("file://"):], key))
	data[10] ^= 1
	if err := os.WriteFile(filepath.Join(tbl.Store().URL()[len("file://"):], key), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var dvE *DeletionVectorError
	if _, err := readDeletionVector(ctx, tbl.Store(), dvs[0], "f", 100); !errors.As(err, &dvE) {
		t.Fatalf("corrupt DV: %v", err)
	}
	if _, err := WriteDeletionVectorFile(ctx, tbl.Store(), "../x", []*RowBitmap{a}); err == nil {
		t.Fatal("prefix with a slash accepted")
	}
}

// FuzzDecodeRoaringBitmapArray: no input panics or allocates beyond its bound, and a set
// that decodes re-encodes to a bitmap that decodes to the same set.
//
//	go test ./deltalog/ -run '^$' -fuzz FuzzDecodeRoaringBitmapArray -fuzztime 1m
func FuzzDecodeRoaringBitmapArray(f *testing.F) {
	f.Add(EncodeRoaringBitmapArray(NewRowBitmap(0, 9)))
	f.Add(EncodeRoaringBitmapArray(NewRowBitmap(1<<32, 1<<33+5)))
	runs := &RowBitmap{}
	for i := range uint64(70000) {
		runs.Add(i)
	}
	f.Add(EncodeRoaringBitmapArray(runs))
	dense := &RowBitmap{}
	for i := uint64(0); i < 60000; i += 3 {
		dense.Add(i)
	}
	f.Add(EncodeRoaringBitmapArray(dense))
	inline, _ := z85Decode("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L")
	f.Add(inline)
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := DecodeRoaringBitmapArray(data, 1<<22)
		if err != nil {
			return
		}
		again, err := DecodeRoaringBitmapArray(EncodeRoaringBitmapArray(rows), 1<<22)
		if err != nil {
			t.Fatalf("re-encoded bitmap does not decode: %v", err)
		}
		if !slices.Equal(again.Rows(), rows.Rows()) {
			t.Fatal("re-encoded bitmap holds other rows")
		}
	})
}
