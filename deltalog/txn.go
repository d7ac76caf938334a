package deltalog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Transaction is one optimistic transaction on a table, begun from a snapshot
// (docs/reference/delta-protocol.md §10.1): it collects the files to add, the application's
// txn id, the commit's provenance and at most one schema change, and Commit writes them as the
// next version.
//
// A Transaction that only adds files is a blind append in Spark's sense
// (commitInfo.isBlindAppend = true): it conflicts with a concurrent commit only when that
// commit changed the protocol or metadata, or moved the txn version of the same app id
// (see Commit). One that removes files (Remove), or declares what it read (ReadFiles,
// ReadPredicate), is not: it also conflicts with winners that removed a file it read or
// removes, or added rows its read predicate matches (conflict.go). A Transaction is not
// safe for concurrent use; commit it once.
//
// (docs/dev/parallel-plan.md names this type Txn; in this package Txn is the txn action.)
type Transaction struct {
	table *Table
	snap  *Snapshot

	adds         []Add
	removes      []Remove
	domains      []DomainMetadata
	appID        string
	appVersion   int64
	hasApp       bool
	userMetadata string
	operation    string
	opParams     map[string]string
	opMetrics    map[string]string

	// metadata and protocol are the actions SetSchema, EnableFeatures and SetProperties
	// decided to write (nil: none).
	metadata *Metadata
	protocol *Protocol

	// What the transaction read, for the conflict checks of a non-blind commit: the files
	// (by decoded path), and whether adds of winners matching readPred (every add when
	// readAll) would have changed what it read.
	readPaths map[string]bool
	readPred  func(*Add) bool
	readAll   bool

	// winners are the actions of the commits that won races against this transaction,
	// in version order from its snapshot's version + 1 (see rebase).
	winners [][]Action

	done      bool
	result    *CommitResult // set by a successful Commit
	committed []Action      // the actions Commit wrote; nil when skipped
	next      *Snapshot     // NextSnapshot's result, once built
}

// Begin starts a transaction that reads snap (a snapshot of t; Version() -1 to create the
// table). Nothing is checked or read until Commit.
func (t *Table) Begin(snap *Snapshot) *Transaction {
	return &Transaction{table: t, snap: snap}
}

// Snapshot is the snapshot the transaction reads.
func (tx *Transaction) Snapshot() *Snapshot { return tx.snap }

// Add adds data files to the commit. Paths are relative to the table root and must be unique
// (docs/reference/delta-protocol.md §1.2: never reuse a name); DataChange should be true for
// new rows. AddFromParquet builds an Add from a written file.
func (tx *Transaction) Add(files ...Add) { tx.adds = append(tx.adds, files...) }

// Remove removes logical files from the table in this commit
// (docs/reference/delta-protocol.md §2.5, §2.6): build each with Add.RemoveAction so it
// keeps the file's deletion vector, partition values, size and tags. A removed file is
// also a file the transaction read (ReadFiles): a winner that removed it too conflicts.
// A table whose appendOnly feature is active refuses removes that change data
// (ErrAppendOnly).
func (tx *Transaction) Remove(files ...Remove) {
	tx.removes = append(tx.removes, files...)
	for i := range files {
		tx.markRead(files[i].DecodedPath())
	}
}

// ReadFiles declares that the commit depends on the rows of these live files (a MERGE read
// them to find its matches): a winning commit that removed any of them — rewrote it, gave
// it a new deletion vector, or compacted it — makes Commit fail with
// *ConcurrentModificationError (docs/reference/delta-protocol.md §10.2, check 6).
func (tx *Transaction) ReadFiles(files ...Add) {
	for i := range files {
		tx.markRead(files[i].DecodedPath())
	}
}

func (tx *Transaction) markRead(path string) {
	if tx.readPaths == nil {
		tx.readPaths = map[string]bool{}
	}
	tx.readPaths[path] = true
}

