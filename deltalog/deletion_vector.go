package deltalog

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/url"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Deletion vector storage types (docs/delta-reading.md § Deletion vectors).
const (
	// DVStorageUUID: pathOrInlineDv is an optional random prefix and a 20-character Z85
	// UUID; the file is <table>/<prefix>/deletion_vector_<uuid>.bin.
	DVStorageUUID = "u"
	// DVStorageInline: pathOrInlineDv is the bitmap itself, Z85-encoded.
	DVStorageInline = "i"
	// DVStorageAbsolute: pathOrInlineDv is the DV file's absolute URI.
	DVStorageAbsolute = "p"
)

// dvFileVersion is the first byte of a deletion vector file (docs/delta-reading.md
// § Deletion vectors).
const dvFileVersion = 1

// maxDVReadFromStart is how far into a DV file a bitmap may start for the file to be read
// from byte 0 (checking the version byte) in the same GET; a bitmap further in (Spark packs
// many into one file) is read on its own range.
const maxDVReadFromStart = 1 << 20

// dvFileKey is the store key of an on-disk deletion vector's file, for a table whose
// store is rooted at rootURL. Inline DVs have none.
func dvFileKey(rootURL string, dv *DeletionVector) (string, error) {
	switch dv.StorageType {
	case DVStorageUUID:
		p := dv.PathOrInlineDv
		if len(p) < 20 {
			return "", dvErr("pathOrInlineDv %q is shorter than a Z85 UUID (20 characters)", p)
		}
		prefix, enc := p[:len(p)-20], p[len(p)-20:]
		u, err := z85Decode(enc)
		if err != nil {
			return "", &DeletionVectorError{Reason: "pathOrInlineDv does not end in a Z85 UUID", Err: err}
		}
		name := "deletion_vector_" + formatUUID(u) + ".bin"
		if prefix != "" {
			name = prefix + "/" + name
		}
		return name, nil
	case DVStorageAbsolute:
		root, err := url.Parse(rootURL)
		if err != nil {
			return "", &DeletionVectorError{Reason: "table URL " + rootURL, Err: err}
		}
		k, ok := tableKey(root, dv.PathOrInlineDv)
		if !ok {
			return "", dvErr("absolute path %q is outside the table %s", dv.PathOrInlineDv, rootURL)
		}
		return k, nil
	case DVStorageInline:
		return "", dvErr("an inline deletion vector has no file")
	}
	return "", dvErr("unknown storageType %q", dv.StorageType)
}

