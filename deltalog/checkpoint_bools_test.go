package deltalog

import (
	"bytes"
	"testing"
)

// arrow-go's plain boolean encoder leaves bits past the last value in the page's last byte
// that are not zero (boolEncoder): the previous byte's when a batch of WriteBatchSize
// levels ended its values on a byte boundary and the next batch brings fewer than 8, and
// an earlier round's once its 1 KiB buffer (8,192 values) was reused. The encoder must
// write them as arrow-go does. Found by FuzzCheckpointEncoderMatchesPqarrow (1,025 adds
// in one group, docs/decisions/0020-checkpoint-pages-encoded-here.md, follow-up).

// The bytes boolEncoder gives for batches of values, worked out by hand from arrow-go's
// PlainBooleanEncoder.Put and bitutil.BitmapWriter.AppendBools (the mechanism, apart from
// the files TestCheckpointBooleanPaddingMatchesPqarrow compares).
func TestBoolEncoderPaddingBits(t *testing.T) {
	trues := func(n int) []bool {
		v := make([]bool, n)
		for i := range v {
			v[i] = true
		}
		return v
	}
	cases := []struct {
		name    string
		batches [][]bool
		want    []byte
	}{
		{"one value", [][]bool{{true}}, []byte{0x01}},
		{"8 then 1 false: the completed byte is kept as the current one", [][]bool{trues(8), {false}}, []byte{0xff, 0xfe}},
		{"8 then 1 true", [][]bool{trues(8), {true}}, []byte{0xff, 0xff}},
		{"8 then 3 then 2", [][]bool{trues(8), {false, false, false}, {false, true}}, []byte{0xff, 0xf0}},
		{"7, 1, then 1 false: a byte completed by the second Put", [][]bool{trues(7), {true}, {false}}, []byte{0xff, 0xfe}},
		{"7 then 2 false", [][]bool{trues(7), {false, false}}, []byte{0x7f, 0x00}},
		{"8 then 9 false: the stale byte overwritten", [][]bool{trues(8), make([]bool, 9)}, []byte{0xff, 0x00, 0x00}},
		{"6 then 2", [][]bool{{true, false, true, false, true, false}, {true, true}}, []byte{0xd5}},
	}
	for _, c := range cases {
		var e boolEncoder
		e.start()
		var b []byte
		for _, in := range c.batches {
			b = e.put(b, in)
		}
		if b = e.flush(b); !bytes.Equal(b, c.want) {
			t.Errorf("%s: % x, want % x", c.name, b, c.want)
		}
	}

	// Past 8,192 values the buffer is appended whole and reused as it is: the last byte's
	// bits past the values are the first round's.
	var e boolEncoder
	e.start()
	b := e.put(nil, trues(8192+1))
	if b = e.flush(b); len(b) != 1025 || b[1023] != 0xff || b[1024] != 0xff {
		t.Errorf("8,193 true: %d bytes, ending % x, want 1,025 ending ff ff", len(b), b[max(len(b)-2, 0):])
	}
	e.start()
	b = e.put(nil, make([]bool, 8192+1))
	if b = e.flush(b); len(b) != 1025 || b[1024] != 0 {
		t.Errorf("8,193 false: %d bytes, ending % x", len(b), b[max(len(b)-2, 0):])
	}
}

// Checkpoints whose boolean columns end their pages on such a byte are pqarrow's, byte for
// byte: add.dataChange in batches of WriteBatchSize (1,024) levels whose values end on a
// byte boundary followed by fewer than 8; nulls (other actions) moving the values'
// boundaries off the batches'; more than 8,192 values in the page.
func TestCheckpointBooleanPaddingMatchesPqarrow(t *testing.T) {
	adds := func(n int, dataChange func(i int) bool, nullEvery int) []Action {
		var acts []Action
		for i := range n {
			if nullEvery > 0 && i%nullEvery == nullEvery-1 {
				acts = append(acts, Action{Txn: &Txn{AppID: "a", Version: int64(i)}})
				continue
			}
			a := lgAdd(i)
			a.Stats, a.DataChange = "", dataChange(i)
			acts = append(acts, Action{Add: a})
		}
		return acts
	}
	always := func(int) bool { return true }
	cases := []struct {
		name string
		acts []Action
	}{
		{"1,025 true", adds(1025, always, 0)},
		{"1,025: false then true (the fuzz input's column)", adds(1025, func(i int) bool { return i > 0 }, 0)},
		{"1,025: true but the last", adds(1025, func(i int) bool { return i < 1024 }, 0)},
		{"1,030 true", adds(1030, always, 0)},
		{"2,049 true", adds(2049, always, 0)},
		{"1,027, every 128th a txn (1,016 values in the first batch)", adds(1027, always, 128)},
		{"8,193 true", adds(8193, always, 0)},
		{"10,503, every 5th a txn (8,403 values)", adds(10503, func(i int) bool { return i%3 != 0 }, 5)},
	}
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 50_000
	for _, c := range cases {
		want, err := encodeCheckpointPqarrow(c.acts, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeCheckpointByDay(c.acts, false)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, pqarrow's %d, differing from byte %d", c.name, len(got), len(want), firstDiff(got, want))
		}
	}
}
