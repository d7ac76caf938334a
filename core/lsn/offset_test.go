package lsn

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestOffsetJSON(t *testing.T) {
	o := At(MustParse("0x2A000001F00003"), time.Date(2026, 9, 28, 14, 3, 12, 117_400_000, time.UTC))
	b, _ := json.Marshal(o)
	if string(b) != `{"lsn":"0x0000002A000001F00003","commit_ts":"2026-09-28T14:03:12.117"}` {
		t.Errorf("got %s", b)
	}
	var back Offset
	if err := json.Unmarshal(b, &back); err != nil || back != o {
		t.Errorf("round trip: %v (%v), want %v", back, err, o)
	}
	b, _ = json.Marshal(Offset{})
	if string(b) != `{"lsn":"0x00000000000000000000","commit_ts":""}` {
		t.Errorf("zero: %s", b)
	}
	cases := map[string]string{
		`{"lsn":"0x2a","commit_ts":"2026-09-28T14:03:12"}`:        "0x0000000000000000002A@2026-09-28T14:03:12.000",
		`{"lsn":"0x2a","commit_ts":"2026-09-28T14:03:12.1234Z"}`:  "0x0000000000000000002A@2026-09-28T14:03:12.123",
		`{"lsn":"0x2a","commit_ts":""}`:                           "0x0000000000000000002A",
		`{"lsn":"0x0000002A000001F00003"}`:                        "0x0000002A000001F00003",
		`{"lsn":"0x2a","commit_ts":"2026-09-28T14:03:12.117999"}`: "0x0000000000000000002A@2026-09-28T14:03:12.117",
	}
	for in, want := range cases {
		var o Offset
		if err := json.Unmarshal([]byte(in), &o); err != nil || o.String() != want {
			t.Errorf("%s: %v (%v), want %s", in, o, err, want)
		}
	}
	var pe *ParseError
	if err := json.Unmarshal([]byte(`{"lsn":"0xZZ","commit_ts":""}`), &o); !errors.As(err, &pe) {
		t.Errorf("bad LSN: %v, want *ParseError", err)
	}
	if err := json.Unmarshal([]byte(`{"lsn":"0x2a","commit_ts":"yesterday"}`), &o); err == nil {
		t.Error("bad commit_ts accepted")
	}
}

func TestOffsetCommitTime(t *testing.T) {
	if (Offset{}).CommitTime() != nil {
		t.Error("zero offset has a commit time")
	}
	o := At(MustParse("0x2A"), time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("x", 3600)))
	if ct := o.CommitTime(); ct == nil || ct.Location() != time.UTC || ct.Hour() != 2 {
		t.Errorf("commit time %v, want 02:04:05.006 UTC", ct)
	}
}