// ReadPredicate declares what else the commit read: a winning commit's add with
// dataChange true for which match returns true (it may hold rows the transaction would
// have seen, a key it inserts again, say) makes Commit fail with
// *ConcurrentModificationError (docs/reference/delta-protocol.md §10.2, check 5, under
// Serializable isolation: a winner's blind append counts too). A nil match means the
// transaction read the whole table: every added file of a winner conflicts, and so does
// every removed one. Adds with dataChange false (compaction) never conflict through it.
func (tx *Transaction) ReadPredicate(match func(a *Add) bool) {
	if match == nil {
		tx.readAll = true
		return
	}
	tx.readPred = match
}

// SetDomainMetadata writes the domain's configuration in this commit
// (docs/reference/delta-protocol.md §2.9; at most one per domain, the last call wins). The
// table must support the domainMetadata writer feature: EnableFeatures adds it. A winning
// commit that wrote the same domain makes Commit fail with *ConcurrentModificationError
// (check 3). Domains named delta.* belong to Delta itself and are refused at Commit.
func (tx *Transaction) SetDomainMetadata(domain, configuration string) {
	for i := range tx.domains {
		if tx.domains[i].Domain == domain {
			tx.domains[i].Configuration = configuration
			return
		}
	}
	tx.domains = append(tx.domains, DomainMetadata{Domain: domain, Configuration: configuration})
}

// EnableFeatures lists table features in the protocol this commit writes (moving the table
// to reader 3 / writer 7 as UpgradeProtocol does, with every feature its legacy versions
// implied): a reader-writer feature (deletionVectors, timestampNtz, ...) in both lists, a
// writer-only feature (domainMetadata, ...) in writerFeatures
// (docs/reference/delta-protocol.md §6.2, §6.3). Features already listed are left alone;
// nothing is written when all are. Call it after SetSchema on a new table. A feature this
// package cannot write is refused at Commit (CanWrite).
func (tx *Transaction) EnableFeatures(names ...string) {
	cur := tx.snap.Protocol()
	if tx.protocol != nil {
		cur = *tx.protocol
	}
	next, changed := withFeatures(cur, names...)
	if changed {
		tx.protocol = &next
	}
}

// SetProperties sets table properties (metaData.configuration) in this commit, keeping the
// others; an empty value removes the property. Nothing is written when every property
// already has its value.
func (tx *Transaction) SetProperties(props map[string]string) {
	md := tx.commitMetadata()
	conf := maps.Clone(md.Configuration)
	if conf == nil {
		conf = map[string]string{}
	}
	changed := false
	for k, v := range props {
		old, had := conf[k]
		switch {
		case v == "" && had:
			delete(conf, k)
			changed = true
		case v != "" && old != v:
			conf[k] = v
			changed = true
		}
	}
	if !changed {
		return
	}
	md.Configuration = conf
	md.PartitionColumns = slices.Clone(md.PartitionColumns)
	tx.metadata = &md
}

// rearrangesOnly reports whether the transaction has file actions and all of them have
// dataChange false: it moves rows between files without changing the table's data.
func (tx *Transaction) rearrangesOnly() bool {
	if len(tx.adds)+len(tx.removes) == 0 {
		return false
	}
	for i := range tx.adds {
		if tx.adds[i].DataChange {
			return false
		}
	}
	for i := range tx.removes {
		if tx.removes[i].DataChange {
			return false
		}
	}
	return true
}

// blind reports whether the transaction is a blind append: it removes nothing and
// declared no read (docs/reference/delta-protocol.md §10.3).
func (tx *Transaction) blind() bool {
	return len(tx.removes) == 0 && len(tx.readPaths) == 0 && tx.readPred == nil && !tx.readAll
}

