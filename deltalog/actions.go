package deltalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Protocol is the protocol action: the reader and writer versions a table requires and, at
// reader version 3 / writer version 7, the table features by name
// (docs/reference/delta-protocol.md §6.1, §6.2).
type Protocol struct {
	MinReaderVersion int `json:"minReaderVersion"`
	MinWriterVersion int `json:"minWriterVersion"`
	// ReaderFeatures is present only when MinReaderVersion is 3.
	ReaderFeatures []string `json:"readerFeatures"`
	// WriterFeatures is present only when MinWriterVersion is 7.
	WriterFeatures []string `json:"writerFeatures"`
}

// MarshalJSON writes readerFeatures exactly when minReaderVersion is 3 and writerFeatures
// exactly when minWriterVersion is 7, as [] when empty: the lists are required there and
// absent below (docs/reference/delta-protocol.md §6.1).
func (p Protocol) MarshalJSON() ([]byte, error) {
	type lists struct {
		MinReaderVersion int       `json:"minReaderVersion"`
		MinWriterVersion int       `json:"minWriterVersion"`
		ReaderFeatures   *[]string `json:"readerFeatures,omitempty"`
		WriterFeatures   *[]string `json:"writerFeatures,omitempty"`
	}
	out := lists{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion}
	if p.MinReaderVersion >= 3 {
		rf := p.ReaderFeatures
		if rf == nil {
			rf = []string{}
		}
		out.ReaderFeatures = &rf
	}
	if p.MinWriterVersion >= 7 {
		wf := p.WriterFeatures
		if wf == nil {
			wf = []string{}
		}
		out.WriterFeatures = &wf
	}
	return json.Marshal(out)
}

// Format is metaData.format: the data file format, "parquet" in practice.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action (docs/reference/delta-protocol.md §2.2). A later metaData
// replaces the previous one entirely.
type Metadata struct {
	// ID is the table's GUID; it never changes.
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Format      Format `json:"format"`
	// SchemaString is the table schema in Delta's JSON schema format (see ParseSchema),
	// serialized to a string.
	SchemaString string `json:"schemaString"`
	// PartitionColumns are the partition column names, in order; empty when unpartitioned.
	PartitionColumns []string `json:"partitionColumns"`
	// Configuration holds the table properties (delta.*); all values are strings.
	Configuration map[string]string `json:"configuration"`
	// CreatedTime is the creation time in milliseconds since the epoch, or nil.
	CreatedTime *int64 `json:"createdTime,omitempty"`
}

// MarshalJSON writes the required collections as [] and {} rather than null.
func (m Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	p := plain(m)
	if p.Format.Provider == "" {
		p.Format.Provider = "parquet"
	}
	if p.Format.Options == nil {
		p.Format.Options = map[string]string{}
	}
	if p.PartitionColumns == nil {
		p.PartitionColumns = []string{}
	}
	if p.Configuration == nil {
		p.Configuration = map[string]string{}
	}
	return json.Marshal(p)
}

// DeletionVector is a deletion vector descriptor (docs/reference/delta-protocol.md §2.6).
type DeletionVector struct {
	// StorageType is "u" (relative UUID path), "i" (inline) or "p" (absolute path).
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	// Offset is the byte offset in the DV file; nil for inline DVs.
	Offset *int32 `json:"offset,omitempty"`
	// SizeInBytes is the size of the serialized bitmap.
	SizeInBytes int32 `json:"sizeInBytes"`
	// Cardinality is the number of deleted rows.
	Cardinality int64 `json:"cardinality"`
}

// UniqueID is storageType + pathOrInlineDv, plus "@offset" when an offset is present
// (docs/reference/delta-protocol.md §2.6). Together with a path it identifies a logical file.
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + strconv.FormatInt(int64(*dv.Offset), 10)
	}
	return id
}

// Add is the add action: a data file that is part of the table
// (docs/reference/delta-protocol.md §2.4).
type Add struct {
	// Path is the file's URI relative to the table root (or absolute), percent-encoded as
	// it appears in the log. Use (*Add).DecodedPath for the object key.
	Path string `json:"path"`
	// PartitionValues maps partition column to its serialized value; the empty string
	// stands for null (a JSON null reads as ""). Written as {} when unpartitioned.
	PartitionValues map[string]string `json:"partitionValues"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// ModificationTime is in milliseconds since the epoch.
	ModificationTime int64 `json:"modificationTime"`
	// DataChange is false when the file only rearranges existing data.
	DataChange bool `json:"dataChange"`
	// Stats is the per-file statistics JSON document (numRecords, minValues, maxValues,
	// nullCount), as a string; empty when unknown. See ParseStats.
	Stats                   string            `json:"stats,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
	DeletionVector          *DeletionVector   `json:"deletionVector,omitempty"`
	BaseRowID               *int64            `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64            `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      string            `json:"clusteringProvider,omitempty"`
}

