package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Commit defaults, used when Options leaves them zero.
const (
	// DefaultMaxCommitAttempts bounds the Write calls of one Commit; delta-rs allows 15
	// retries. Each lost race costs a read of the winning commits, so the bound also caps
	// the work done under contention.
	DefaultMaxCommitAttempts = 15
	// DefaultRetryBaseDelay is the first backoff after a lost race; the n-th waits a
	// random time in [0, base·2^(n-1)], capped by Options.RetryMaxDelay ("full jitter":
	// the losers of a race spread out instead of colliding again at the next version).
	DefaultRetryBaseDelay = 10 * time.Millisecond
	// DefaultRetryMaxDelay caps one backoff wait when Options.RetryMaxDelay is 0.
	DefaultRetryMaxDelay = time.Second
	// resolveAttempts is how many times an undecided Write is read back before the
	// outcome is reported as unknown.
	resolveAttempts = 3
)

// CommitResult is what Commit did. Version is the version the commit created; when
// Skipped is true nothing was written, because the table already records the
// transaction's txn(appId) at or above its version, and Version is the table version at
// which that was seen.
type CommitResult struct {
	Version int64
	Skipped bool
}

// Commit writes the transaction as the next version of the table
// (docs/reference/delta-protocol.md §10.1, optimistic concurrency):
//
//  1. Refuse a table this package may not write (Snapshot.CanWrite: unknown writer
//     features, deletion vectors, column mapping, ...). Creating a table needs SetSchema
//     (ErrNoSchema).
//     A snapshot read before its log store found the log deleted and written again
//     (logstore.Replacements) is of another table: *ConcurrentModificationError, here
//     and after a lost race.
//  2. Skip when SetAppTxn's version is not above the snapshot's recorded version for the
//     app id: CommitResult{Skipped: true}, nothing written.
//  3. logstore.Write the actions at snapshot version + 1. On ErrVersionExists another
//     writer won that version: wait a jittered backoff, read every commit from the lost
//     version to the latest and check each against this transaction (see
//     checkWinner): a winner that records the app id's txn at or above ours makes the
//     commit skipped; one that changed the protocol or metadata (or created the table
//     this transaction meant to create) is *ConcurrentModificationError; one that moved
//     the app id's txn below ours is *ConcurrentTxnError. Otherwise — blind appends only —
//     retry at latest + 1. After MaxCommitAttempts lost races: *CommitAttemptsError.
//     A version the Table knows taken (Known is newer than the snapshot) is not written
//     but checked at once, and a commit since the snapshot missing below the latest (the
//     log's clean-up deleted it) is *ConcurrentModificationError: written, it would land
//     in the cleaned range, where no reader looks.
//  4. A Write error matching logstore.ErrRefused (nothing written, and writing again fails
//     the same way) is returned at once, wrapped. Any other Write error leaves the
//     version undecided (logstore contract); Commit reads the version back: our bytes
//     mean committed, other bytes a lost race, no file a free version to try again (and
//     later rebases recognise our bytes should the first Write land late). When it
//     cannot tell, and for any failure while a Write is still undecided:
//     *CommitUnknownError; retrying with the same txn(appId, version) is then safe (a
//     landed commit is skipped). Once the undecided version reads back as another
//     writer's, the outcome is decided again and errors are reported as themselves.
//  5. After a successful commit at a multiple of the checkpoint interval
//     (Options.CheckpointInterval, else the table's delta.checkpointInterval, else
//     DefaultCheckpointInterval), write a checkpoint of that version (WriteCheckpoint).
//     A failed checkpoint never fails the commit: the next one is tried 'interval'
//     commits later and readers replay the JSON commits meanwhile.
//
// Before anything is written, a table whose log shows DynamoDB writers is refused when the
// Table's log store is not DynamoDB's (*UncoordinatedCommitError, Table.CheckCoordination).
//
// A committed version is never reported as failed: once Write returned nil (or the
// version reads back as our bytes) Commit returns it. The commit always carries
// commitInfo (timestamp, operation, operationParameters, readVersion, isolationLevel
// Serializable, isBlindAppend true, userMetadata, engineInfo, txnId) as its first action.
func (tx *Transaction) Commit(ctx context.Context) (CommitResult, error) {
	if tx.done {
		return CommitResult{}, ErrTxnDone
	}
	snap := tx.snap
	if err := snap.CanWrite(); err != nil {
		return CommitResult{}, err
	}
	if snap.Version() < 0 && tx.metadata == nil {
		return CommitResult{}, ErrNoSchema
	}
	if snap.stale() {
		return CommitResult{}, errLogReplaced(snap.Version() + 1)
	}
	if err := tx.validate(); err != nil {
		return CommitResult{}, err
	}
	if tx.hasApp {
		if v, ok := snap.TxnVersion(tx.appID); ok && tx.appVersion <= v {
			return tx.finish(CommitResult{Version: snap.Version(), Skipped: true}, nil), nil
		}
	}
	if err := tx.table.CheckCoordination(ctx); err != nil {
		return CommitResult{}, err
	}
	actions := tx.actions(randomUUID())
	data, err := EncodeActions(actions)
	if err != nil {
		return CommitResult{}, fmt.Errorf("encode commit: %w", err)
	}

	logs := tx.table.logs
	version := snap.Version() + 1
	maxAttempts := tx.table.opts.MaxCommitAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxCommitAttempts
	}
	// undecided is the version of a Write that failed without a verdict: its bytes
	// might still land (a slow request), so a later failure is reported as unknown.
	undecided := int64(-1)
	fail := func(err error) (CommitResult, error) {
		var cue *CommitUnknownError
		if undecided >= 0 && !errors.As(err, &cue) {
			err = &CommitUnknownError{Version: undecided, Err: err}
		}
		return CommitResult{}, err
	}
	// A version the Table knows taken (it read or committed a newer one) is not written:
	// Commit goes straight to reading the commits since the snapshot, as after a lost
	// race. Written, it would be lost the race as usual, unless the log's clean-up had
	// deleted it, when the conditional put succeeds in the cleaned range, a commit no
	// reader sees (they start at the cleanup's checkpoint); the read finds it missing and
	// refuses instead (rebase). No request more: the Table's own knowledge.
	knownTaken := false
	if k := tx.table.known(); k != nil && k.Version() > snap.Version() {
		knownTaken = true
	}
	// A snapshot this Table has not seen as the log's newest lately (read by another
	// Table, by SnapshotAt, or long ago) may be older than the log's clean-up, which
	// deletes commits older than delta.logRetentionDuration: the next version may be
	// taken and deleted, and the Table not know it. One Latest tells; a snapshot seen as
	// the newest within half the retention needs none (the next version was committed
	// after that, so it is too young to be cleaned up).
	if !knownTaken && snap.Version() >= 0 && !tx.table.fresh(snap.Version(), freshFor(snap)) {
		at := tx.table.opts.now()
		latest, err := logs.Latest(ctx)
		if err != nil {
			return fail(fmt.Errorf("commit version %d: latest version: %w", version, err))
		}
		if latest > snap.Version() {
			knownTaken = true
		} else {
			tx.table.sawNewest(latest, at)
		}
	}
	for attempt := 1; ; attempt++ {
		at := tx.table.opts.now()
		var err error
		if attempt == 1 && knownTaken {
			err = logstore.ErrVersionExists
		} else {
			err = logs.Write(ctx, version, data)
		}
		won := err == nil
		if errors.Is(err, logstore.ErrRefused) {
			// Decided: nothing written at version, and writing again fails the same way.
			return fail(fmt.Errorf("commit version %d: %w", version, err))
		}
		if err != nil && !errors.Is(err, logstore.ErrVersionExists) {
			undecided = version
			if ctx.Err() != nil {
				return fail(err)
			}
			writeErr := err
			var free bool
			won, free, err = tx.resolve(ctx, version, data, err)
			if err != nil {
				return fail(err)
			}
			if !won && !free {
				// Another writer holds the version: our bytes cannot land there any more.
				undecided = -1
			}
			if free {
				if attempt >= maxAttempts {
					return fail(fmt.Errorf("write kept failing: %w", writeErr))
				}
				if err := sleep(ctx, tx.table.backoff(attempt)); err != nil {
					return fail(err)
				}
				continue
			}
		}
		if won {
			tx.table.sawNewest(version, at)
			res := tx.finish(CommitResult{Version: version}, actions)
			tx.maybeCheckpoint(ctx)
			tx.remember()
			return res, nil
		}
		if attempt >= maxAttempts {
			return fail(&CommitAttemptsError{Attempts: attempt, LastVersion: version})
		}
		if attempt > 1 || !knownTaken { // no race was lost to wait out
			if err := sleep(ctx, tx.table.backoff(attempt)); err != nil {
				return fail(err)
			}
		}
		next, won, skip, err := tx.rebase(ctx, version, data)
		var cme *ConcurrentModificationError
		var cte *ConcurrentTxnError
		if (err == nil && !won) || errors.As(err, &cme) || errors.As(err, &cte) {
			// rebase read every version from the one we lost (at or after any undecided
			// Write) to the latest without finding our bytes: they are nowhere, and the
			// versions they could have landed at are taken.
			undecided = -1
		}
		switch {
		case err != nil:
			return fail(err)
		case won:
			tx.table.sawNewest(next, at)
			res := tx.finish(CommitResult{Version: next}, actions)
			tx.maybeCheckpoint(ctx)
			tx.remember()
			return res, nil
		case skip != nil:
			return tx.finish(*skip, nil), nil
		}
		version = next
	}
}

