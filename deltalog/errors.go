package deltalog

import (
	"errors"
	"fmt"
)

// UnsupportedFeatureError refuses a table that needs a table feature this package does not
// implement (docs/reference/delta-protocol.md §6.2: a reader must refuse unknown reader
// features, a writer every feature it does not implement). Reader is true when reading is
// refused, false when only writing is.
type UnsupportedFeatureError struct {
	Feature string
	Reader  bool
}

func (e *UnsupportedFeatureError) Error() string {
	if e.Reader {
		return fmt.Sprintf("deltalog: cannot read table: reader feature %q is not supported", e.Feature)
	}
	return fmt.Sprintf("deltalog: cannot write table: writer feature %q is not supported", e.Feature)
}

// UnsupportedVersionError refuses a table whose minReaderVersion (Reader true) or
// minWriterVersion (Reader false) is above what this package implements (reader 3,
// writer 7) (docs/reference/delta-protocol.md §6.1).
type UnsupportedVersionError struct {
	Version int
	Reader  bool
}

func (e *UnsupportedVersionError) Error() string {
	if e.Reader {
		return fmt.Sprintf("deltalog: cannot read table: minReaderVersion %d is not supported (max %d)", e.Version, maxReaderVersion)
	}
	return fmt.Sprintf("deltalog: cannot write table: minWriterVersion %d is not supported (max %d)", e.Version, maxWriterVersion)
}

// VersionNotFoundError is returned by SnapshotAt for a version the log cannot rebuild:
// newer than Latest, or older than the earliest version that still has a commit file or
// checkpoint. Latest is -1 when the table does not exist.
type VersionNotFoundError struct {
	Version int64
	Latest  int64
}

func (e *VersionNotFoundError) Error() string {
	if e.Latest < 0 {
		return fmt.Sprintf("deltalog: version %d not found: the table has no commits", e.Version)
	}
	return fmt.Sprintf("deltalog: version %d not found (latest is %d)", e.Version, e.Latest)
}

// CorruptLogError means the _delta_log cannot be replayed: a commit missing between a
// checkpoint and the target version, no metaData or protocol, an unparsable commit or
// checkpoint. Version is the version concerned and Reason says what is wrong.
type CorruptLogError struct {
	Version int64
	Reason  string
	Err     error
}

func (e *CorruptLogError) Error() string {
	msg := fmt.Sprintf("deltalog: corrupt log at version %d: %s", e.Version, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *CorruptLogError) Unwrap() error { return e.Err }

// SchemaError is a Delta schema that cannot be parsed or mapped to Arrow (or back):
// Path is the dotted field path ("" for the whole schema).
type SchemaError struct {
	Path   string
	Reason string
}

func (e *SchemaError) Error() string {
	if e.Path == "" {
		return "deltalog: schema: " + e.Reason
	}
	return fmt.Sprintf("deltalog: schema: field %s: %s", e.Path, e.Reason)
}

// ErrNoTable is returned by operations that need an existing table (a checkpoint, for
// example) when the snapshot has no version.
var ErrNoTable = errors.New("deltalog: table does not exist")
