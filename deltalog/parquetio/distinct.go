package parquetio

import "hash/maphash"

// Sets of distinct values for chooseEncoding: open addressing with linear probing over
// tables kept from column to column (cleared, not reallocated), sized to twice the values
// they are reset for, so a probe ends at an empty slot. They replace Go maps, whose
// inserts (hashing through the map's type, growth, tombstone bookkeeping) were most of
// chooseEncodings' time, itself a fifth of a 1,000-row bronze file's CPU
// (docs/performance.md § Small files).

// tableSize is the power of two at least twice n, at least 16.
func tableSize(n int) int {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return size
}

// emptyTable returns slots emptied and resized to tableSize(n) (reallocated only when its
// room is short), and the size's mask.
func emptyTable[T any](slots []T, n int) ([]T, uint64) {
	size := tableSize(n)
	if cap(slots) < size {
		return make([]T, size), uint64(size - 1)
	}
	slots = slots[:size]
	clear(slots)
	return slots, uint64(size - 1)
}

// mix64 is MurmurHash3's 64-bit finalizer: every bit of k affects every bit of the
// result, so keys that differ only in high bits (timestamps, scaled decimals) spread.
func mix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// u64Set is a set of up to the reset capacity of uint64 keys. The empty slot is 0; the
// key 0 is kept by a flag.
type u64Set struct {
	slots []uint64
	mask  uint64
	n     int
	zero  bool
}

// reset empties s for up to n keys.
func (s *u64Set) reset(n int) {
	s.slots, s.mask = emptyTable(s.slots, n)
	s.n, s.zero = 0, false
}

// add adds k and reports whether it was not in s. s holds fewer keys than its reset
// capacity.
func (s *u64Set) add(k uint64) bool {
	if k == 0 {
		if s.zero {
			return false
		}
		s.zero = true
		s.n++
		return true
	}
	for i := mix64(k) & s.mask; ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case k:
			return false
		case 0:
			s.slots[i] = k
			s.n++
			return true
		}
	}
}

// u128Set is u64Set for 16-byte keys (decimal128, interval_month_day_nano).
type u128Set struct {
	slots [][2]uint64
	mask  uint64
	n     int
	zero  bool
}

// reset empties s for up to n keys.
func (s *u128Set) reset(n int) {
	s.slots, s.mask = emptyTable(s.slots, n)
	s.n, s.zero = 0, false
}

// add adds k and reports whether it was not in s.
func (s *u128Set) add(k [2]uint64) bool {
	if k == [2]uint64{} {
		if s.zero {
			return false
		}
		s.zero = true
		s.n++
		return true
	}
	for i := mix64(k[0]^mix64(k[1])) & s.mask; ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case k:
			return false
		case [2]uint64{}:
			s.slots[i] = k
			s.n++
			return true
		}
	}
}

// intIndex numbers int64 keys in order of first appearance, the entries of an integer
// column chunk's dictionary (ownIntDictChunk), in an open-addressed table of 1 + entry
// index (0 empty) over the entries slice; a run of one key (a commit's stamp, an
// operation code) skips the table. It replaced a Go map, which with its hashing and
// growth cost ~0.1 ms of a 1,000-row stream batch's file (docs/performance.md § Issue 13:
// a code-level cut).
type intIndex struct {
	slots []int32
	mask  uint64
	// last is 1 + the index of the previous key (0: none).
	last int32
}

// reset empties x for up to n distinct keys.
func (x *intIndex) reset(n int) {
	x.slots, x.mask = emptyTable(x.slots, n)
	x.last = 0
}

// index returns k's index in *entries, appending k when it is new. *entries holds exactly
// the keys indexed since reset, and fewer than reset's n.
func (x *intIndex) index(k int64, entries *[]int64) int32 {
	e := *entries
	if x.last > 0 && e[x.last-1] == k {
		return x.last - 1
	}
	for i := mix64(uint64(k)) & x.mask; ; i = (i + 1) & x.mask {
		j := x.slots[i]
		if j == 0 {
			*entries = append(e, k)
			j = int32(len(e) + 1)
			x.slots[i] = j
			x.last = j
			return j - 1
		}
		if e[j-1] == k {
			x.last = j
			return j - 1
		}
	}
}

// bytesSeed seeds the byte sets' hashes (one per process).
var bytesSeed = maphash.MakeSeed()

// bytesSet is a set of byte strings that lie in one buffer (a column's value bytes),
// each given as its span in that buffer: nothing is copied, and the tables hold no
// pointers (no write barriers, nothing kept alive). A slot holds 1 + the index of its
// value in spans; 0 is empty.
type bytesSet struct {
	data   []byte
	slots  []int32
	mask   uint64
	spans  [][2]int32
	hashes []uint64
}

// reset empties s for up to n values lying in data.
func (s *bytesSet) reset(n int, data []byte) {
	s.slots, s.mask = emptyTable(s.slots, n)
	s.data = data
	s.spans, s.hashes = s.spans[:0], s.hashes[:0]
}

// add adds data[start:end] and reports whether it was not in s.
func (s *bytesSet) add(start, end int32) bool {
	v := s.data[start:end]
	h := maphash.Bytes(bytesSeed, v)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		j := s.slots[i]
		if j == 0 {
			s.spans = append(s.spans, [2]int32{start, end})
			s.hashes = append(s.hashes, h)
			s.slots[i] = int32(len(s.spans))
			return true
		}
		if sp := s.spans[j-1]; s.hashes[j-1] == h && string(s.data[sp[0]:sp[1]]) == string(v) {
			return false
		}
	}
}

// len is the number of distinct values added.
func (s *bytesSet) len() int { return len(s.spans) }

// drop forgets the buffer the values lie in (its Arrow buffer may be released).
func (s *bytesSet) drop() { s.data = nil }