// validate checks the commit against the rules for one commit's actions
// (docs/reference/delta-protocol.md §2.6, §2.9, §6.6) and the protocol it writes.
func (tx *Transaction) validate() error {
	proto, md := tx.snap.Protocol(), tx.commitMetadata()
	if tx.protocol != nil {
		proto = *tx.protocol
		if err := CanWrite(proto, md); err != nil {
			return err
		}
	}
	if len(tx.domains) > 0 && !proto.HasWriterFeature(FeatureDomainMetadata) {
		return &InvalidCommitError{Reason: "domain metadata needs the domainMetadata writer feature (EnableFeatures)"}
	}
	for _, d := range tx.domains {
		if strings.HasPrefix(d.Domain, "delta.") {
			return &InvalidCommitError{Reason: fmt.Sprintf("domain %q belongs to Delta", d.Domain)}
		}
	}
	appendOnly := proto.HasWriterFeature(FeatureAppendOnly) && strings.EqualFold(md.Configuration["delta.appendOnly"], "true")
	removed := make(map[fileKey]bool, len(tx.removes))
	removedPath := make(map[string]bool, len(tx.removes))
	for i := range tx.removes {
		r := &tx.removes[i]
		if appendOnly && r.DataChange {
			return ErrAppendOnly
		}
		k := fileKey{path: r.DecodedPath(), dvID: r.DeletionVector.UniqueID()}
		if removed[k] {
			return &InvalidCommitError{Reason: "file removed twice: " + k.path}
		}
		removed[k], removedPath[k.path] = true, true
	}
	dvs := proto.HasReaderFeature(FeatureDeletionVectors) && proto.HasWriterFeature(FeatureDeletionVectors)
	added := make(map[string]bool, len(tx.adds))
	for i := range tx.adds {
		a := &tx.adds[i]
		p := a.DecodedPath()
		if added[p] {
			return &InvalidCommitError{Reason: "file added twice: " + p}
		}
		added[p] = true
		if a.DeletionVector != nil {
			if !dvs {
				return &InvalidCommitError{Reason: "a deletion vector needs the deletionVectors feature (EnableFeatures): " + p}
			}
			if n, ok := a.NumRecords(); !ok || a.DeletionVector.Cardinality > n || a.DeletionVector.Cardinality < 1 {
				return &InvalidCommitError{Reason: "a file with a deletion vector needs numRecords in its stats, at least its DV's cardinality (at least 1): " + p}
			}
		}
		// Only an add carrying a deletion vector re-adds a live path (new files have fresh
		// names), so only those are looked up.
		if a.DeletionVector != nil && !removedPath[p] {
			for k := range tx.snap.files.Keys() {
				if k.path == p && k.dvID != a.DeletionVector.UniqueID() {
					return &InvalidCommitError{Reason: "file re-added with another deletion vector without removing the live one: " + p}
				}
			}
		}
	}
	return nil
}