// AddFromParquet is the add action for a data file parquetio wrote: its path
// percent-encoded as the log requires (docs/reference/delta-protocol.md §2.4), size,
// modification time in milliseconds, dataChange true (new rows) and its statistics.
func AddFromParquet(f parquetio.File) Add {
	return Add{
		Path:             (&url.URL{Path: f.Path}).EscapedPath(),
		Size:             f.Size,
		ModificationTime: f.ModTime.UnixMilli(),
		DataChange:       true,
		Stats:            f.Stats,
	}
}

// SetAppTxn records txn(appID, version) in the commit (docs/reference/delta-protocol.md §2.7).
// Commit skips the whole transaction, successfully, when the table already records a version
// >= version for appID: that is how a replayed batch is not doubled.
func (tx *Transaction) SetAppTxn(appID string, version int64) {
	tx.appID, tx.appVersion, tx.hasApp = appID, version, true
}

// SetUserMetadata sets commitInfo.userMetadata (free text; this project writes a compact
// JSON of what the commit is).
func (tx *Transaction) SetUserMetadata(s string) { tx.userMetadata = s }

// SetOperation sets commitInfo.operation and operationParameters. Each value is written
// as a JSON string holding exactly the given text, which is the shape Spark's commits
// have on disk: pass a string parameter bare ("Append", not `"Append"` — a quoted value
// is written as "\"Append\"", which Spark and Databricks show as a different mode) and a
// list as the text of its JSON ("[]", `["a","b"]`). Spark's WRITE in Append mode is
// SetOperation("WRITE", {"mode": "Append", "partitionBy": "[]"}) →
// "operationParameters":{"mode":"Append","partitionBy":"[]"}; its STREAMING UPDATE is
// {"outputMode": "Append", "queryId": id, "epochId": "5"}. Default: "WRITE" with
// {"mode":"Append","partitionBy":"[]"}, or "CREATE TABLE" with {"isManaged":"false",
// "partitionBy":"[]"} when the transaction creates the table.
func (tx *Transaction) SetOperation(op string, params map[string]string) {
	tx.operation, tx.opParams = op, maps.Clone(params)
}

// SetOperationMetrics sets commitInfo.operationMetrics: counts as Spark writes them, each a
// decimal string ({"numRemovedFiles": "12", "numAddedFiles": "1"}). Nil writes none.
func (tx *Transaction) SetOperationMetrics(m map[string]string) {
	tx.opMetrics = maps.Clone(m)
}

// SetSchema sets the table schema the commit needs (the Arrow schema is mapped with
// FromArrow):
//   - on a snapshot with no table, it creates the table: version 0 carries the lowest
//     protocol for the schema (ProtocolFor) and a new metaData;
//   - on an existing table whose schema has every column of schema with the same type,
//     nullability and name case, and no other, it is a no-op (column order is ignored);
//   - when schema adds columns, which must all be nullable, the commit carries a new
//     metaData with the caller's column order, the existing fields keeping their
//     definitions (metadata included); a protocol upgrade (timestampNtz) goes with it
//     (UpgradeProtocol);
//   - when the table property delta.enableTypeWidening is "true" and schema widens a
//     column's type as the typeWidening feature allows (Widens), the new metaData retypes
//     it and appends the change to its delta.typeChanges, and the protocol lists
//     typeWidening (docs/reference/delta-protocol.md §6.6).
//
// Anything else is a *SchemaChangeError naming the column: a dropped column, a type
// change other than such a widening (or one without the property), a nullability change, a column whose name differs only in case, a new non-nullable column.
// Calling SetSchema again replaces the earlier decision.
func (tx *Transaction) SetSchema(schema *arrow.Schema) error {
	tx.metadata, tx.protocol = nil, nil
	var kept *schemaEntry
	if tx.snap.Version() >= 0 {
		kept, _ = parsedSchemas.of(tx.snap.metadata.SchemaString)
		if kept != nil && kept.sameAs(schema) {
			return nil // an equal schema was found to change nothing (sameAs)
		}
	}
	next, err := FromArrow(schema)
	if err != nil {
		return err
	}
	if err := checkUniqueNames(next); err != nil {
		return err
	}
	if tx.snap.Version() < 0 {
		p := ProtocolFor(next)
		created := tx.now().UnixMilli()
		tx.protocol = &p
		tx.metadata = &Metadata{
			ID:               randomUUID(),
			Format:           Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString:     next.String(),
			PartitionColumns: []string{},
			Configuration:    map[string]string{},
			CreatedTime:      &created,
		}
		return nil
	}
	cur, err := tx.snap.Schema()
	if err != nil {
		return err
	}
	widen := tx.snap.Metadata().Configuration[PropEnableTypeWidening] == "true"
	merged, changed, widened, err := evolveSchema(cur, next, widen)
	if err != nil || !changed {
		if err == nil && kept != nil {
			kept.keepSame(schema)
		}
		return err
	}
	md := tx.snap.Metadata()
	md.SchemaString = merged.String()
	md.Configuration = maps.Clone(md.Configuration)
	md.PartitionColumns = slices.Clone(md.PartitionColumns)
	tx.metadata = &md
	p, up := UpgradeProtocol(tx.snap.Protocol(), merged)
	if widened {
		var w bool
		if p, w = withFeatures(p, FeatureTypeWidening); w {
			up = true
		}
	}
	if up {
		tx.protocol = &p
	}
	return nil
}

