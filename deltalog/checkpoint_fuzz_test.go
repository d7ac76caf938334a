package deltalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FuzzCheckpointEncoderMatchesPqarrow holds the checkpoint encoder (checkpoint_encode.go,
// parquetio's hybrid.go, pageheader.go and WritePlainChunk; docs/decisions/0020-checkpoint-pages-encoded-here.md) to the
// pqarrow encoder it replaced (checkpoint_pqarrow_test.go) on action sets built from the
// fuzz input (fuzzActions): the files must be byte for byte the same, and reading one back
// must give the actions written (as a checkpoint keeps them: cpRead) through every reader
// of this package (the open's leaf decoder of the adds, decodeCheckpoint, the tombstones'
// leaf decoder, the footer's null counts) and through Arrow.
//
//	go test ./deltalog -run '^$' -fuzz FuzzCheckpointEncoderMatchesPqarrow -fuzztime 20m -parallel 1
func FuzzCheckpointEncoderMatchesPqarrow(f *testing.F) {
	for _, s := range checkpointFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		acts, byDay, rows := fuzzActions(in)
		defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
		checkpointBatchRows = rows
		checkCheckpointRoundTrip(t, acts, byDay)
	})
}

// checkCheckpointRoundTrip encodes acts both ways (byDay as encodeCheckpointByDay) and
// checks the files are equal and read back as written.
func checkCheckpointRoundTrip(t *testing.T, acts []Action, byDay bool) {
	t.Helper()
	want, err := encodeCheckpointPqarrow(acts, byDay)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeCheckpointByDay(acts, byDay)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d actions, by day %v, %d a group: %d bytes, pqarrow's %d, differing from byte %d",
			len(acts), byDay, checkpointBatchRows, len(got), len(want), firstDiff(got, want))
	}

	var written []Action
	for _, g := range checkpointRowGroups(acts, byDay) {
		for _, a := range g {
			written = append(written, cpRead(a))
		}
	}
	ctx := context.Background()
	diff := func(what string, got, want []Action) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d actions, want %d", what, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%s: action %d of %d\n got %s\nwant %s", what, i, len(want), shortJSON(got[i]), shortJSON(want[i]))
			}
		}
	}
	diff("Arrow", arrowActions(t, got), written)
	ours, err := decodeCheckpoint(ctx, got, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff("decodeCheckpoint", ours, written)

	// The open's read: the adds apart, without stats; no removes.
	var adds []*Add
	others, err := decodeCheckpointLeaves(ctx, got, nil, &adds, memory.DefaultAllocator, forOpen)
	if err != nil {
		t.Fatal(err)
	}
	var wantOthers, wantAdds, wantRemoves []Action
	for _, a := range written {
		switch {
		case a.Add != nil:
			noStats := *a.Add
			noStats.Stats = ""
			wantAdds = append(wantAdds, Action{Add: &noStats})
		case a.Remove != nil:
			wantRemoves = append(wantRemoves, a)
		default:
			wantOthers = append(wantOthers, a)
		}
	}
	gotAdds := make([]Action, len(adds))
	for i, a := range adds {
		gotAdds[i] = Action{Add: a}
	}
	diff("open's adds", gotAdds, wantAdds)
	diff("open's other actions", others, wantOthers)

	// The tombstones' leaf decode, keys first then the rest, and the carry base.
	p, err := newCheckpointPart(got)
	if err != nil {
		t.Fatal(err)
	}
	l := &lazyTombstones{}
	l.add(p)
	keyed, err := l.keyed()
	if err != nil {
		t.Fatal(err)
	}
	asActions := func(rs []*Remove, keysOnly bool) []Action {
		out := make([]Action, len(rs))
		for i, r := range rs {
			c := *r
			if keysOnly {
				c = Remove{Path: r.Path, DeletionTimestamp: r.DeletionTimestamp, DeletionVector: r.DeletionVector}
			}
			out[i] = Action{Remove: &c}
		}
		return out
	}
	var wantKeys []*Remove
	for _, a := range wantRemoves {
		wantKeys = append(wantKeys, a.Remove)
	}
	diff("keyed tombstones", asActions(keyed, true), asActions(wantKeys, true))
	base, err := l.carryBase()
	if err != nil {
		t.Fatal(err)
	}
	// No base when a remove group is not one run of column chunks: arrow-go spilled a
	// footer entry past 4 KiB between two of its chunks (parquetio.FooterEntrySpill), as pqarrow did.
	contiguous := true
	for rg, g := range p.md.RowGroups {
		for col := range p.md.Schema.NumColumns() {
			if p.md.Schema.Column(col).ColumnPath().String() != "remove.path" {
				continue
			}
			if nulls, ok := chunkNullCount(p.md, rg, col); ok && nulls < g.NumRows {
				if _, err := groupOf(p.md, rg, got); err != nil {
					contiguous = false
				}
			}
		}
	}
	if n := len(wantRemoves); (n > 0 && contiguous) != (base != nil) || base != nil && base.n != n {
		t.Fatalf("carry base of %d removes (nil %v) for %d removes (their row groups contiguous: %v)", func() int {
			if base == nil {
				return 0
			}
			return base.n
		}(), base == nil, n, contiguous)
	}
	all, err := l.load()
	if err != nil {
		t.Fatal(err)
	}
	diff("tombstones", asActions(all, false), wantRemoves)

	// The footer's null counts are arrow-go's Statistics'.
	md := p.md
	for rg := range md.RowGroups {
		for col := range md.Schema.NumColumns() {
			cc, err := md.RowGroup(rg).ColumnChunk(col)
			if err != nil {
				t.Fatal(err)
			}
			st, err := cc.Statistics()
			if err != nil {
				t.Fatal(err)
			}
			wantOK := st != nil && st.HasNullCount()
			var wantN int64
			if wantOK {
				wantN = st.NullCount()
			}
			if n, ok := chunkNullCount(md, rg, col); n != wantN || ok != wantOK {
				t.Fatalf("row group %d column %s: null count %d, %v; Statistics say %d, %v", rg, md.Schema.Column(col).Path(), n, ok, wantN, wantOK)
			}
		}
	}
}

