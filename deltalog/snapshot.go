package deltalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// fileKey identifies a logical file: its path and its deletion vector's unique id ("" when
// it has none) (docs/reference/delta-protocol.md §2.4).
type fileKey struct {
	path string
	dvID string
}

// Snapshot is the reconciled state of a table at one version (docs/reference/delta-protocol.md
// §9.2). It is immutable and safe for concurrent use.
type Snapshot struct {
	table *Table
	// replaced is the table's log store's count of replaced logs when the snapshot was
	// read (logstore.Replacements): a kept snapshot of another count is of a log deleted
	// since, and is not used (Table.Snapshot).
	replaced uint64
	version  int64
	protocol Protocol
	metadata Metadata

	files fileSet[Add]
	// tombstones are the removes replayed from JSON commits (after the checkpoint);
	// cpTombstones those of the checkpoint, decoded only when Tombstones needs them. A
	// checkpoint tombstone counts unless its file is live again or a newer remove of it is
	// in tombstones.
	tombstones   fileSet[Remove]
	cpTombstones *lazyTombstones
	txns         map[string]Txn
	domains      map[string]DomainMetadata

	// commitInfos holds the commitInfo of the versions replayed from JSON commits (those
	// after the checkpoint the snapshot started from); checkpoints carry none.
	commitInfos map[int64]CommitInfo

	// checkpoint is the version of the checkpoint the snapshot was built from, -1 when it
	// was replayed from version 0.
	checkpoint int64

	// lazy fills in the stats of the adds read from the checkpoint (nil when none are
	// missing); Files loads them once, shared with snapshots derived from this one.
	lazy *lazyStats

	filesOnce sync.Once
	sorted    []Add // files ordered by path, built by the first Files call
}

// Table is the table the snapshot was read from.
func (s *Snapshot) Table() *Table { return s.table }

// Version is the snapshot's version, -1 when the table has no commits yet.
func (s *Snapshot) Version() int64 { return s.version }

// Protocol is the table's protocol action (zero when Version() == -1).
func (s *Snapshot) Protocol() Protocol { return s.protocol }

// Metadata is the table's metaData action (zero when Version() == -1).
func (s *Snapshot) Metadata() Metadata { return s.metadata }

// Files are the live data files, ordered by path (then deletion vector id), with their
// stats. The slice is shared: do not modify it. The first call builds it, reading the
// stats of files that came from the checkpoint (the open reads them only now, from the
// checkpoint bytes it kept: no I/O), so a snapshot opened only for its version, txns or
// protocol never pays for them.
func (s *Snapshot) Files() []Add {
	s.filesOnce.Do(func() {
		if s.lazy != nil {
			s.lazy.load()
		}
		s.sortFiles()
	})
	return s.sorted
}

// NumFiles is the number of live files, without building Files.
func (s *Snapshot) NumFiles() int { return s.files.Len() }

// Tombstones are the remove actions still known to the snapshot: every remove replayed
// from JSON, plus the unexpired ones its checkpoint carried. Ordered by path. The
// checkpoint's are decoded on the first call (from the bytes the open kept: no I/O), so an
// open never pays for them; an error says they could not be decoded (VACUUM must then not
// run: it would delete files they still protect).
func (s *Snapshot) Tombstones() ([]Remove, error) {
	return s.tombstonesOf(s.cpTombstones.load)
}

// tombstoneKeys is Tombstones with only the key fields of the checkpoint's (path,
// deletionTimestamp, deletionVector) sure to be set: what VACUUM reads, decoded without
// the checkpoint's other remove leaves (checkpoint_removes.go).
func (s *Snapshot) tombstoneKeys() ([]Remove, error) {
	return s.tombstonesOf(s.cpTombstones.keyed)
}

// tombstonesOf is Tombstones with the checkpoint's tombstones from fromCheckpoint.
func (s *Snapshot) tombstonesOf(decode func() ([]*Remove, error)) ([]Remove, error) {
	fromCheckpoint, err := decode()
	if err != nil {
		return nil, fmt.Errorf("decode the tombstones of checkpoint %d: %w", s.checkpoint, err)
	}
	type keyed struct {
		k fileKey
		r *Remove
	}
	all := make([]keyed, 0, s.tombstones.Len()+len(fromCheckpoint))
	for k, r := range s.tombstones.All() {
		all = append(all, keyed{k, r})
	}
	for _, r := range fromCheckpoint {
		k := fileKey{path: r.DecodedPath(), dvID: r.DeletionVector.UniqueID()}
		if _, live := s.files.Get(k); live {
			continue
		}
		if _, newer := s.tombstones.Get(k); newer {
			continue
		}
		all = append(all, keyed{k, r})
	}
	slices.SortFunc(all, func(a, b keyed) int { return compareKeys(a.k, b.k) })
	out := make([]Remove, len(all))
	for i, e := range all {
		out[i] = *e.r
	}
	return out, nil
}