// resolve learns the outcome of a Write that failed with writeErr (neither success nor
// ErrVersionExists) by reading the version back (the log store completes a half-done
// commit on Read): won when it holds our bytes, free when it does not exist (nobody holds
// it, Write may be retried), neither when another writer holds it.
func (tx *Transaction) resolve(ctx context.Context, version int64, data []byte, writeErr error) (won, free bool, err error) {
	readErr := writeErr
	for i := range resolveAttempts {
		if i > 0 {
			if err := sleep(ctx, tx.table.backoff(i)); err != nil {
				return false, false, &CommitUnknownError{Version: version, Err: writeErr}
			}
		}
		got, err := tx.table.logs.Read(ctx, version)
		switch {
		case err == nil:
			return bytes.Equal(got, data), false, nil
		case errors.Is(err, storage.ErrNotFound):
			return false, true, nil
		}
		readErr = err
	}
	return false, false, &CommitUnknownError{Version: version, Err: errors.Join(writeErr, readErr)}
}

// rebase reads the commits from lost (the version this transaction failed to take) to the
// latest and checks them against the transaction: it returns the next version to try, or
// won (one of them is this transaction's own bytes: an earlier undecided Write landed
// after all), or a skip result, or the conflict.
func (tx *Transaction) rebase(ctx context.Context, lost int64, data []byte) (next int64, won bool, skip *CommitResult, err error) {
	latest, err := tx.table.logs.Latest(ctx)
	if err != nil {
		return 0, false, nil, fmt.Errorf("latest version: %w", err)
	}
	if tx.snap.stale() {
		return 0, false, nil, errLogReplaced(lost)
	}
	latest = max(latest, lost)
	winners := make([][]Action, 0, latest-lost+1)
	for v := lost; v <= latest; v++ {
		got, err := tx.table.logs.Read(ctx, v)
		if errors.Is(err, storage.ErrNotFound) {
			// Below the latest, so it was committed: the log's clean-up (CleanupLog,
			// log retention) deleted it after the snapshot was read.
			return 0, false, nil, errLogCleaned(v)
		}
		if err != nil {
			return 0, false, nil, fmt.Errorf("read winning commit %d: %w", v, err)
		}
		if bytes.Equal(got, data) {
			tx.winners = append(tx.winners, winners...)
			return v, true, nil, nil
		}
		actions, err := DecodeActions(got)
		if err != nil {
			return 0, false, nil, &CorruptLogError{Version: v, Reason: "unparsable commit", Err: err}
		}
		winners = append(winners, actions)
	}
	tx.winners = append(tx.winners, winners...)
	for _, actions := range winners {
		if tx.winnerRecordsUs(actions) {
			return 0, false, &CommitResult{Version: latest, Skipped: true}, nil
		}
	}
	for i, actions := range winners {
		if err := tx.checkWinner(lost+int64(i), actions); err != nil {
			return 0, false, nil, err
		}
	}
	return latest + 1, false, nil, nil
}

