package parquetio

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Codec is the compression codec of the data pages.
type Codec string

// Supported codecs. Snappy is our default: Spark's default codec, fast to write in a short
// Lambda. Delta's protocol suggests zstd when delta.parquet.compression.codec is unset; a
// table can ask for it.
const (
	Snappy Codec = "snappy"
	Zstd   Codec = "zstd"
)

// Defaults of WriterOptions.
const (
	// DefaultTargetFileSize is the size a file is rolled at, like Spark's and delta-rs's
	// target of 128 MiB.
	DefaultTargetFileSize int64 = 128 << 20
	// DefaultRowGroupBytes bounds the Arrow data of the row group held in memory: the
	// measured best, and the one default of every writer (deltalog/ingest uses it too).
	// Against 16 and 64 MiB, 8 MiB encodes fastest (the encoder's dictionaries and page
	// buffers stay small; 64 MiB ran at less than half the rate, in page faults) and holds
	// the least per writer; 4 MiB costs a fifth of the throughput (docs/performance.md §
	// Row-group size).
	DefaultRowGroupBytes int64 = 8 << 20
	// DefaultNumIndexedCols is delta.dataSkippingNumIndexedCols' default: statistics for
	// the first 32 leaf columns.
	DefaultNumIndexedCols = 32
	// DefaultStringPrefixLength is the characters a string min/max is cut to (Spark's
	// spark.databricks.io.skipping.stringPrefixLength, delta.dataSkippingStringPrefixLength).
	DefaultStringPrefixLength = 32
	// sliceRows is how many rows are encoded between two checks of the buffered size.
	sliceRows = 16 << 10
)

// WriterOptions tune a Writer. The zero value is usable: every zero field takes its
// default.
type WriterOptions struct {
	// TargetFileSize in bytes: a file is closed and uploaded once its encoded size reaches
	// it (checked every few thousand rows, so a file can exceed it by a slice of rows).
	TargetFileSize int64
	// RowGroupBytes in bytes: the current row group is encoded into the temporary file
	// once the Arrow data it holds reaches it. This bounds the writer's memory.
	RowGroupBytes int64
	// Codec is Snappy (default) or Zstd.
	Codec Codec
	// TempDir holds the temporary files; "" is os.TempDir().
	TempDir string
	// NumIndexedCols is how many leaf columns get statistics (delta.dataSkippingNumIndexedCols);
	// 0 is DefaultNumIndexedCols, -1 is all.
	NumIndexedCols int
	// StringPrefixLength is the characters a string min/max is cut to; 0 is
	// DefaultStringPrefixLength.
	StringPrefixLength int
}

// withDefaults fills zero fields and checks the rest.
func (o WriterOptions) withDefaults() (WriterOptions, error) {
	if o.TargetFileSize == 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.RowGroupBytes == 0 {
		o.RowGroupBytes = DefaultRowGroupBytes
	}
	if o.Codec == "" {
		o.Codec = Snappy
	}
	if o.NumIndexedCols == 0 {
		o.NumIndexedCols = DefaultNumIndexedCols
	}
	if o.StringPrefixLength == 0 {
		o.StringPrefixLength = DefaultStringPrefixLength
	}
	switch {
	case o.TargetFileSize < 0:
		return o, &OptionError{Option: "TargetFileSize", Reason: "negative"}
	case o.RowGroupBytes < 0:
		return o, &OptionError{Option: "RowGroupBytes", Reason: "negative"}
	case o.Codec != Snappy && o.Codec != Zstd:
		return o, &OptionError{Option: "Codec", Reason: fmt.Sprintf("%q is not snappy or zstd", o.Codec)}
	case o.NumIndexedCols < -1:
		return o, &OptionError{Option: "NumIndexedCols", Reason: "below -1"}
	case o.StringPrefixLength < 0:
		return o, &OptionError{Option: "StringPrefixLength", Reason: "negative"}
	}
	return o, nil
}

func (c Codec) compression() compress.Compression {
	if c == Zstd {
		return compress.Codecs.Zstd
	}
	return compress.Codecs.Snappy
}

// OptionError: a WriterOptions field is out of range. Write returns it.
type OptionError struct {
	Option string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("parquetio: option %s: %s", e.Option, e.Reason)
}