// evolveSchema checks that next only adds nullable top-level columns to cur, or, with
// widen, also widens a column's type as the typeWidening feature allows (Widens), and
// returns the schema to write: next's column order, with cur's field definitions for the
// columns cur has (a widened one retyped, the change recorded in its delta.typeChanges).
// changed is false when next adds and widens nothing; widened is true when a type was
// widened.
func evolveSchema(cur, next *StructType, widen bool) (out *StructType, changed, widened bool, err error) {
	retyped := map[string]StructField{}
	for _, old := range cur.Fields {
		nf, ok := next.Field(old.Name)
		if !ok {
			return nil, false, false, &SchemaChangeError{Column: old.Name, Reason: "column dropped (only adding nullable columns is allowed)"}
		}
		if nf.Name != old.Name {
			return nil, false, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf("renamed to %q (case differs)", nf.Name)}
		}
		if a, b := typeString(old.Type), typeString(nf.Type); a != b {
			switch {
			case !Widens(old.Type, nf.Type):
				return nil, false, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf("type changed from %s to %s", a, b)}
			case !widen:
				return nil, false, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf(
					"type changed from %s to %s, a widening the typeWidening feature allows, but the table property %s is not true", a, b, PropEnableTypeWidening)}
			}
			w, err := widenField(old, nf.Type)
			if err != nil {
				return nil, false, false, err
			}
			retyped[old.Name] = w
		}
		if old.Nullable != nf.Nullable {
			return nil, false, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf("nullability changed from %t to %t", old.Nullable, nf.Nullable)}
		}
	}
	if len(next.Fields) == len(cur.Fields) && len(retyped) == 0 {
		return cur, false, false, nil
	}
	out = &StructType{Fields: make([]StructField, 0, len(next.Fields))}
	for _, nf := range next.Fields {
		if w, ok := retyped[nf.Name]; ok {
			out.Fields = append(out.Fields, w)
			continue
		}
		if old, ok := cur.Field(nf.Name); ok {
			out.Fields = append(out.Fields, old)
			continue
		}
		if !nf.Nullable {
			return nil, false, false, &SchemaChangeError{Column: nf.Name, Reason: "a new column must be nullable (existing rows have no value)"}
		}
		out.Fields = append(out.Fields, nf)
	}
	return out, true, len(retyped) > 0, nil
}