func formatUUID(u []byte) string {
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// dvBytes returns a deletion vector's RoaringBitmapArray bytes: decoded from the
// descriptor when inline, else read from its file (one ranged GET) and checked against
// the file's version byte (when read from the start), the descriptor's sizeInBytes and the
// CRC-32 that follows the bitmap.
func dvBytes(ctx context.Context, store storage.Store, dv *DeletionVector) ([]byte, error) {
	if dv.SizeInBytes < 4 {
		return nil, dvErr("sizeInBytes %d is too small for a bitmap", dv.SizeInBytes)
	}
	size := int64(dv.SizeInBytes)
	if dv.StorageType == DVStorageInline {
		raw, err := z85Decode(dv.PathOrInlineDv)
		if err != nil {
			return nil, &DeletionVectorError{Reason: "inline bitmap", Err: err}
		}
		if int64(len(raw)) < size || int64(len(raw)) >= size+4 {
			return nil, dvErr("inline bitmap is %d bytes, sizeInBytes %d", len(raw), size)
		}
		return raw[:size], nil
	}
	key, err := dvFileKey(store.URL(), dv)
	if err != nil {
		return nil, err
	}
	// The protocol reads an absent offset as 0, which is the version byte in a version-1
	// file; the only bitmap such a descriptor can mean is the first, at 1.
	off := int64(1)
	if dv.Offset != nil {
		off = int64(*dv.Offset)
	}
	if off < 0 {
		return nil, dvErr("offset %d is negative", off)
	}
	start := off
	if off < maxDVReadFromStart {
		start = 0
	}
	data, err := store.GetRange(ctx, key, start, off-start+4+size+4)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, &DeletionVectorError{Path: key, Reason: "file missing", Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("read deletion vector %s: %w", key, err)
	}
	if start == 0 && (len(data) == 0 || data[0] != dvFileVersion) {
		return nil, &DeletionVectorError{Path: key, Reason: "not a version-1 deletion vector file"}
	}
	data = data[off-start:]
	if int64(len(data)) != 4+size+4 {
		return nil, &DeletionVectorError{Path: key, Reason: fmt.Sprintf("file ends before the bitmap at offset %d (%d bytes) does", off, size)}
	}
	if got := int64(binary.BigEndian.Uint32(data)); got != size {
		return nil, &DeletionVectorError{Path: key, Reason: fmt.Sprintf("bitmap at offset %d is %d bytes, the descriptor says %d", off, got, size)}
	}
	bitmap := data[4 : 4+size]
	if want, got := binary.BigEndian.Uint32(data[4+size:]), crc32.ChecksumIEEE(bitmap); want != got {
		return nil, &DeletionVectorError{Path: key, Reason: fmt.Sprintf("CRC-32 %08x of the bitmap at offset %d, the file says %08x", got, off, want)}
	}
	return bitmap, nil
}

// readDeletionVector reads and decodes dv for the data file dataPath of maxRows rows, and
// checks its cardinality against the descriptor's.
func readDeletionVector(ctx context.Context, store storage.Store, dv *DeletionVector, dataPath string, maxRows uint64) (*RowBitmap, error) {
	raw, err := dvBytes(ctx, store, dv)
	if err == nil {
		var rows *RowBitmap
		if rows, err = DecodeRoaringBitmapArray(raw, maxRows); err == nil {
			if rows.Cardinality() != dv.Cardinality {
				return nil, &DeletionVectorError{Path: dataPath, Reason: fmt.Sprintf("holds %d rows, its descriptor's cardinality is %d", rows.Cardinality(), dv.Cardinality)}
			}
			return rows, nil
		}
	}
	var dvE *DeletionVectorError
	if errors.As(err, &dvE) && dvE.Path == "" {
		dvE.Path = dataPath
	}
	return nil, err
}

// DeletedRows returns the rows of the live file a that its deletion vector marks deleted
// (an empty set when it has none). Row indexes are bounded by the file's numRecords, which
// the protocol requires of every file with a deletion vector (docs/reference/delta-protocol.md
// §4.1); a file with a DV and no numRecords is a *DeletionVectorError, as is any
// unreadable or inconsistent deletion vector.
func (s *Snapshot) DeletedRows(ctx context.Context, a *Add) (*RowBitmap, error) {
	if a.DeletionVector == nil {
		return &RowBitmap{}, nil
	}
	n, ok := a.NumRecords()
	if !ok || n < 0 {
		return nil, &DeletionVectorError{Path: a.Path, Reason: "file has a deletion vector but no numRecords in its stats"}
	}
	return readDeletionVector(ctx, s.table.store, a.DeletionVector, a.Path, uint64(n))
}

// LiveRecords is the number of rows of the file that are not deleted: its numRecords
// minus its deletion vector's cardinality (docs/delta-reading.md § Deletion vectors: numRecords
// counts the physical rows). ok is false when numRecords is unknown.
func (a *Add) LiveRecords() (n int64, ok bool) {
	n, ok = a.NumRecords()
	if ok && a.DeletionVector != nil {
		n -= a.DeletionVector.Cardinality
	}
	return n, ok
}

// WithDeletionVector is the add action that puts the logical file a back with dv as its
// deletion vector (docs/reference/delta-protocol.md §2.6): the same path, size, partition
// values, modification time and tags, dataChange true, and statistics marked
// "tightBounds": false, since min/max now bound live rows that may no longer reach them
// (docs/reference/delta-protocol.md §4.1), as Spark writes it. dv marks every deleted row of the file, the old DV's rows
// included. Commit it with a.RemoveAction in the same transaction; Commit refuses it
// unless the table lists the deletionVectors feature and the stats give numRecords.
func (a Add) WithDeletionVector(dv *DeletionVector) Add {
	a.DeletionVector = dv
	a.DataChange = true
	if a.Stats != "" {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(a.Stats), &m) == nil {
			m["tightBounds"] = json.RawMessage("false")
			if b, err := json.Marshal(m); err == nil {
				a.Stats = string(b)
			}
		}
	}
	return a
}

