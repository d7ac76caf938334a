package snapshot

import (
	"reflect"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func TestUniformBounds(t *testing.T) {
	cases := []struct {
		mn, mx int64
		n      int
		want   []int64
	}{
		{1, 100, 4, []int64{26, 51, 76}},
		{0, 2, 4, []int64{1, 2}},
		{5, 5, 4, nil},
		{-10, 9, 2, []int64{0}},
		{-1 << 63, 1<<63 - 1, 2, []int64{0}},
	}
	for _, c := range cases {
		if got := uniformBounds(c.mn, c.mx, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("uniformBounds(%d, %d, %d) = %v, want %v", c.mn, c.mx, c.n, got, c.want)
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	cols := []source.Column{{Name: "a", DataType: "bigint"}, {Name: "b", DataType: "uniqueidentifier"}, {Name: "c", DataType: "varbinary"}, {Name: "d", DataType: "bit"}}
	k := source.Key{int64(1 << 40), "6F9619FF-8B86-D011-B42D-00C04FC964FF", []byte{1, 0xab}, true}
	enc, err := encodeKey(k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeKey(enc, cols)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("round trip: %#v, want %#v", got, k)
	}
	if _, err := decodeKey([]any{"x"}, cols[:1]); err == nil {
		t.Fatal("a string decoded as bigint")
	}
}