// TxnVersion is the latest txn version recorded for appID (docs/reference/delta-protocol.md
// §2.7); ok is false when the app id has none.
func (s *Snapshot) TxnVersion(appID string) (version int64, ok bool) {
	t, ok := s.txns[appID]
	return t.Version, ok
}

// Txns are the txn actions of the snapshot, one per app id, ordered by app id.
func (s *Snapshot) Txns() []Txn {
	ids := slices.Sorted(maps.Keys(s.txns))
	out := make([]Txn, len(ids))
	for i, id := range ids {
		out[i] = s.txns[id]
	}
	return out
}

// DomainMetadata returns the live (not removed) domain metadata actions, ordered by domain.
func (s *Snapshot) DomainMetadata() []DomainMetadata {
	names := slices.Sorted(maps.Keys(s.domains))
	out := make([]DomainMetadata, len(names))
	for i, n := range names {
		out[i] = s.domains[n]
	}
	return out
}

// CommitInfo returns the commitInfo of version v when v was replayed from its JSON
// commit file (the versions after the snapshot's checkpoint); ok is false otherwise.
func (s *Snapshot) CommitInfo(v int64) (CommitInfo, bool) {
	ci, ok := s.commitInfos[v]
	return ci, ok
}

// CheckpointVersion is the version of the checkpoint the snapshot was built from, or -1.
func (s *Snapshot) CheckpointVersion() int64 { return s.checkpoint }

// Schema parses the table schema from metaData.schemaString.
func (s *Snapshot) Schema() (*StructType, error) {
	return ParseSchema(s.metadata.SchemaString)
}

// ArrowSchema is the table schema as Arrow (see ToArrow). The partition columns are part
// of it, as in Delta's schema. The result is shared by every snapshot with the same
// schema string (parsedSchemas): callers do not modify it, and the same pointer says the
// same schema.
func (s *Snapshot) ArrowSchema() (*arrow.Schema, error) {
	e, err := parsedSchemas.of(s.metadata.SchemaString)
	if err != nil {
		return nil, err
	}
	return e.arrow, e.arrowErr
}

// schemasKept is how many schema strings parsedSchemas keeps parsed: a process streams a
// table's bronze and facts (a few schemas), and a schema string changes only with a
// metaData action.
const schemasKept = 8

// parsedSchemas keeps what is derived from the schema strings parsed last (the Arrow form,
// the column feature a writer must honour), so the snapshots of a table kept across a
// warm process's batches, and each commit's CanWrite, do not parse the same schema JSON
// again every batch (docs/performance.md § CPU and allocation of a 1,000-row batch, and
// docs/performance.md § CPU per batch: the commit path).
var parsedSchemas schemaCache

// schemaEntry is what parsedSchemas keeps of one schema string.
type schemaEntry struct {
	// arrow is the schema as Arrow (ToArrow), or nil with arrowErr ToArrow's error.
	arrow    *arrow.Schema
	arrowErr error
	// columnFeature is activeColumnFeature of the schema: a feature its columns' metadata
	// use that an appender cannot honour, or "".
	columnFeature string
	// unchanged is the last Arrow schema that Transaction.SetSchema found to change
	// nothing against this schema (sameAs).
	mu        sync.Mutex
	unchanged *arrow.Schema
}

// sameAs says whether SetSchema found schema (an equal one: arrow.Schema.Equal compares
// what FromArrow reads, each field's name, type, nullability and metadata) to change
// nothing against this table schema. Whether the table allows type widening does not
// enter: a schema that changes nothing changes no type. A stream commits the same schema
// every batch, and deciding it again (parsing the table's schema JSON, mapping the Arrow
// schema, comparing the two) was ~0.1 ms of a batch (docs/performance.md § Issue 13: a
// code-level cut).
func (e *schemaEntry) sameAs(schema *arrow.Schema) bool {
	e.mu.Lock()
	kept := e.unchanged
	e.mu.Unlock()
	return kept != nil && kept.Equal(schema)
}