// MarshalJSON writes partitionValues as {} rather than null.
func (a Add) MarshalJSON() ([]byte, error) {
	type plain Add
	p := plain(a)
	if p.PartitionValues == nil {
		p.PartitionValues = map[string]string{}
	}
	return json.Marshal(p)
}

// Remove is the remove action: a logical file leaves the table and becomes a tombstone
// until VACUUM (docs/reference/delta-protocol.md §2.4).
type Remove struct {
	Path string `json:"path"`
	// DeletionTimestamp is in milliseconds since the epoch; tombstone expiry counts from it.
	DeletionTimestamp    *int64            `json:"deletionTimestamp,omitempty"`
	DataChange           bool              `json:"dataChange"`
	ExtendedFileMetadata *bool             `json:"extendedFileMetadata,omitempty"`
	PartitionValues      map[string]string `json:"partitionValues,omitempty"`
	Size                 *int64            `json:"size,omitempty"`
	// Stats and Tags are kept in JSON commits only, never in checkpoints.
	Stats                   string            `json:"stats,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
	DeletionVector          *DeletionVector   `json:"deletionVector,omitempty"`
	BaseRowID               *int64            `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64            `json:"defaultRowCommitVersion,omitempty"`
}

// MarshalJSON writes partitionValues as {} rather than leaving it out when
// extendedFileMetadata is true: that flag promises partitionValues and size are present
// (docs/reference/delta-protocol.md §2.5).
func (r Remove) MarshalJSON() ([]byte, error) {
	type plain Remove
	p := plain(r)
	if p.ExtendedFileMetadata == nil || !*p.ExtendedFileMetadata || len(p.PartitionValues) > 0 {
		return json.Marshal(p)
	}
	type withParts struct {
		plain
		PartitionValues map[string]string `json:"partitionValues"`
	}
	return json.Marshal(withParts{plain: p, PartitionValues: map[string]string{}})
}

// Txn is the application transaction identifier (docs/reference/delta-protocol.md §2.7):
// the snapshot keeps the latest Version per AppID, which makes appends idempotent.
type Txn struct {
	AppID   string `json:"appId"`
	Version int64  `json:"version"`
	// LastUpdated is in milliseconds since the epoch, or nil.
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// CommitInfo is the commitInfo action (docs/reference/delta-protocol.md §2.8). It is
// free-form: the fields Spark writes and reads are typed here and every other field is
// kept in Extra so that a decoded commitInfo re-encodes without loss.
type CommitInfo struct {
	// Timestamp is the commit time in milliseconds since the epoch.
	Timestamp int64
	// InCommitTimestamp is set on tables with In-Commit Timestamps.
	InCommitTimestamp *int64
	// Operation is e.g. "WRITE", "CREATE TABLE", "STREAMING UPDATE".
	Operation string
	// OperationParameters holds JSON-encoded values as strings (Spark's form); a value a
	// writer stored as a non-string JSON value is kept as its JSON text.
	OperationParameters map[string]string
	ReadVersion         *int64
	IsolationLevel      string
	// IsBlindAppend tells Spark's conflict checker that the commit only appends.
	IsBlindAppend *bool
	UserMetadata  string
	EngineInfo    string
	TxnID         string
	// Extra holds every other field (operationMetrics, tags, clusterId, ...) as raw JSON.
	Extra map[string]json.RawMessage
}

var commitInfoKnown = map[string]bool{
	"timestamp": true, "inCommitTimestamp": true, "operation": true,
	"operationParameters": true, "readVersion": true, "isolationLevel": true,
	"isBlindAppend": true, "userMetadata": true, "engineInfo": true, "txnId": true,
}

// MarshalJSON writes the typed fields, then Extra, as one JSON object.
func (c CommitInfo) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(c.Extra)+10)
	for k, v := range c.Extra {
		if !commitInfoKnown[k] {
			m[k] = v
		}
	}
	m["timestamp"] = c.Timestamp
	if c.InCommitTimestamp != nil {
		m["inCommitTimestamp"] = *c.InCommitTimestamp
	}
	if c.Operation != "" {
		m["operation"] = c.Operation
	}
	if c.OperationParameters != nil {
		m["operationParameters"] = c.OperationParameters
	}
	if c.ReadVersion != nil {
		m["readVersion"] = *c.ReadVersion
	}
	if c.IsolationLevel != "" {
		m["isolationLevel"] = c.IsolationLevel
	}
	if c.IsBlindAppend != nil {
		m["isBlindAppend"] = *c.IsBlindAppend
	}
	if c.UserMetadata != "" {
		m["userMetadata"] = c.UserMetadata
	}
	if c.EngineInfo != "" {
		m["engineInfo"] = c.EngineInfo
	}
	if c.TxnID != "" {
		m["txnId"] = c.TxnID
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the typed fields and keeps the rest in Extra.
func (c *CommitInfo) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*c = CommitInfo{}
	for k, v := range raw {
		if isNull(v) {
			continue
		}
		var err error
		switch k {
		case "timestamp":
			err = json.Unmarshal(v, &c.Timestamp)
		case "inCommitTimestamp":
			c.InCommitTimestamp = new(int64)
			err = json.Unmarshal(v, c.InCommitTimestamp)
		case "operation":
			err = json.Unmarshal(v, &c.Operation)
		case "operationParameters":
			c.OperationParameters, err = stringMap(v)
		case "readVersion":
			c.ReadVersion = new(int64)
			err = json.Unmarshal(v, c.ReadVersion)
		case "isolationLevel":
			err = json.Unmarshal(v, &c.IsolationLevel)
		case "isBlindAppend":
			c.IsBlindAppend = new(bool)
			err = json.Unmarshal(v, c.IsBlindAppend)
		case "userMetadata":
			err = json.Unmarshal(v, &c.UserMetadata)
		case "engineInfo":
			err = json.Unmarshal(v, &c.EngineInfo)
		case "txnId":
			err = json.Unmarshal(v, &c.TxnID)
		default:
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
		if err != nil {
			return fmt.Errorf("commitInfo.%s: %w", k, err)
		}
	}
	return nil
}

// stringMap decodes a JSON object whose values are strings or, from some writers, other
// JSON values, which are kept as their JSON text.
func stringMap(data []byte) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
			continue
		}
		out[k] = string(v)
	}
	return out, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// DomainMetadata is the domainMetadata action (docs/reference/delta-protocol.md §2.9).
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	// Removed makes the action a tombstone for the domain.
	Removed bool `json:"removed"`
}

