package parquetio

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
)

// spillBytes is what a file being written holds in memory before it goes to a temporary
// file: the size of the write buffer the temporary file had anyway (tempBufs), so the
// writer's memory bound is unchanged.
const spillBytes = 1 << 20

// memBufs are the in-memory files' buffers, a few kept for the next files. Not a
// sync.Pool: a pool is emptied by the garbage collector, and a stream batch's process
// collects often enough that one file in seven allocated (and zeroed) its megabyte
// afresh.
var memBufs = bufList{keep: 4}

// bufList keeps up to keep buffers of spillBytes for reuse.
type bufList struct {
	mu   sync.Mutex
	keep int
	bufs []*[]byte
}

// get returns an empty buffer of capacity spillBytes.
func (l *bufList) get() *[]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.bufs); n > 0 {
		b := l.bufs[n-1]
		l.bufs = l.bufs[:n-1]
		return b
	}
	b := make([]byte, 0, spillBytes)
	return &b
}

// put keeps b for a later get, unless keep buffers are kept already.
func (l *bufList) put(b *[]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bufs) < l.keep {
		*b = (*b)[:0]
		l.bufs = append(l.bufs, b)
	}
}

// spillFile is where a Parquet file is encoded before its upload: in memory up to
// spillBytes, then in a temporary file in dir (through a tempBufs buffer; the memory is
// handed back when it spills). A stream batch's files (a bronze file of ~1,000 rows, a
// facts file of one row) never touch the disk: creating, writing, reading back and
// removing a temporary file for each cost system calls on the batch's CPU
// (docs/performance.md § Requests per stream batch).
type spillFile struct {
	dir string
	mem *[]byte
	tmp *os.File
	buf *bufio.Writer
}

func newSpillFile(dir string) *spillFile {
	return &spillFile{dir: dir, mem: memBufs.get()}
}

func (s *spillFile) Write(p []byte) (int, error) {
	if s.mem != nil {
		if len(*s.mem)+len(p) <= spillBytes {
			*s.mem = append(*s.mem, p...)
			return len(p), nil
		}
		if err := s.spill(); err != nil {
			return 0, err
		}
	}
	return s.buf.Write(p)
}

// spill moves what memory holds to a new temporary file.
func (s *spillFile) spill() error {
	tmp, err := os.CreateTemp(s.dir, "parquetio-*.parquet")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	if _, err := tmp.Write(*s.mem); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write temporary file: %w", err)
	}
	s.tmp = tmp
	memBufs.put(s.mem)
	s.mem = nil
	s.buf = tempBufs.Get().(*bufio.Writer)
	s.buf.Reset(tmp)
	return nil
}

// reader returns the file's bytes from its start, for the upload.
func (s *spillFile) reader() (io.Reader, error) {
	if s.mem != nil {
		return bytes.NewReader(*s.mem), nil
	}
	if err := s.buf.Flush(); err != nil {
		return nil, fmt.Errorf("write temporary file: %w", err)
	}
	if _, err := s.tmp.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind temporary file: %w", err)
	}
	return s.tmp, nil
}

// close drops the file: its memory goes back to the pool, its temporary file is removed.
// The reader is not used after.
func (s *spillFile) close() {
	if s.mem != nil {
		memBufs.put(s.mem)
		s.mem = nil
	}
	if s.buf != nil {
		putTempBuf(s.buf)
		s.buf = nil
	}
	if s.tmp != nil {
		s.tmp.Close()
		os.Remove(s.tmp.Name())
		s.tmp = nil
	}
}
