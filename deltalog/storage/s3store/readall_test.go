package s3store

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadAll(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 5000)
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		r    io.Reader
		size int64
		want []byte
		err  error
	}{
		{"announced", bytes.NewReader(body), int64(len(body)), body, nil},
		{"one byte a read", iotest.OneByteReader(bytes.NewReader(body)), int64(len(body)), body, nil},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(body)), int64(len(body)), body, nil},
		{"shorter than announced", bytes.NewReader(body[:10]), int64(len(body)), body[:10], nil},
		{"longer than announced", bytes.NewReader(body), 10, body, nil},
		{"unknown size", bytes.NewReader(body), -1, body, nil},
		{"empty", bytes.NewReader(nil), 0, []byte{}, nil},
		{"error at the end (a checksum mismatch)", io.MultiReader(bytes.NewReader(body), iotest.ErrReader(boom)), int64(len(body)), nil, boom},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(c.r, c.size)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if !bytes.Equal(got, c.want) || (c.want != nil && got == nil) {
				t.Fatalf("read %d bytes, want %d", len(got), len(c.want))
			}
		})
	}
}

func TestReadAllAllocatesTheAnnouncedSize(t *testing.T) {
	body := make([]byte, 50<<10)
	r := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(body)
		if b, err := readAll(r, int64(len(body))); err != nil || len(b) != len(body) {
			t.Fatalf("read %d bytes, %v", len(b), err)
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations a read, want 1", allocs)
	}
}