// CDC is the cdc action: a change data file (docs/reference/delta-protocol.md §2.10).
type CDC struct {
	Path            string            `json:"path"`
	PartitionValues map[string]string `json:"partitionValues"`
	Size            int64             `json:"size"`
	DataChange      bool              `json:"dataChange"`
	Tags            map[string]string `json:"tags,omitempty"`
}

// Sidecar is the sidecar action of a v2 checkpoint (docs/delta-reading.md
// § V2 checkpoints): a Parquet file of add and remove actions under _delta_log/_sidecars/ that
// belongs to the checkpoint. It never appears in commits.
type Sidecar struct {
	// Path is the file's name under _delta_log/_sidecars/ (or a URI), percent-encoded.
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// CheckpointMetadata is the checkpointMetadata action every v2 checkpoint holds once
// (docs/delta-reading.md § V2 checkpoints). It never appears in commits.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Action is one line of a commit file: exactly one of its fields is set. Lines with an
// action type this package does not know decode to an Action with no field set and are
// ignored (docs/reference/delta-protocol.md §2.1).
type Action struct {
	Protocol       *Protocol       `json:"protocol,omitempty"`
	MetaData       *Metadata       `json:"metaData,omitempty"`
	Add            *Add            `json:"add,omitempty"`
	Remove         *Remove         `json:"remove,omitempty"`
	Txn            *Txn            `json:"txn,omitempty"`
	CommitInfo     *CommitInfo     `json:"commitInfo,omitempty"`
	DomainMetadata *DomainMetadata `json:"domainMetadata,omitempty"`
	CDC            *CDC            `json:"cdc,omitempty"`
	// Sidecar and CheckpointMetadata appear only in v2 checkpoints.
	Sidecar            *Sidecar            `json:"sidecar,omitempty"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
}

// errActionCount is returned when an Action to encode has zero or several fields set.
var errActionCount = errors.New("action must have exactly one field set")

func (a *Action) count() int {
	n := 0
	for _, set := range []bool{a.Protocol != nil, a.MetaData != nil, a.Add != nil, a.Remove != nil,
		a.Txn != nil, a.CommitInfo != nil, a.DomainMetadata != nil, a.CDC != nil,
		a.Sidecar != nil, a.CheckpointMetadata != nil} {
		if set {
			n++
		}
	}
	return n
}

// EncodeActions serializes actions as a commit file: one JSON object per line, each line
// ending in "\n" (docs/reference/delta-protocol.md §2.1).
func EncodeActions(actions []Action) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range actions {
		if actions[i].count() != 1 {
			return nil, fmt.Errorf("encode action %d: %w", i, errActionCount)
		}
		if err := enc.Encode(&actions[i]); err != nil { // Encode ends each value with "\n"
			return nil, fmt.Errorf("encode action %d: %w", i, err)
		}
	}
	return buf.Bytes(), nil
}

// DecodeActions parses a commit file. Blank lines, unknown action types and unknown
// fields are ignored; a line that is not a JSON object is an error naming the line.
func DecodeActions(data []byte) ([]Action, error) {
	actions := make([]Action, 0, bytes.Count(data, []byte{'\n'})+1)
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(l, &a); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if a.count() == 0 {
			continue
		}
		actions = append(actions, a)
	}
	return actions, nil
}

// DecodedPath is the file path with its percent-encoding removed
// (docs/reference/delta-protocol.md §2.4: paths are RFC 2396 URIs), the object key under the
// table root for a relative path. A path that is not valid percent-encoding is returned
// unchanged.
func (a *Add) DecodedPath() string { return decodePath(a.Path) }

// RemoveAction is the remove action that takes this logical file out of the table at
// deletionTimestamp (ms since the epoch; tombstone expiry counts from it): the same path
// and deletion vector (a remove names the logical file, docs/reference/delta-protocol.md
// §2.6), extendedFileMetadata with the partition values and size, the stats, tags and
// row-tracking fields. dataChange is false only when the rows stay in the table in other
// files (a compaction or a clustering rewrite that moves them unchanged).
func (a *Add) RemoveAction(deletionTimestamp int64, dataChange bool) Remove {
	ext := true
	size := a.Size
	pv := a.PartitionValues
	if pv == nil {
		pv = map[string]string{}
	}
	return Remove{
		Path:                    a.Path,
		DeletionTimestamp:       &deletionTimestamp,
		DataChange:              dataChange,
		ExtendedFileMetadata:    &ext,
		PartitionValues:         pv,
		Size:                    &size,
		Stats:                   a.Stats,
		Tags:                    a.Tags,
		DeletionVector:          a.DeletionVector,
		BaseRowID:               a.BaseRowID,
		DefaultRowCommitVersion: a.DefaultRowCommitVersion,
	}
}

// DecodedPath is the file path with its percent-encoding removed; see Add.DecodedPath.
func (r *Remove) DecodedPath() string { return decodePath(r.Path) }

func decodePath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	d, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return d
}

// Stats is the per-file statistics document in add.stats (docs/reference/delta-protocol.md
// §4). MinValues, MaxValues and NullCount mirror the data schema (nested objects for structs);
// their leaves are kept as raw JSON so each column decodes them by its type.
type Stats struct {
	NumRecords int64                      `json:"numRecords"`
	MinValues  map[string]json.RawMessage `json:"minValues,omitempty"`
	MaxValues  map[string]json.RawMessage `json:"maxValues,omitempty"`
	NullCount  map[string]json.RawMessage `json:"nullCount,omitempty"`
	// TightBounds is false when min/max are only bounds (rows deleted by a DV); nil means
	// true.
	TightBounds *bool `json:"tightBounds,omitempty"`
}

// ParseStats decodes add.stats. ok is false when the file has no stats or they lack
// numRecords; statistics are optional and missing ones mean "unknown", never "no rows".
func ParseStats(stats string) (st Stats, ok bool, err error) {
	if stats == "" {
		return Stats{}, false, nil
	}
	var probe struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if err := json.Unmarshal([]byte(stats), &probe); err != nil {
		return Stats{}, false, fmt.Errorf("parse stats: %w", err)
	}
	if err := json.Unmarshal([]byte(stats), &st); err != nil {
		return Stats{}, false, fmt.Errorf("parse stats: %w", err)
	}
	return st, probe.NumRecords != nil, nil
}

// NumRecords is the file's row count from its stats; ok is false when unknown. Stats
// that begin with numRecords, as Spark's, delta-rs's and this package's do, are read
// without decoding the rest of the document.
func (a *Add) NumRecords() (n int64, ok bool) {
	return numRecordsIn(a.Stats)
}

// numRecordsIn reads numRecords from a stats document (docs/reference/delta-protocol.md
// §4.1): at once when it is the first key and a plain integer, else by decoding the
// document. ok is false when the document is empty, unparsable or has no numRecords.
// It takes the bytes of a checkpoint page as well (Snapshot.Totals), without copying
// them unless they must be decoded.
func numRecordsIn[S ~string | ~[]byte](stats S) (n int64, ok bool) {
	if len(stats) == 0 {
		return 0, false
	}
	const prefix = `{"numRecords":`
	if len(stats) > len(prefix) && string(stats[:len(prefix)]) == prefix {
		i, neg := len(prefix), false
		if stats[i] == '-' {
			neg, i = true, i+1
		}
		start := i
		for i < len(stats) && i-start < 18 && stats[i] >= '0' && stats[i] <= '9' {
			n = n*10 + int64(stats[i]-'0')
			i++
		}
		if i > start && i < len(stats) && (stats[i] == ',' || stats[i] == '}') {
			if neg {
				n = -n
			}
			return n, true
		}
	}
	var probe struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if json.Unmarshal([]byte(stats), &probe) != nil || probe.NumRecords == nil {
		return 0, false
	}
	return *probe.NumRecords, true
}