// cpRead is a as a checkpoint keeps it and this package reads it back: empty maps read as
// nil (structCols.strMap, mapRows), a metaData's format provider "parquet" when empty and
// its partition columns an empty list when nil (required), a protocol's feature lists
// only at reader 3 / writer 7 and there never nil, a remove's stats and tags not kept.
func cpRead(a Action) Action {
	noEmpty := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return nil
		}
		return m
	}
	list := func(l []string, present bool) []string {
		if !present {
			return nil
		}
		if l == nil {
			return []string{}
		}
		return l
	}
	switch {
	case a.Add != nil:
		c := *a.Add
		c.PartitionValues, c.Tags = noEmpty(c.PartitionValues), noEmpty(c.Tags)
		a.Add = &c
	case a.Remove != nil:
		c := *a.Remove
		c.PartitionValues, c.Stats, c.Tags = noEmpty(c.PartitionValues), "", nil
		a.Remove = &c
	case a.MetaData != nil:
		c := *a.MetaData
		if c.Format.Provider == "" {
			c.Format.Provider = "parquet"
		}
		c.Format.Options, c.Configuration = noEmpty(c.Format.Options), noEmpty(c.Configuration)
		c.PartitionColumns = list(c.PartitionColumns, true)
		a.MetaData = &c
	case a.Protocol != nil:
		c := *a.Protocol
		c.ReaderFeatures = list(c.ReaderFeatures, c.MinReaderVersion >= 3)
		c.WriterFeatures = list(c.WriterFeatures, c.MinWriterVersion >= 7)
		a.Protocol = &c
	}
	return a
}

