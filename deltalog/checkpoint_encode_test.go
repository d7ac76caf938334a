package deltalog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// variedActions are n actions of every kind the checkpoint holds, drawn by r, with every
// optional field both set and unset: nil, empty and non-empty maps and lists, empty
// partition values (written null), deletion vectors with and without an offset, the
// protocol's feature lists at reader 3 / writer 7 and below. When sparse, the optional
// fields are only ever unset or empty, so that many leaves of a row group have levels and
// no value, in every pattern (checkpointEncoder's path without a column chunk writer).
func variedActions(r *rand.Rand, n int, sparse bool) []Action {
	ptr := func(v int64) *int64 {
		if sparse || r.IntN(2) == 0 {
			return nil
		}
		return &v
	}
	strMap := func() map[string]string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]string{}
		}
		if sparse {
			return nil
		}
		m := map[string]string{}
		for i := range 1 + r.IntN(3) {
			v := fmt.Sprint(r.IntN(5))
			if r.IntN(3) == 0 {
				v = ""
			}
			m[fmt.Sprintf("k%d", i*7%5)] = v
		}
		return m
	}
	list := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		if sparse {
			return nil
		}
		return []string{"deletionVectors", "columnMapping", "v2Checkpoint"}[:1+r.IntN(3)]
	}
	dv := func() *DeletionVector {
		if sparse || r.IntN(2) == 0 {
			return nil
		}
		d := &DeletionVector{StorageType: "u", PathOrInlineDv: fmt.Sprintf("ab^-aW0001%04d", r.IntN(1000)), SizeInBytes: int32(r.IntN(100)), Cardinality: int64(r.IntN(50))}
		if r.IntN(2) == 0 {
			off := int32(r.IntN(10))
			d.Offset = &off
		}
		return d
	}
	str := func(s string) string {
		if r.IntN(3) == 0 {
			return ""
		}
		return s
	}
	var acts []Action
	for i := range n {
		switch k := r.IntN(10); {
		case k == 0:
			p := &Protocol{MinReaderVersion: 1 + r.IntN(3), MinWriterVersion: 2 + r.IntN(6)}
			p.ReaderFeatures, p.WriterFeatures = list(), list()
			acts = append(acts, Action{Protocol: p})
		case k == 1:
			m := lgMetadata()
			m.Name, m.Description, m.Format.Provider = str("t"), str("a table"), str("parquet")
			m.Format.Options, m.Configuration, m.PartitionColumns, m.CreatedTime = strMap(), strMap(), list(), ptr(17e11)
			acts = append(acts, Action{MetaData: m})
		case k == 2:
			acts = append(acts, Action{Txn: &Txn{AppID: str(fmt.Sprint("app", i)), Version: int64(i), LastUpdated: ptr(int64(i))}})
		case k == 3:
			acts = append(acts, Action{DomainMetadata: &DomainMetadata{Domain: fmt.Sprint("d", i), Configuration: str(`{"k":1}`), Removed: r.IntN(2) == 0}})
		case k < 7:
			a := lgAdd(i)
			a.PartitionValues, a.Tags, a.DeletionVector = strMap(), strMap(), dv()
			a.BaseRowID, a.DefaultRowCommitVersion, a.ClusteringProvider, a.Stats = ptr(int64(i)), ptr(3), str("liquid"), str(a.Stats)
			a.DataChange = r.IntN(2) == 0
			acts = append(acts, Action{Add: a})
		default:
			var ext *bool
			if !sparse && r.IntN(2) == 0 {
				b := r.IntN(2) == 0
				ext = &b
			}
			acts = append(acts, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: ptr(int64(17e11) + int64(r.IntN(4))*864e5), DataChange: r.IntN(2) == 0,
				ExtendedFileMetadata: ext, PartitionValues: strMap(), Size: ptr(int64(i)), DeletionVector: dv(), BaseRowID: ptr(1), DefaultRowCommitVersion: ptr(2)}})
		}
	}
	return acts
}

