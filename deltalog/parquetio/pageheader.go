package parquetio

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// The page headers and the footer entry of a column chunk as arrow-go's page writer
// serializes them (serializedPageWriter in arrow-go's parquet/file/page_writer.go), for
// column chunks written without it (ownchunk.go). The headers are Thrift structs of the
// Parquet format (parquet.thrift) in Thrift's compact protocol: each field a byte of its
// id's delta from the previous field's and its type, then the value (integers as zigzag
// varints, binaries as a varint length and the bytes, a boolean in the field byte's
// type); 0 ends a struct. deltalog's checkpoint encoder (checkpoint_encode.go,
// docs/decisions/0020-checkpoint-pages-encoded-here.md) writes its chunks with these too
// (WritePlainChunk, ChunkPager).

// Thrift compact protocol field types.
const (
	thriftTrue, thriftFalse, thriftI32, thriftI64, thriftBinary, thriftStruct = 1, 2, 5, 6, 8, 12
)

func appendZigzag(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v<<1^v>>63)) }

// AppendDataPageHeader appends the PageHeader arrow-go writes for a V1 data page of
// numValues levels (values and nulls), uncompressed bytes before compression and
// compressed after, its values in enc and its levels RLE, with statistics st:
// PageHeader{type: DATA_PAGE, uncompressed_page_size, compressed_page_size,
// data_page_header: DataPageHeader{num_values, encoding, definition_level_encoding: RLE,
// repetition_level_encoding: RLE, statistics: Statistics{max, min (the deprecated pair,
// for a signed sort order), null_count, max_value, min_value}}} (arrow-go's
// EncodedStatistics.ToThrift: each field only when set).
func AppendDataPageHeader(b []byte, numValues, uncompressed, compressed int, enc parquet.Encoding, st *metadata.EncodedStatistics) []byte {
	b = append(b, 1<<4|thriftI32, 0) // type: DATA_PAGE (0)
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(uncompressed))
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(compressed))
	b = append(b, 2<<4|thriftStruct) // field 5: data_page_header
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(numValues))
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(enc))
	b = append(b, 1<<4|thriftI32, byte(parquet.Encodings.RLE)<<1) // definition_level_encoding
	b = append(b, 1<<4|thriftI32, byte(parquet.Encodings.RLE)<<1) // repetition_level_encoding
	b = append(b, 1<<4|thriftStruct)                              // field 5: statistics
	last := 0
	field := func(id, typ int) {
		b = append(b, byte((id-last)<<4|typ))
		last = id
	}
	bin := func(id int, v []byte) {
		field(id, thriftBinary)
		b = append(binary.AppendUvarint(b, uint64(len(v))), v...)
	}
	if st.Signed && st.HasMax {
		bin(1, st.Max)
	}
	if st.Signed && st.HasMin {
		bin(2, st.Min)
	}
	if st.HasNullCount {
		field(3, thriftI64)
		b = appendZigzag(b, st.NullCount)
	}
	if st.HasDistinctCount {
		field(4, thriftI64)
		b = appendZigzag(b, st.DistinctCount)
	}
	if st.HasMax {
		bin(5, st.Max)
	}
	if st.HasMin {
		bin(6, st.Min)
	}
	return append(b, 0, 0, 0) // the ends of Statistics, DataPageHeader, PageHeader
}

// AppendDictionaryPageHeader appends the PageHeader arrow-go writes for a dictionary page
// of entries values in enc, uncompressed bytes before compression and compressed after:
// PageHeader{type: DICTIONARY_PAGE, uncompressed_page_size, compressed_page_size,
// dictionary_page_header: DictionaryPageHeader{num_values, encoding, is_sorted: false}}.
func AppendDictionaryPageHeader(b []byte, entries, uncompressed, compressed int, enc parquet.Encoding) []byte {
	b = append(b, 1<<4|thriftI32, 2<<1) // type: DICTIONARY_PAGE (2)
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(uncompressed))
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(compressed))
	b = append(b, 4<<4|thriftStruct) // field 7: dictionary_page_header
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(entries))
	b = appendZigzag(append(b, 1<<4|thriftI32), int64(enc))
	b = append(b, 1<<4|thriftFalse) // is_sorted: false
	return append(b, 0, 0)          // the ends of DictionaryPageHeader, PageHeader
}

// footerEntryBuffer is the size of the bufio.Writer through which arrow-go's page writer
// serializes a column chunk's footer entry (thrift.NewStreamTransportW: bufio's default).
const footerEntryBuffer = 4096

