package deltalog

import (
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// DefaultCheckpointInterval is the number of commits between checkpoints, Spark's default
// for delta.checkpointInterval (delta-rs uses 100; Spark's is what most readers expect).
const DefaultCheckpointInterval = 10

// DefaultTombstoneRetention is delta.deletedFileRetentionDuration's default, "interval 1
// week" (docs/reference/delta-protocol.md §11.3): remove tombstones younger than this are
// kept in checkpoints.
const DefaultTombstoneRetention = 7 * 24 * time.Hour

// Options configure a Table. The zero value is usable: every field has a documented
// default.
type Options struct {
	// CheckpointInterval is the number of commits between checkpoints; 0 means the
	// table's delta.checkpointInterval, else DefaultCheckpointInterval. Negative disables
	// checkpoints.
	CheckpointInterval int

	// MaxCommitAttempts bounds the optimistic commit loop; 0 means
	// DefaultMaxCommitAttempts.
	MaxCommitAttempts int

	// RetryBaseDelay is the first backoff delay after a lost commit race; 0 means
	// DefaultRetryBaseDelay. The n-th wait is random in [0, RetryBaseDelay·2^(n-1)].
	RetryBaseDelay time.Duration

	// RetryMaxDelay caps one backoff wait; 0 means DefaultRetryMaxDelay (1 s). A cap below
	// RetryBaseDelay is raised to it. Raise it for many writers on one table (each lost
	// race costs a read of the winners), lower it for latency.
	RetryMaxDelay time.Duration

	// EngineInfo is written to commitInfo.engineInfo; "" means "mssqlcdc".
	EngineInfo string

	// Now is the clock (commit timestamps, tombstone expiry); nil means time.Now.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Table is one Delta table: a Store rooted at the table directory and the LogStore that
// coordinates its commits. It is safe for concurrent use; table state lives in Snapshots.
//
// A Table remembers the newest snapshot it read or committed (see Snapshot), so a process
// that keeps it (a warm Lambda, a stream running batch after batch) reads only the commits
// made since. When its log store tells a log deleted and written again under the same
// path (logstore.Replacements: the commit file of the newest version it knew gone or
// another, seen in the listing or query it makes anyway), the kept snapshot is dropped
// and the table read as a new process would (docs/operations.md § Starting a table over).
type Table struct {
	store storage.Store
	logs  logstore.LogStore
	opts  Options

	mu     sync.Mutex
	latest *Snapshot // the newest snapshot read or committed through this Table; nil: none
	// listed is true once Snapshot asked the log store for the latest version: its log
	// store then knows where to list from (logstore.Lister).
	listed bool
	// empty is true when the newest Snapshot found no commit (latest nil).
	empty bool
	// newest is the newest version the log store answered as the latest (Latest) or this
	// Table committed, and newestAt when: no earlier than newestAt, the next version was
	// not yet committed (fresh). -1 with the zero time when none.
	newest   int64
	newestAt time.Time
	// coordClean is true once the log was found without a DynamoDB log store's temporary
	// commit file (CheckCoordination).
	coordClean bool
}

// Open returns the table at store's root, committing through logs. It does no I/O: a
// missing table is a Snapshot with Version() == -1.
func Open(store storage.Store, logs logstore.LogStore, opts Options) *Table {
	return &Table{store: store, logs: logs, opts: opts, newest: -1}
}

// sawNewest records that version v was the log's newest at time at (the log store
// answered it, or this Table committed it, after at). An older record is replaced only
// by a newer version or a later time of the same one.
func (t *Table) sawNewest(v int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v > t.newest || (v == t.newest && at.After(t.newestAt)) {
		t.newest, t.newestAt = v, at
	}
}

// forgetNewest drops the record of sawNewest: the log was found replaced or emptied.
func (t *Table) forgetNewest() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newest, t.newestAt = -1, time.Time{}
}

// fresh reports whether the Table saw version v as the log's newest less than d ago:
// the next version was committed after that, so it is younger than d.
func (t *Table) fresh(v int64, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.newest == v && t.opts.now().Sub(t.newestAt) < d
}

// Store is the object store rooted at the table directory.
func (t *Table) Store() storage.Store { return t.store }

// LogStore is the commit coordinator.
func (t *Table) LogStore() logstore.LogStore { return t.logs }

// Options returns the options the table was opened with.
func (t *Table) Options() Options { return t.opts }

// Known is the newest snapshot the Table read or committed, without any request (an empty
// one, Version() == -1, when the newest read found no commit); nil when it holds none. It
// may be behind the log (others' commits since are not in it): a
// transaction begun from it still detects them, since its commit loses the race at the
// version they took and is checked against them (Transaction.Commit), so a writer whose
// steps follow one another in one process may commit on it instead of re-reading the table.
func (t *Table) Known() *Snapshot {
	t.mu.Lock()
	s, empty := t.latest, t.empty
	t.mu.Unlock()
	if s != nil && s.stale() {
		return nil // of a log found replaced since
	}
	if s == nil && empty {
		return t.emptySnapshot()
	}
	return s
}

// sawEmpty records that the log has no commit: nothing kept, Known an empty snapshot.
func (t *Table) sawEmpty() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.latest, t.empty = nil, true
}

// known is the newest snapshot the Table holds, nil when none.
func (t *Table) known() *Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest
}

// opened reports whether the Table's first open is behind it (firstOpen was asked).
func (t *Table) opened() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listed
}

// firstOpen reports whether no Snapshot has asked the log store yet, and marks it asked.
func (t *Table) firstOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := !t.listed
	t.listed = true
	return first
}

// remember keeps s as the newest known snapshot unless a newer one is kept already, or
// one read after the log was found replaced later than s was read.
func (t *Table) remember(s *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.latest == nil || s.replaced > t.latest.replaced || (s.replaced == t.latest.replaced && s.version >= t.latest.version) {
		t.latest, t.empty = s, false
	}
}

// replacedCount is logs' count of logs found replaced (logstore.Replacements); 0 for a log
// store that tells none.
func replacedCount(logs logstore.LogStore) uint64 {
	if r, ok := logs.(logstore.Replacements); ok {
		return r.Replaced()
	}
	return 0
}

// stale reports whether the log store of the snapshot's table found the log replaced
// since the snapshot was read: the snapshot is of another table than the one at its
// path now.
func (s *Snapshot) stale() bool {
	return s.table != nil && s.replaced != replacedCount(s.table.logs)
}

// replace keeps s as the newest known snapshot (nil: none), whatever was kept: the log
// said so (a table re-created with fewer commits, or deleted).
func (t *Table) replace(s *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.latest, t.empty = s, false
}