// arrowActions are the actions of a checkpoint as Arrow reads every leaf of it, through
// structCols (the adds as the Arrow decode of them read them before decodeAdds).
func arrowActions(t *testing.T, data []byte) []Action {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var out []Action
	for rr.Next() {
		rec := rr.RecordBatch()
		chunk := map[string]structCols{}
		for i, f := range rec.Schema().Fields() {
			chunk[f.Name] = newStructCols(rec.Column(i).(*array.Struct))
		}
		for i := range int(rec.NumRows()) {
			var a Action
			if s := chunk["add"]; s.valid(i) {
				a.Add = &Add{Path: s.str("path", i), PartitionValues: s.strMap("partitionValues", i), Size: s.i64("size", i),
					ModificationTime: s.i64("modificationTime", i), DataChange: s.boolean("dataChange", i), Tags: s.strMap("tags", i),
					DeletionVector: s.deletionVector(i), BaseRowID: s.i64p("baseRowId", i), DefaultRowCommitVersion: s.i64p("defaultRowCommitVersion", i),
					ClusteringProvider: s.str("clusteringProvider", i), Stats: s.str("stats", i)}
			}
			a.Remove, _ = chunk["remove"].remove(i)
			a.Txn, _ = chunk["txn"].txn(i)
			a.MetaData, _ = chunk["metaData"].metadata(i)
			a.Protocol, _ = chunk["protocol"].protocol(i)
			a.DomainMetadata, _ = chunk["domainMetadata"].domain(i)
			if a.count() != 1 {
				t.Fatalf("Arrow: row %d holds %d actions", len(out), a.count())
			}
			out = append(out, a)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shortJSON is a's JSON, its long strings cut.
func shortJSON(a Action) string {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Sprintf("%+v", a)
	}
	if len(b) > 600 {
		return fmt.Sprintf("%s ... (%d bytes) ... %s", b[:300], len(b), b[len(b)-200:])
	}
	return string(b)
}

// fuzzBytes hands out the fuzz input a byte at a time; past its end, zeros (so that a
// short input ends in typical values: choice 0 is the usual one).
type fuzzBytes struct {
	b    []byte
	n    int // a counter for typical values, paths and times
	text int // bytes of strings made so far (bounded: fuzzTextBudget)
}

// fuzzTextBudget bounds the string bytes made for one input's actions, fuzzActionBudget
// the string bytes its actions hold (repeats counted: a 200 KB string repeated 2,049 times
// took 4.6 GB and 27 s an exec, and hung the fuzzer; 7.4 MB of them, 1.3 GB and 4.7 s),
// room for a 1 MiB data page of add.stats and 4 KiB statistics many times over, and
// fuzzMaxActions their number, so that an exec stays well under a second.
const (
	fuzzTextBudget   = 8 << 20
	fuzzActionBudget = 4 << 20
	fuzzMaxActions   = 6000
	fuzzMaxGroups    = 40
)

// fuzzActionBytes is the bytes of the strings a holds (its fields', its maps' keys and
// values, its lists'), the measure of fuzzActionBudget.
func fuzzActionBytes(a Action) int {
	var walk func(v reflect.Value) int
	walk = func(v reflect.Value) int {
		n := 0
		switch v.Kind() {
		case reflect.String:
			n = v.Len()
		case reflect.Pointer:
			if !v.IsNil() {
				n = walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				n += walk(v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				n += walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				n += walk(it.Key()) + walk(it.Value())
			}
		}
		return n
	}
	return walk(reflect.ValueOf(a))
}

func (f *fuzzBytes) byte() byte {
	if len(f.b) == 0 {
		return 0
	}
	v := f.b[0]
	f.b = f.b[1:]
	return v
}

func (f *fuzzBytes) u16() int { return int(f.byte()) | int(f.byte())<<8 }

// The run lengths a repeat takes: about a literal group (8), an indicator's 63 groups
// (504), arrow-go's WriteBatchSize (1024) and a row group's rows.
var fuzzRepeats = []int{1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 503, 504, 505, 511, 512, 513, 1016, 1023, 1024, 1025, 2047, 2048, 2049}

// The rows a row group takes at most (checkpointBatchRows).
var fuzzGroupRows = []int{50_000, 1, 2, 3, 7, 8, 9, 63, 64, 65, 504, 512, 1023, 1024, 1025}

func (f *fuzzBytes) str() string {
	f.n++
	c := f.byte() % 13
	long := func(n int) string {
		ch := f.byte()
		if f.text+n > fuzzTextBudget {
			return "x"
		}
		f.text += n
		return strings.Repeat(string(rune(ch)), n)[:n]
	}
	switch c {
	case 1:
		return ""
	case 2:
		return "p=ü 日本/😀 \u0301\u200d.parquet"
	case 3:
		return "p=a%20b%2Fc/part%3D1%25%C3%BC.parquet"
	case 4:
		return "\xff\xfe\x00\xc3"
	case 5:
		b := make([]byte, f.byte()%24)
		for i := range b {
			b[i] = f.byte()
		}
		f.text += len(b)
		return string(b)
	case 6:
		return long(f.u16())
	case 7:
		return long(4095) // MaxStatsSize (4 KiB) less one, equal, one more
	case 8:
		return long(4096)
	case 9:
		return long(4097)
	case 10:
		return []string{"a", "a\x00", "ab", "b", "\x00", "\xff", "\xff\xff", "A", "a\xff"}[f.byte()%9]
	case 11:
		return long(200_000 + f.u16())
	}
	return fmt.Sprintf("p=%d/part-%05d-%s.parquet", f.n%3, f.n, "c000")
}

func (f *fuzzBytes) int64() int64 {
	f.n++
	switch f.byte() % 12 {
	case 1:
		return 0
	case 2:
		return 1
	case 3:
		return -1
	case 4:
		return math.MinInt64
	case 5:
		return math.MaxInt64
	case 6:
		return math.MinInt32
	case 7:
		return math.MaxInt32
	case 8:
		var b [8]byte
		for i := range b {
			b[i] = f.byte()
		}
		return int64(binary.LittleEndian.Uint64(b[:]))
	case 9:
		return int64(f.byte())
	case 10:
		return -1_700_000_000_000 - int64(f.n)
	case 11:
		return 1 << 53
	}
	return 1_700_000_000_000 + int64(f.n)*86_399_999
}

func (f *fuzzBytes) int32() int32 {
	f.n++
	switch f.byte() % 8 {
	case 1:
		return 0
	case 2:
		return -1
	case 3:
		return math.MinInt32
	case 4:
		return math.MaxInt32
	case 5:
		return int32(f.u16() | f.u16()<<16)
	case 6:
		return int32(f.byte())
	}
	return int32(f.n)
}

func (f *fuzzBytes) optInt64() *int64 {
	if f.byte()%3 == 0 {
		return nil
	}
	v := f.int64()
	return &v
}

func (f *fuzzBytes) boolean() bool { return f.byte()%2 == 1 }

func (f *fuzzBytes) strMap() map[string]string {
	switch f.byte() % 7 {
	case 1:
		return map[string]string{}
	case 2:
		return map[string]string{"p": f.str()}
	case 3:
		m := map[string]string{}
		for range 1 + f.byte()%4 {
			m[f.str()] = f.str()
		}
		return m
	case 4:
		// Many entries: repetition and definition levels in long runs and literals,
		// crossing arrow-go's batches of levels.
		n, pattern := 1+f.u16()%1200, f.byte()
		m := make(map[string]string, n)
		for i := range n {
			v := ""
			switch pattern % 4 {
			case 1:
				v = "v"
			case 2:
				if i%2 == 0 {
					v = "v"
				}
			case 3:
				if i%int(1+pattern/4) == 0 {
					v = fmt.Sprint(i)
				}
			}
			m[fmt.Sprintf("k%05d", i)] = v
		}
		return m
	case 5:
		return map[string]string{"": "", "a": ""}
	case 6:
		return map[string]string{"p": "", "q": "1"}
	}
	return nil
}

func (f *fuzzBytes) list() []string {
	switch f.byte() % 5 {
	case 1:
		return []string{}
	case 2:
		l := make([]string, 1+f.byte()%5)
		for i := range l {
			l[i] = f.str()
		}
		return l
	case 3:
		l := make([]string, f.u16()%700)
		for i := range l {
			l[i] = []string{"deletionVectors", "", "columnMapping"}[(i*i)%3]
		}
		return l
	case 4:
		return []string{"deletionVectors", "v2Checkpoint"}
	}
	return nil
}

func (f *fuzzBytes) dv() *DeletionVector {
	c := f.byte() % 6
	if c == 0 {
		return nil
	}
	d := &DeletionVector{StorageType: []string{"u", "i", "p", "", "x"}[c-1], PathOrInlineDv: f.str()}
	if f.byte()%2 == 1 {
		off := f.int32()
		d.Offset = &off
	}
	d.SizeInBytes, d.Cardinality = f.int32(), f.int64()
	return d
}

func (f *fuzzBytes) add() *Add {
	a := &Add{Path: f.str(), PartitionValues: f.strMap(), Size: f.int64(), ModificationTime: f.int64(), DataChange: f.boolean(),
		Tags: f.strMap(), DeletionVector: f.dv(), BaseRowID: f.optInt64(), DefaultRowCommitVersion: f.optInt64()}
	a.ClusteringProvider, a.Stats = f.str(), f.str()
	return a
}

func (f *fuzzBytes) remove() *Remove {
	r := &Remove{Path: f.str(), DeletionTimestamp: f.optInt64(), DataChange: f.boolean()}
	if c := f.byte() % 3; c > 0 {
		r.ExtendedFileMetadata = lgPtr(c == 2)
	}
	r.PartitionValues, r.Size, r.Stats, r.Tags = f.strMap(), f.optInt64(), f.str(), f.strMap()
	r.DeletionVector, r.BaseRowID, r.DefaultRowCommitVersion = f.dv(), f.optInt64(), f.optInt64()
	return r
}

// fuzzActions builds the actions of a checkpoint, whether its removes are grouped by day
// and checkpointBatchRows from in: a header of two bytes (by day, group rows), then
// operations, each a byte and what it reads: an add, a remove, a txn, a metaData, a
// protocol or a domainMetadata, the last action repeated, the last few repeated in turn,
// or an add whose stats bring the add.stats column to about one data page (1 MiB).
func fuzzActions(in []byte) (acts []Action, byDay bool, groupRows int) {
	f := &fuzzBytes{b: in}
	byDay = f.byte()%2 == 1
	groupRows = fuzzGroupRows[int(f.byte())%len(fuzzGroupRows)]
	statsBytes := 0 // of the add.stats column, plain-encoded, in the first row group
	held := 0       // the actions' string bytes (fuzzActionBudget)
	for len(f.b) > 0 && len(acts) < fuzzMaxActions && held <= fuzzActionBudget {
		var a Action
		switch op := f.byte() % 12; op {
		case 0, 1, 2:
			a.Add = f.add()
		case 3, 4:
			a.Remove = f.remove()
		case 5:
			a.Txn = &Txn{AppID: f.str(), Version: f.int64(), LastUpdated: f.optInt64()}
		case 6:
			m := &Metadata{ID: f.str(), Name: f.str(), Description: f.str(), Format: Format{Provider: f.str(), Options: f.strMap()}}
			m.SchemaString, m.PartitionColumns, m.CreatedTime, m.Configuration = f.str(), f.list(), f.optInt64(), f.strMap()
			a.MetaData = m
		case 7:
			versions := []int{1, 2, 3, 4, 7, 0, -1, math.MaxInt32, math.MinInt32, 5, 6}
			p := &Protocol{MinReaderVersion: versions[int(f.byte())%len(versions)], MinWriterVersion: versions[int(f.byte())%len(versions)]}
			p.ReaderFeatures, p.WriterFeatures = f.list(), f.list()
			a.Protocol = p
		case 8:
			a.DomainMetadata = &DomainMetadata{Domain: f.str(), Configuration: f.str(), Removed: f.boolean()}
		case 9, 10:
			// The last action (op 9) or the last few in turn (op 10), repeated.
			k := fuzzRepeats[int(f.byte())%len(fuzzRepeats)]
			m := 1
			if op == 10 {
				m = 1 + int(f.byte()%8)
			}
			m = min(m, len(acts))
			last := acts[len(acts)-m:]
			sizes := make([]int, m)
			for i, a := range last {
				sizes[i] = fuzzActionBytes(a)
			}
			for i := 0; i < k*m && len(acts) < fuzzMaxActions; i++ {
				if held += sizes[i%m]; held > fuzzActionBudget {
					break
				}
				acts = append(acts, last[i%m])
				if a := last[i%m].Add; a != nil && a.Stats != "" {
					statsBytes += 4 + len(a.Stats)
				}
			}
			continue
		case 11:
			// An add whose stats make the column's values one data page (1 MiB) less
			// a few bytes, exactly, or a few bytes more.
			a.Add = f.add()
			n := 1<<20 - statsBytes - 4 + int(f.byte()%5) - 2
			if n < 1 || f.text+n > fuzzTextBudget {
				continue
			}
			f.text += n
			a.Add.Stats = strings.Repeat("s", n)
		}
		if held += fuzzActionBytes(a); held > fuzzActionBudget {
			break
		}
		if a.Add != nil && a.Add.Stats != "" {
			statsBytes += 4 + len(a.Add.Stats)
		}
		acts = append(acts, a)
	}
	// At most fuzzMaxGroups row groups (each costs the oracle ~2 ms).
	for len(acts) > 0 && len(checkpointRowGroupsOf(acts, byDay, groupRows)) > fuzzMaxGroups {
		acts = acts[:len(acts)*3/4]
	}
	return acts, byDay, groupRows
}

// The actions of an input stay within fuzzActionBudget, and those of the seeds within it
// untouched by the bound.
func TestFuzzActionsBounded(t *testing.T) {
	in, err := os.ReadFile("testdata/fuzz/FuzzCheckpointEncoderMatchesPqarrow/repeats-of-200k-strings-past-the-budget")
	if err != nil {
		t.Fatal(err)
	}
	// The corpus file's one value, []byte("..."), as Go quotes it.
	quoted := strings.TrimSuffix(strings.TrimPrefix(strings.Split(string(in), "\n")[1], "[]byte("), ")")
	blob, err := strconv.Unquote(quoted)
	if err != nil {
		t.Fatal(err)
	}
	total := func(acts []Action) int {
		n := 0
		for _, a := range acts {
			n += fuzzActionBytes(a)
		}
		return n
	}
	acts, _, _ := fuzzActions([]byte(blob))
	if n := total(acts); n > fuzzActionBudget {
		t.Errorf("%d actions of %d bytes, past the budget of %d", len(acts), n, fuzzActionBudget)
	}
	for i, s := range checkpointFuzzSeeds() {
		if acts, _, _ := fuzzActions(s); total(acts) > fuzzActionBudget {
			t.Errorf("seed %d: %d actions of %d bytes, past the budget of %d", i, len(acts), total(acts), fuzzActionBudget)
		}
	}
}

// checkpointRowGroupsOf is checkpointRowGroups with checkpointBatchRows at rows.
func checkpointRowGroupsOf(acts []Action, byDay bool, rows int) [][]Action {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = rows
	return checkpointRowGroups(acts, byDay)
}

// fuzzSeed assembles a fuzz input: the header (by day, index in fuzzGroupRows), then
// the operations' bytes.
func fuzzSeed(byDay bool, groupRows byte, ops ...byte) []byte {
	h := byte(0)
	if byDay {
		h = 1
	}
	return append([]byte{h, groupRows}, ops...)
}

// Operations of fuzzActions (the byte before their fields).
const (
	fzAdd      = 0
	fzRemove   = 3
	fzTxn      = 5
	fzMetaData = 6
	fzProtocol = 7
	fzDomain   = 8
	fzRepeat   = 9
	fzPattern  = 10
	fzFill     = 11
)

// fzRep is the index in fuzzRepeats of a run of n.
func fzRep(n int) byte {
	for i, r := range fuzzRepeats {
		if r == n {
			return byte(i)
		}
	}
	panic(n)
}

// fzGroup is the index in fuzzGroupRows of n rows a group.
func fzGroup(n int) byte {
	for i, r := range fuzzGroupRows {
		if r == n {
			return byte(i)
		}
	}
	panic(n)
}

// checkpointFuzzSeeds are the fuzz test's seed corpus: the edges the encoder must get
// right, each also a case of the plain test run.
func checkpointFuzzSeeds() [][]byte {
	seeds := [][]byte{
		fuzzSeed(false, 0),
		fuzzSeed(false, 0, fzAdd),
		fuzzSeed(true, 0, fzRemove),
		fuzzSeed(false, 0, fzProtocol, 2, 4, 1, 4, fzMetaData, 0, 0, 0, 1, 1, 0, 2, 1, 5, fzTxn, 0, 0, 1, fzDomain, 0, 1, 1),
	}
	// Every string choice in every string of an add and a remove.
	for c := range byte(13) {
		seeds = append(seeds, fuzzSeed(false, 0, fzAdd, c, 3, 0, 0, 1, 2, 1, c, c, 0, 1, 3, 1, c, c, 1, 0, c, fzRemove, c, 1, 0, 1, 2, 3, c, 1, 2, c, 0, c, 1, 0, 0, 1, 1, 2, 1))
	}
	// Extreme integers: every int64 and int32 choice in sizes, times and deletion vectors.
	for c := range byte(12) {
		seeds = append(seeds, fuzzSeed(true, 0, fzAdd, 0, 0, c, c, 1, 0, 1, 0, 1, c, 0, c, 1, c, 1, c, fzRemove, 0, 1, c, 0, 0, 0, 1, c, 0, 0, 2, 0, 1, c, c, c, 1, c, 1, c,
			fzRepeat, fzRep(9), fzRemove, 0, 1, c+1))
	}
	// Runs of levels at the encoder's edges: a run of exactly 8, literal groups crossing
	// an indicator's 504 values, arrow-go's batches of 1024, and row groups that split
	// them; values alike and in turn.
	for _, rows := range []int{50_000, 1, 7, 8, 504, 512, 1024} {
		g := fzGroup(rows)
		seeds = append(seeds,
			fuzzSeed(false, g, fzAdd, fzRepeat, fzRep(7), fzAdd, 0, 1, 0, 0, 0, 1, fzRepeat, fzRep(8)),
			fuzzSeed(false, g, fzAdd, 0, 0, 0, 0, 0, 1, fzTxn, fzPattern, fzRep(503), 1, fzAdd, 0, 0, 0, 0, 0, 0, fzPattern, fzRep(513), 2),
			fuzzSeed(true, g, fzRemove, 0, 1, 1, fzRemove, 0, 0, 0, 0, 2, fzPattern, fzRep(1023), 1, fzRemove, 0, 2, 3, fzPattern, fzRep(1025), 2),
			fuzzSeed(false, g, fzAdd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fzRepeat, fzRep(1024), fzAdd, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, fzPattern, fzRep(504), 2),
		)
	}
	// Maps of many entries (levels of one row crossing 504, 512 and 1024), in turn with
	// empty and null ones.
	for _, n := range []int{8, 503, 504, 505, 511, 512, 1023, 1024, 1025} {
		for pattern := range byte(4) {
			seeds = append(seeds, fuzzSeed(false, 0, fzAdd, 0, 4, byte((n-1)&0xff), byte((n-1)>>8), pattern, 0, 0, 0, 4, byte(n&0xff), byte(n>>8), 1+pattern,
				fzAdd, 0, 1, 0, 0, 0, 0, fzPattern, fzRep(9), 2))
		}
	}
	// The add.stats column a few bytes short of one data page, exactly one, and past it;
	// after many adds; and in a row group of its own.
	for d := range byte(5) {
		seeds = append(seeds,
			fuzzSeed(false, 0, fzAdd, fzFill, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, d),
			fuzzSeed(false, 0, fzAdd, fzRepeat, fzRep(1025), fzFill, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, d),
			fuzzSeed(false, 0, fzProtocol, fzFill, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, d, fzAdd),
		)
	}
	// The add.stats column's first batch of levels (WriteBatchSize, 1024) one byte short
	// of a data page, exactly one (arrow-go cuts a page there: two pages, not one), one
	// more; the other adds' stats null.
	for d := range byte(5) {
		seeds = append(seeds, fuzzSeed(false, 0, fzFill, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, d, fzAdd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, fzRepeat, fzRep(1024)))
	}
	seeds = append(seeds,
		// Statistics of 2040-byte strings: a min and a max (4080 bytes) that pass
		// arrow-go's 4 KiB footer-entry buffer only with the entry's other fields.
		fuzzSeed(false, 0, fzAdd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0xf8, 0x07, 's'),
		// Strings whose order differs by bytes signed and unsigned (UTF-8, 0xff) in
		// every string column of an add and a remove.
		fuzzSeed(false, 0, fzAdd, 2, 2, 2, 0, 0, 0, 0, 3, 1, 2, 2, 2, 2, 1, 2, 0, 0, 2, 2,
			fzAdd, 0, 2, 0, 0, 0, 0, 0, 3, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
			fzAdd, 10, 5, 2, 10, 6, 0, 0, 0, 3, 1, 10, 5, 10, 6, 5, 10, 5, 0, 0, 0, 0, 10, 6, 10, 8,
			fzRemove, 4, 0, 0, 0, 2, 4, 0, 4, 0, 1, 4, fzRemove, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0),
	)
	// Negative, zero and positive integers in one column: every int64 and int32 leaf.
	for _, byDay := range []bool{false, true} {
		seeds = append(seeds, fuzzSeed(byDay, 0,
			fzAdd, 0, 0, 3, 3, 1, 0, 1, 0, 1, 2, 2, 3, 1, 3, 1, 3, 0, 0,
			fzAdd, 0, 0, 5, 5, 0, 0, 1, 0, 1, 4, 4, 5, 1, 5, 1, 5, 0, 0,
			fzAdd, 0, 0, 4, 4, 0, 0, 1, 0, 1, 3, 3, 4, 1, 4, 1, 4, 0, 0,
			fzRemove, 0, 1, 3, 0, 0, 0, 1, 3, 0, 0, 1, 0, 1, 2, 2, 3, 1, 3, 1, 3,
			fzRemove, 0, 1, 5, 1, 1, 0, 1, 5, 0, 0, 1, 0, 1, 4, 4, 5, 1, 5, 1, 5,
			fzRemove, 0, 1, 4, 0, 2, 0, 1, 4, 0, 0, 1, 0, 1, 3, 3, 4, 1, 4, 1, 4,
			fzTxn, 0, 3, 1, 3, fzTxn, 0, 5, 1, 4, fzMetaData, 0, 0, 0, 0, 0, 0, 0, 1, 3,
			fzMetaData, 0, 0, 0, 0, 0, 0, 0, 1, 5, fzProtocol, 6, 7, 0, 0, fzProtocol, 7, 8, 0, 0))
	}
	return seeds
}