// FooterEntrySpill writes to w what arrow-go's page writer leaves in the file after a
// column chunk's pages when it closes the chunk: it serializes the chunk's footer entry
// (meta's Thrift ColumnChunk, after Finish) into the file through a 4 KiB bufio.Writer
// that it never flushes (serializedPageWriter.Close, metadata's WriteTo), so the bytes
// bufio passes on (4 KiB at a time, or a write longer than the empty buffer, whole) land
// in the file and the rest is dropped. Nothing, unless the entry passes 4 KiB: statistics
// of some 4 KiB (a long string minimum and maximum, each up to MaxStatsSize). No reader
// looks at those bytes (the footer points at each chunk), but the next chunk's offsets
// follow them. scratch is reused from call to call. The rule: the entry is serialized
// through a writer that follows bufio's steps (FooterEntryScratch) when a bound of its
// size passes the buffer, which only long statistics or a long path make it do. The
// error is the Thrift serializer's or w's. The rule and how it was found:
// docs/decisions/0020-checkpoint-pages-encoded-here.md (follow-ups) and
// docs/decisions/0021-data-file-pages-encoded-here.md. WritePlainChunk and
// ChunkPager.Close call it, for flat data files and deltalog's checkpoints.
func FooterEntrySpill(meta *metadata.ColumnChunkMetaDataBuilder, w io.Writer, scratch *FooterEntryScratch) error {
	cc := meta.Contents()
	bound := 512 // the entry's integers, encodings, encoding stats and field headers
	for _, p := range cc.MetaData.PathInSchema {
		bound += len(p) + 8
	}
	if st := cc.MetaData.Statistics; st != nil {
		bound += len(st.Max) + len(st.Min) + len(st.MaxValue) + len(st.MinValue) + 64
	}
	if bound <= footerEntryBuffer {
		return nil
	}
	scratch.reset()
	proto := thrift.NewTCompactProtocolConf(scratch, nil)
	if err := cc.Write(context.Background(), proto); err != nil {
		return err
	}
	if scratch.flushed == 0 {
		return nil
	}
	_, err := w.Write(scratch.stream[:scratch.flushed])
	return err
}

// FooterEntryScratch is FooterEntrySpill's scratch, its zero value ready: a Thrift
// transport that keeps what is written to it (stream) and
// counts how much of it a bufio.Writer of footerEntryBuffer bytes over a writer that is
// not an io.StringWriter would have passed on (flushed): bufio's Write, WriteByte and
// WriteString steps, without the buffer.
type FooterEntryScratch struct {
	stream   []byte
	buffered int
	flushed  int
}

func (f *FooterEntryScratch) reset() { f.stream, f.buffered, f.flushed = f.stream[:0], 0, 0 }

func (f *FooterEntryScratch) Write(p []byte) (int, error) {
	f.stream = append(f.stream, p...)
	n := len(p)
	for n > footerEntryBuffer-f.buffered {
		if f.buffered == 0 {
			f.flushed += n // a large write to an empty buffer goes straight through
			return len(p), nil
		}
		n -= footerEntryBuffer - f.buffered
		f.flushed += footerEntryBuffer
		f.buffered = 0
	}
	f.buffered += n
	return len(p), nil
}

func (f *FooterEntryScratch) WriteByte(c byte) error {
	f.stream = append(f.stream, c)
	if f.buffered == footerEntryBuffer {
		f.flushed += footerEntryBuffer
		f.buffered = 0
	}
	f.buffered++
	return nil
}

func (f *FooterEntryScratch) WriteString(s string) (int, error) {
	f.stream = append(f.stream, s...)
	n := len(s)
	for n > footerEntryBuffer-f.buffered {
		n -= footerEntryBuffer - f.buffered
		f.flushed += footerEntryBuffer
		f.buffered = 0
	}
	f.buffered += n
	return len(s), nil
}

// The rest of thrift.TRichTransport: the transport is only written.

func (f *FooterEntryScratch) Read([]byte) (int, error)    { return 0, io.EOF }
func (f *FooterEntryScratch) ReadByte() (byte, error)     { return 0, io.EOF }
func (f *FooterEntryScratch) Close() error                { return nil }
func (f *FooterEntryScratch) Flush(context.Context) error { return nil }
func (f *FooterEntryScratch) RemainingBytes() uint64      { return 0 }
func (f *FooterEntryScratch) Open() error                 { return nil }
func (f *FooterEntryScratch) IsOpen() bool                { return true }