// InlineDeletionVector returns the descriptor of a deletion vector stored inline in the
// log (storageType "i"): rows serialized as a RoaringBitmapArray and Z85-encoded. Inline
// DVs suit a few deleted rows; a bitmap of more than a few hundred bytes belongs in a file
// (WriteDeletionVectorFile), since every checkpoint repeats it.
func InlineDeletionVector(rows *RowBitmap) *DeletionVector {
	raw := EncodeRoaringBitmapArray(rows)
	return &DeletionVector{
		StorageType:    DVStorageInline,
		PathOrInlineDv: z85Encode(raw),
		SizeInBytes:    int32(len(raw)),
		Cardinality:    rows.Cardinality(),
	}
}

// EncodeDeletionVectorFile lays bitmaps out as one deletion vector file (docs/delta-reading.md
// § Deletion vectors): the version byte 1, then per bitmap its size
// (big-endian int32), its RoaringBitmapArray bytes and their CRC-32 (big-endian). It
// returns the file and, per bitmap, the offset of its size field and its size in bytes,
// which are a descriptor's offset and sizeInBytes.
func EncodeDeletionVectorFile(bitmaps []*RowBitmap) (data []byte, offsets, sizes []int32) {
	data = []byte{dvFileVersion}
	for _, b := range bitmaps {
		raw := EncodeRoaringBitmapArray(b)
		offsets = append(offsets, int32(len(data)))
		sizes = append(sizes, int32(len(raw)))
		data = binary.BigEndian.AppendUint32(data, uint32(len(raw)))
		data = append(data, raw...)
		data = binary.BigEndian.AppendUint32(data, crc32.ChecksumIEEE(raw))
	}
	return data, offsets, sizes
}

// WriteDeletionVectorFile writes bitmaps into one new deletion vector file,
// <prefix>/deletion_vector_<random uuid>.bin under the table root (at the root when prefix
// is ""), with storage.Store.PutIfAbsent, and returns one storageType "u" descriptor per
// bitmap, in order, for the add actions that carry them. prefix, like Spark's random
// file prefixes, may hold only ASCII letters and digits. The file is unique per call, so
// a retried write never overwrites one a commit may already name; a file written for a
// commit that then fails is an orphan for VACUUM.
func WriteDeletionVectorFile(ctx context.Context, store storage.Store, prefix string, bitmaps []*RowBitmap) ([]*DeletionVector, error) {
	for _, c := range prefix {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return nil, dvErr("prefix %q: only ASCII letters and digits are allowed", prefix)
		}
	}
	if len(bitmaps) == 0 {
		return nil, nil
	}
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	data, offsets, sizes := EncodeDeletionVectorFile(bitmaps)
	dvs := make([]*DeletionVector, len(bitmaps))
	for i, b := range bitmaps {
		off := offsets[i]
		dvs[i] = &DeletionVector{
			StorageType:    DVStorageUUID,
			PathOrInlineDv: prefix + z85Encode(u[:]),
			Offset:         &off,
			SizeInBytes:    sizes[i],
			Cardinality:    b.Cardinality(),
		}
	}
	key, err := dvFileKey(store.URL(), dvs[0])
	if err != nil {
		return nil, err
	}
	if err := store.PutIfAbsent(ctx, key, data); err != nil {
		return nil, fmt.Errorf("write deletion vector file %s: %w", key, err)
	}
	return dvs, nil
}
