package deltalog

import (
	"crypto/rand"
	"encoding/hex"
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
// A Transaction only appends: every commit it makes is a blind append in Spark's sense
// (commitInfo.isBlindAppend = true), so it conflicts with a concurrent commit only when that
// commit changed the protocol or metadata, or moved the txn version of the same app id
// (see Commit). A Transaction is not safe for concurrent use; commit it once.
//
// (docs/dev/parallel-plan.md names this type Txn; in this package Txn is the txn action.)
type Transaction struct {
	table *Table
	snap  *Snapshot

	adds         []Add
	appID        string
	appVersion   int64
	hasApp       bool
	userMetadata string
	operation    string
	opParams     map[string]string

	// metadata and protocol are the actions SetSchema decided to write (nil: none).
	metadata *Metadata
	protocol *Protocol

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

// SetSchema sets the table schema the commit needs (the Arrow schema is mapped with
// FromArrow):
//   - on a snapshot with no table, it creates the table: version 0 carries the lowest
//     protocol for the schema (ProtocolFor) and a new metaData;
//   - on an existing table whose schema has every column of schema with the same type,
//     nullability and name case, and no other, it is a no-op (column order is ignored);
//   - when schema adds columns, which must all be nullable, the commit carries a new
//     metaData with the caller's column order, the existing fields keeping their
//     definitions (metadata included); a protocol upgrade (timestampNtz) goes with it
//     (UpgradeProtocol).
//
// Anything else is a *SchemaChangeError naming the column: a dropped column, a type or
// nullability change, a column whose name differs only in case, a new non-nullable column.
// Calling SetSchema again replaces the earlier decision.
func (tx *Transaction) SetSchema(schema *arrow.Schema) error {
	tx.metadata, tx.protocol = nil, nil
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
	merged, changed, err := evolveSchema(cur, next)
	if err != nil || !changed {
		return err
	}
	md := tx.snap.Metadata()
	md.SchemaString = merged.String()
	md.Configuration = maps.Clone(md.Configuration)
	md.PartitionColumns = slices.Clone(md.PartitionColumns)
	tx.metadata = &md
	if p, up := UpgradeProtocol(tx.snap.Protocol(), merged); up {
		tx.protocol = &p
	}
	return nil
}

// evolveSchema checks that next only adds nullable top-level columns to cur and returns
// the schema to write: next's column order, with cur's field definitions for the columns
// cur has. changed is false when next adds nothing.
func evolveSchema(cur, next *StructType) (*StructType, bool, error) {
	for _, old := range cur.Fields {
		nf, ok := next.Field(old.Name)
		if !ok {
			return nil, false, &SchemaChangeError{Column: old.Name, Reason: "column dropped (only adding nullable columns is allowed)"}
		}
		if nf.Name != old.Name {
			return nil, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf("renamed to %q (case differs)", nf.Name)}
		}
		if a, b := typeString(old.Type), typeString(nf.Type); a != b {
			return nil, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf("type changed from %s to %s", a, b)}
		}
		if old.Nullable != nf.Nullable {
			return nil, false, &SchemaChangeError{Column: old.Name, Reason: fmt.Sprintf("nullability changed from %t to %t", old.Nullable, nf.Nullable)}
		}
	}
	if len(next.Fields) == len(cur.Fields) {
		return cur, false, nil
	}
	out := &StructType{Fields: make([]StructField, 0, len(next.Fields))}
	for _, nf := range next.Fields {
		if old, ok := cur.Field(nf.Name); ok {
			out.Fields = append(out.Fields, old)
			continue
		}
		if !nf.Nullable {
			return nil, false, &SchemaChangeError{Column: nf.Name, Reason: "a new column must be nullable (existing rows have no value)"}
		}
		out.Fields = append(out.Fields, nf)
	}
	return out, true, nil
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
// (required first under In-Commit Timestamps), then protocol, metaData, txn, adds.
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
	blind := true
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
	out := make([]Action, 0, 4+len(tx.adds))
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