// errLogReplaced is the conflict of a transaction begun on a snapshot of a log that the
// log store found deleted (and perhaps written again) since (logstore.Replacements): its
// snapshot is of another table. Begin again from a new Snapshot.
func errLogReplaced(version int64) error {
	return &ConcurrentModificationError{Version: version, Reason: "on a table deleted and written again since the snapshot was read"}
}

// freshFor is how long after a Table saw a snapshot's version as the log's newest a
// commit on that snapshot needs no check against the log's clean-up: half the table's
// delta.logRetentionDuration (docs/reference/delta-protocol.md §11.2; CleanupLog deletes
// only commits older than the retention), 0 (always check) when the property is invalid.
func freshFor(snap *Snapshot) time.Duration {
	r, err := retentionProperty(snap.Metadata(), "delta.logRetentionDuration", DefaultLogRetention)
	if err != nil {
		return 0
	}
	return r / 2
}

// errLogCleaned is the conflict of a transaction whose snapshot is older than the log's
// clean-up: commit version, committed since the snapshot, is gone (CleanupLog deleted it
// with the commits below its checkpoint), so the commits since cannot be checked and a
// commit after the snapshot would land where no reader looks. Nothing was written; begin
// again from a new Snapshot.
func errLogCleaned(version int64) error {
	return &ConcurrentModificationError{Version: version, Reason: "deleted by the log's clean-up since the snapshot was read (log retention); begin again from a new Snapshot"}
}