// The checkpoint encoder writes, byte for byte, the file pqarrow.FileWriter wrote from the
// same actions (the encoder before it, checkpoint_pqarrow_test.go): small and large row
// groups, several data pages in a column chunk, groups split by day and by
// checkpointBatchRows, no actions at all.
func TestCheckpointEncoderMatchesPqarrow(t *testing.T) {
	long := headActions(3000, 0)
	for i := range long {
		if a := long[i].Add; a != nil {
			a.Stats += strings.Repeat(" ", 400) // > 1 MiB of stats: two data pages
		}
	}
	// Adds without tags, with empty tags and txns in turn: add.tags' levels 1, 2, 0 and no
	// value, never 8 alike, so one literal run after another (a literal run holds at most
	// 63 groups of 8).
	var literals []Action
	for i := range 3000 {
		switch i % 3 {
		case 0:
			literals = append(literals, Action{Add: lgAdd(i)})
		case 1:
			a := lgAdd(i)
			a.Tags = map[string]string{}
			literals = append(literals, Action{Add: a})
		default:
			literals = append(literals, Action{Txn: &Txn{AppID: "a", Version: int64(i)}})
		}
	}
	// Strings longer than MaxStatsSize (4 KiB): their column's minimum or maximum is left
	// out of the statistics.
	huge := headActions(4, 2)
	huge[1].MetaData.SchemaString = strings.Repeat("s", 5000)
	huge[3].Add.Stats = strings.Repeat("z", 5000)
	// Column chunks whose footer entry (ColumnChunk: the statistics' min and max, up to
	// 4 KiB each) is longer than the 4 KiB bufio.Writer arrow-go's page writer serializes
	// it through on closing the chunk, which then spills 4 KiB at a time into the file
	// between this chunk and the next (serializedPageWriter.Close).
	spill := headActions(3, 0)
	spill[3].Add.Stats = strings.Repeat("s", 2100)
	spill[4].Add.Stats = strings.Repeat("t", 4096)
	spill[5].Add.Path = strings.Repeat("p", 3000)
	cases := []struct {
		name  string
		acts  []Action
		batch int
	}{
		{"footer entries past arrow-go's 4 KiB buffer", spill, 0},
		{"none", nil, 0},
		{"head 10 adds", headActions(10, 0), 0},
		{"head 10 adds 40 removes", headActions(10, 40), 0},
		{"removes only", headActions(0, 5)[3:], 0},
		{"3000 long adds", long, 0},
		{"3000 long adds, 1000 a group", long, 1000},
		{"levels without a run", literals, 0},
		{"values past the statistics' size limit", huge, 0},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		n := 1 + r.IntN(60)
		if i%20 == 19 {
			n = 2000 + r.IntN(3000)
		}
		sparse, batch := i%2 == 1, []int{0, 0, 3, 7}[i%4]
		if n > 60 {
			batch = 0
		}
		cases = append(cases, struct {
			name  string
			acts  []Action
			batch int
		}{fmt.Sprintf("varied %d (%d actions, sparse %v)", i, n, sparse), variedActions(r, n, sparse), batch})
	}
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	for _, c := range cases {
		for _, byDay := range []bool{false, true} {
			checkpointBatchRows = 50_000
			if c.batch > 0 {
				checkpointBatchRows = c.batch
			}
			want, err := encodeCheckpointPqarrow(c.acts, byDay)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeCheckpointByDay(c.acts, byDay)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, by day %v: %d bytes, pqarrow's %d, differing from byte %d", c.name, byDay, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// An action with no field or two cannot be a checkpoint row.
func TestCheckpointEncoderRefusesMixedRows(t *testing.T) {
	for _, a := range []Action{{}, {Add: lgAdd(1), Txn: &Txn{AppID: "a"}}, {CommitInfo: &CommitInfo{}}} {
		if _, err := encodeCheckpoint([]Action{a}); err != errCheckpointRow {
			t.Errorf("%+v: %v, want errCheckpointRow", a, err)
		}
	}
}

// Checkpoints encoded at the same time share the Parquet schema and writer properties
// (checkpointFormat): each comes out as encoded alone (run with -race).
func TestCheckpointEncoderConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	inputs := make([][]Action, 8)
	want := make([][]byte, len(inputs))
	for i := range inputs {
		inputs[i] = variedActions(r, 20+r.IntN(40), i%2 == 0)
		var err error
		if want[i], err = encodeCheckpointByDay(inputs[i], true); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(inputs)*4)
	for range 4 {
		for i := range inputs {
			wg.Go(func() {
				got, err := encodeCheckpointByDay(inputs[i], true)
				if err == nil && !bytes.Equal(got, want[i]) {
					err = fmt.Errorf("input %d: the checkpoint differs from the one encoded alone", i)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