// keepSame records that SetSchema found schema to change nothing.
func (e *schemaEntry) keepSame(schema *arrow.Schema) {
	e.mu.Lock()
	e.unchanged = schema
	e.mu.Unlock()
}

type schemaCache struct {
	mu   sync.Mutex
	keys []string
	vals []*schemaEntry
}

// of is what is derived from schemaString, parsed once while it stays among the kept
// ones. The error is ParseSchema's, and a string that does not parse is not kept;
// ToArrow's error is kept in the entry (it is a function of the string).
func (c *schemaCache) of(schemaString string) (*schemaEntry, error) {
	c.mu.Lock()
	for i, k := range c.keys {
		if k == schemaString {
			v := c.vals[i]
			c.mu.Unlock()
			return v, nil
		}
	}
	c.mu.Unlock()
	st, err := ParseSchema(schemaString)
	if err != nil {
		return nil, err
	}
	e := &schemaEntry{columnFeature: activeColumnFeature(st)}
	e.arrow, e.arrowErr = ToArrow(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.keys) == schemasKept {
		c.keys, c.vals = c.keys[1:], c.vals[1:]
	}
	c.keys, c.vals = append(c.keys, schemaString), append(c.vals, e)
	return e, nil
}

func compareKeys(a, b fileKey) int {
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	return strings.Compare(a.dvID, b.dvID)
}

// sortFiles builds the ordered file list.
func (s *Snapshot) sortFiles() {
	es := s.files.Ordered()
	s.sorted = make([]Add, len(es))
	for i, e := range es {
		s.sorted[i] = *e.v
	}
}

// CanWrite checks that this package may commit to the table at this snapshot (see the
// CanWrite function). A snapshot of a table that does not exist yet can always be written.
func (s *Snapshot) CanWrite() error {
	if s.version < 0 {
		return nil
	}
	return CanWrite(s.protocol, s.metadata)
}

// CanReadData checks that the live files' rows can be read as the table defines them: it
// refuses with *UnsupportedFeatureError{Reader: true} a table that uses column mapping
// (data files use physical column names). Deletion vectors are honoured by Scan: the rows
// they mark deleted are never returned. With typeWidening, a column's delta.typeChanges
// naming a change that is not a widening this package converts is a *SchemaError. The log
// itself (Files, stats) is readable either way.
func (s *Snapshot) CanReadData() error {
	if mode := s.metadata.Configuration["delta.columnMapping.mode"]; mode != "" && mode != "none" {
		return &UnsupportedFeatureError{Feature: FeatureColumnMapping, Reader: true}
	}
	if s.protocol.HasReaderFeature(FeatureTypeWidening) {
		st, err := s.Schema()
		if err != nil {
			return err
		}
		return checkTypeChanges(st)
	}
	return nil
}

// successor returns a snapshot equal to s that the commits after s.Version() can be
// applied to (applyCommits) without changing s: the file sets are derived (their shared
// part is not copied), the small maps are copied, the lazy stats are shared.
func (s *Snapshot) successor() *Snapshot {
	n := &Snapshot{
		table: s.table, replaced: s.replaced, version: s.version, protocol: s.protocol, metadata: s.metadata,
		files: s.files.derive(), tombstones: s.tombstones.derive(),
		cpTombstones: s.cpTombstones,
		txns:         maps.Clone(s.txns), domains: maps.Clone(s.domains), commitInfos: maps.Clone(s.commitInfos),
		checkpoint: s.checkpoint, lazy: s.lazy,
	}
	if n.txns == nil {
		n.txns = map[string]Txn{}
	}
	if n.domains == nil {
		n.domains = map[string]DomainMetadata{}
	}
	if n.commitInfos == nil {
		n.commitInfos = map[int64]CommitInfo{}
	}
	return n
}

// applyCommits reconciles the actions of the versions after s.Version(), in order, into s
// (docs/reference/delta-protocol.md §9.2): s must be a successor, not yet shared.
func (s *Snapshot) applyCommits(commits [][]Action) {
	proto, meta := &s.protocol, &s.metadata
	for _, commit := range commits {
		s.version++
		for _, a := range commit {
			if a.CommitInfo != nil {
				s.commitInfos[s.version] = *a.CommitInfo
				continue
			}
			s.applyAction(a, &proto, &meta)
		}
	}
	s.protocol, s.metadata = *proto, *meta
}