// backoff is the wait before the attempt-th retry: full jitter over
// [0, base·2^(attempt-1)], capped at Options.RetryMaxDelay (DefaultRetryMaxDelay), and
// never capped below base.
func (t *Table) backoff(attempt int) time.Duration {
	base := t.opts.RetryBaseDelay
	if base <= 0 {
		base = DefaultRetryBaseDelay
	}
	limit := t.opts.RetryMaxDelay
	if limit <= 0 {
		limit = DefaultRetryMaxDelay
	}
	limit = max(limit, base)
	ceiling := base << min(attempt-1, 20)
	if ceiling <= 0 || ceiling > limit {
		ceiling = limit
	}
	return rand.N(ceiling + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// checkpointInterval is the number of commits between checkpoints for a table with
// metadata md: Options.CheckpointInterval, else delta.checkpointInterval, else
// DefaultCheckpointInterval; <= 0 disables checkpoints.
func (t *Table) checkpointInterval(md Metadata) int64 {
	if n := t.opts.CheckpointInterval; n != 0 {
		return int64(n)
	}
	if s, ok := md.Configuration["delta.checkpointInterval"]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return DefaultCheckpointInterval
}

// finish records the outcome: res, and the actions committed (nil when skipped).
func (tx *Transaction) finish(res CommitResult, committed []Action) CommitResult {
	tx.done = true
	tx.result = &res
	tx.committed = committed
	return res
}

// NextSnapshot is the table state at the version Commit returned: the snapshot the
// transaction read, plus the commits that won races against it (which Commit read), plus
// its own actions — built in memory without I/O when Commit read every version in
// between, else read from the log (Table.SnapshotAt). A writer that appends repeatedly
// begins its next transaction from it instead of re-reading the table; should others have
// committed meanwhile, that commit loses the race and rebases on them as usual.
// ErrTxnNotCommitted before a successful Commit.
func (tx *Transaction) NextSnapshot(ctx context.Context) (*Snapshot, error) {
	if tx.result == nil {
		return nil, ErrTxnNotCommitted
	}
	if tx.next != nil {
		return tx.next, nil
	}
	if tx.result.Version == tx.snap.Version() {
		tx.next = tx.snap
		return tx.next, nil
	}
	if s := tx.postCommitSnapshot(); s != nil {
		tx.next = s
		return s, nil
	}
	s, err := tx.table.SnapshotAt(ctx, tx.result.Version)
	if err != nil {
		return nil, err
	}
	tx.next = s
	return s, nil
}

// maybeCheckpoint writes a checkpoint of the committed version when it is a multiple of
// the checkpoint interval, as Spark does, or when one is overdue: the version is more
// than an interval past the checkpoint the transaction's snapshot was built from, so an
// earlier checkpoint failed (a writer died, a request failed); without this rule a table
// whose checkpoint at 10 failed would replay 20 commits until the one at 20.
//
// The checkpoint is built from the full state at that version (NextSnapshot) — never from
// partial state: a checkpoint must list every live file. Errors are dropped: a checkpoint
// is an optimisation and never fails the commit that triggered it.
func (tx *Transaction) maybeCheckpoint(ctx context.Context) {
	version := tx.result.Version
	n := tx.table.checkpointInterval(tx.commitMetadata())
	if n <= 0 || version == 0 || (version%n != 0 && version-max(tx.snap.CheckpointVersion(), 0) <= n) {
		return
	}
	snap, err := tx.NextSnapshot(ctx)
	if err != nil {
		return
	}
	if base, err := writeCheckpoint(ctx, snap); err == nil && snap != tx.snap {
		// The next snapshot is now what a read from this checkpoint gives: a chained
		// writer's next commit measures the interval from here, and its tombstones are the
		// checkpoint's (those left out as expired are gone; a Table that keeps its
		// snapshot would otherwise carry every remove it ever saw into each checkpoint it
		// writes), whose row groups the next checkpoint copies.
		snap.checkpoint = version
		maps.DeleteFunc(snap.commitInfos, func(v int64, _ CommitInfo) bool { return v <= version })
		snap.rebaseTombstones(base)
	}
}

// postCommitSnapshot is the state at the result version built from the transaction's
// snapshot, the winners and its committed actions (docs/reference/delta-protocol.md §9.2),
// or nil when the winners do not cover every version in between.
func (tx *Transaction) postCommitSnapshot() *Snapshot {
	base := tx.snap
	version := tx.result.Version
	want := version - base.Version()
	if tx.committed != nil {
		want-- // our own commit is the last version
	}
	if int64(len(tx.winners)) != want {
		return nil
	}
	s := base.successor()
	commits := tx.winners
	if tx.committed != nil {
		commits = append(slices.Clone(commits), tx.committed)
	}
	s.applyCommits(commits)
	return s
}

// remember makes the state after a successful commit the table's newest known snapshot
// (Table.Snapshot then reads only the commits after it), once maybeCheckpoint is done
// with it.
func (tx *Transaction) remember() {
	if tx.next == nil {
		tx.next = tx.postCommitSnapshot()
	}
	if tx.next != nil {
		tx.table.remember(tx.next)
	}
}
