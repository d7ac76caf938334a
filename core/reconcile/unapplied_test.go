package reconcile

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

const (
	s0 = "0x0000002A000000100001"
	s1 = "0x0000003A000000100001"
)

// records is generation gen's chunked snapshot at s of an int key id: chunks [.., 100),
// [100, 200), [200, 300), [300, 401) (the last), of which the first read ones were read,
// chunk i in wave i; complete adds its resnapshot facts row.
func records(s string, gen int32, read int, complete bool) ChunkRecords {
	bounds := []string{"", "[100]", "[200]", "[300]", "[401]"}
	r := ChunkRecords{Plans: []snapshot.PlanRow{{Snapshot: s, Generation: gen, Event: snapshot.PlanEventOpen, Keys: `["id"]`}}}
	for i := range int32(4) {
		last := i == 3
		r.Plans = append(r.Plans, snapshot.PlanRow{Snapshot: s, Generation: gen, Event: snapshot.PlanEventPlan, Chunk: &i, Lo: bounds[i], Hi: bounds[i+1], Last: &last})
		if int(i) < read {
			w := int64(i)
			r.Plans = append(r.Plans, snapshot.PlanRow{Snapshot: s, Generation: gen, Event: snapshot.PlanEventChunk, Chunk: &i, Lo: bounds[i], Hi: bounds[i+1], Last: &last, Wave: &w})
		}
	}
	if complete {
		r.Facts = append(r.Facts, facts.Row{Event: facts.EventResnapshot, MinLSN: s, MaxLSN: s})
	}
	return r
}

func merge(a, b ChunkRecords) *ChunkRecords {
	return &ChunkRecords{Plans: append(a.Plans, b.Plans...), Facts: append(a.Facts, b.Facts...)}
}

func wave(w int64) *int64 { return &w }

// Which chunks are unapplied, by the plans table and silver's position, and which keys each
// rule excuses: numbers compared with the bounds, the last chunk open above for silver's
// older images only.
func TestUnappliedChunks(t *testing.T) {
	id := source.Column{Name: "id", DataType: "int"}
	keys := []source.Column{id}
	for _, tc := range []struct {
		name string
		rec  *ChunkRecords
		pos  *silver.Position
		want string // the unapplied chunks' merged planned ranges, "" none
	}{
		{"no records", nil, nil, ""},
		{"no position: the chunks read count as applied", merge(records(s0, 0, 2, false), ChunkRecords{}), nil, "[[200], [401])"},
		{"no position, complete", merge(records(s0, 0, 4, true), ChunkRecords{}), nil, ""},
		{"silver applied wave 0 of S", merge(records(s0, 0, 2, false), ChunkRecords{}), &silver.Position{OpenSnapshot: s0, Wave: wave(0)}, "[[100], [401])"},
		{"silver applied wave 2 of a complete S", merge(records(s0, 0, 4, true), ChunkRecords{}), &silver.Position{OpenSnapshot: s0, Wave: wave(2)}, "[[300], [401])"},
		{"silver stands on S whole", merge(records(s0, 0, 4, true), ChunkRecords{}), &silver.Position{Snapshot: s0}, ""},
		{"silver applied none of S", merge(records(s0, 0, 3, false), ChunkRecords{}), &silver.Position{Snapshot: "0x00000001000000100001"}, "[, [401])"},
		{"generation 1 supersedes generation 0", merge(records(s0, 0, 2, false), records(s1, 1, 1, false)), &silver.Position{OpenSnapshot: s0, Wave: wave(1)}, "[, [401])"},
		{"silver applied wave 0 of generation 1", merge(records(s0, 0, 2, false), records(s1, 1, 1, false)), &silver.Position{OpenSnapshot: s1, Wave: wave(0)}, "[[100], [401])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := unappliedChunks(tc.rec, tc.pos, keys, keys, slog.New(slog.DiscardHandler))
			got := ""
			for _, s := range u.planned {
				got += fmt.Sprintf("[%s, %s)", s.lo, s.hi)
			}
			if got != tc.want || u.any() != (tc.want != "") || (u.any() && !u.numeric) {
				t.Fatalf("unapplied %q (any %v, numeric %v), want %q", got, u.any(), u.numeric, tc.want)
			}
		})
	}

	u := unappliedChunks(merge(records(s1, 1, 2, false), ChunkRecords{}), &silver.Position{OpenSnapshot: s1, Wave: wave(0)}, keys, keys, slog.New(slog.DiscardHandler))
	older, newer := "0x00000001000000100001", s1
	var got []string
	for _, k := range []string{"-5", "99", "100", "250", "400", "401", "9999"} {
		for _, c := range []struct {
			kind Kind
			lsn  string
		}{{MissingTarget, ""}, {RecordDiff, older}, {RecordDiff, newer}, {MissingSource, older}, {MissingSource, newer}} {
			if u.explains(key{text: k, vals: []string{k}}, c.kind, c.lsn) {
				got = append(got, fmt.Sprintf("%s %s %v", k, c.kind, c.lsn == older))
			}
		}
	}
	want := []string{
		"100 MISSING_TARGET false", "100 RECORD_DIFF true", "100 MISSING_SOURCE true",
		"250 MISSING_TARGET false", "250 RECORD_DIFF true", "250 MISSING_SOURCE true",
		"400 MISSING_TARGET false", "400 RECORD_DIFF true", "400 MISSING_SOURCE true",
		"401 MISSING_SOURCE true", "9999 MISSING_SOURCE true", // above the plan: only range deletes reach it
	}
	if !slices.Equal(got, want) {
		t.Fatalf("explained:\n%v\nwant\n%v", got, want)
	}
	// An open row whose key columns are not captured ones: nothing is placed, nothing excused.
	other := records(s1, 1, 2, false)
	other.Plans[0].Keys = `["gone"]`
	if u := unappliedChunks(&other, nil, keys, keys, slog.New(slog.DiscardHandler)); u.explains(key{text: "250", vals: []string{"250"}}, MissingTarget, "") {
		t.Errorf("a key of an unapplied chunk on columns reconcile does not have was excused")
	}
	for _, c := range []struct {
		lo, hi int64
		want   bool
	}{{-10, 100, false}, {-10, 101, true}, {500, 600, true}} {
		b := bucket{lo: &c.lo, hi: &c.hi}
		if got := u.touches(&b, true); got != c.want {
			t.Errorf("bucket [%d, %d) touches %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}