// typeString is a data type's JSON form, for comparing types.
func typeString(t DataType) string {
	s := (&StructType{Fields: []StructField{{Name: "x", Type: t}}}).String()
	return strings.TrimSuffix(strings.TrimPrefix(s, `{"type":"struct","fields":[{"name":"x","type":`), `,"nullable":false,"metadata":{}}]}`)
}

// checkUniqueNames refuses top-level names equal ignoring case
// (docs/reference/delta-protocol.md §5.1: column names are case-insensitive).
func checkUniqueNames(s *StructType) error {
	seen := map[string]string{}
	for _, f := range s.Fields {
		k := strings.ToLower(f.Name)
		if prev, ok := seen[k]; ok {
			return &SchemaChangeError{Column: f.Name, Reason: fmt.Sprintf("collides with column %q ignoring case", prev)}
		}
		seen[k] = f.Name
	}
	return nil
}

// commitMetadata is the table metadata once the transaction commits.
func (tx *Transaction) commitMetadata() Metadata {
	if tx.metadata != nil {
		return *tx.metadata
	}
	return tx.snap.Metadata()
}

func (tx *Transaction) now() time.Time { return tx.table.opts.now() }

// actions builds the commit's actions in the order Spark writes them: commitInfo first
// (required first under In-Commit Timestamps), then protocol, metaData, txn, domain
// metadata, removes, adds.
func (tx *Transaction) actions(txnID string) []Action {
	now := tx.now().UnixMilli()
	op, params := tx.operation, tx.opParams
	if op == "" {
		if tx.snap.Version() < 0 {
			op, params = "CREATE TABLE", map[string]string{"isManaged": "false", "partitionBy": "[]"}
		} else {
			op, params = "WRITE", map[string]string{"mode": "Append", "partitionBy": "[]"}
		}
	}
	if params == nil {
		params = map[string]string{}
	}
	blind := tx.blind()
	ci := CommitInfo{
		Timestamp:           now,
		Operation:           op,
		OperationParameters: params,
		IsolationLevel:      "Serializable",
		IsBlindAppend:       &blind,
		UserMetadata:        tx.userMetadata,
		EngineInfo:          tx.engineInfo(),
		TxnID:               txnID,
	}
	if v := tx.snap.Version(); v >= 0 {
		ci.ReadVersion = &v
	}
	if tx.rearrangesOnly() {
		// Spark commits a transaction whose file actions all have dataChange false (a
		// compaction) at SnapshotIsolation (docs/reference/delta-protocol.md §10.3).
		ci.IsolationLevel = "SnapshotIsolation"
	}
	if tx.opMetrics != nil {
		if raw, err := json.Marshal(tx.opMetrics); err == nil {
			ci.Extra = map[string]json.RawMessage{"operationMetrics": raw}
		}
	}
	out := make([]Action, 0, 4+len(tx.domains)+len(tx.removes)+len(tx.adds))
	out = append(out, Action{CommitInfo: &ci})
	if tx.protocol != nil {
		out = append(out, Action{Protocol: tx.protocol})
	}
	if tx.metadata != nil {
		out = append(out, Action{MetaData: tx.metadata})
	}
	if tx.hasApp {
		out = append(out, Action{Txn: &Txn{AppID: tx.appID, Version: tx.appVersion, LastUpdated: &now}})
	}
	for i := range tx.domains {
		out = append(out, Action{DomainMetadata: &tx.domains[i]})
	}
	for i := range tx.removes {
		out = append(out, Action{Remove: &tx.removes[i]})
	}
	for i := range tx.adds {
		out = append(out, Action{Add: &tx.adds[i]})
	}
	return out
}

func (tx *Transaction) engineInfo() string {
	if e := tx.table.opts.EngineInfo; e != "" {
		return e
	}
	return defaultEngineInfo
}

// defaultEngineInfo is "mssqlcdc/<module version>" ("(devel)" in a build without one).
var defaultEngineInfo = func() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return "mssqlcdc/" + v
}()

// randomUUID is a random (version 4) UUID in its canonical text form.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
