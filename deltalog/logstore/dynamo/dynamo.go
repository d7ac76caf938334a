// Package dynamo is a logstore.LogStore compatible with Delta's S3DynamoDBLogStore (Spark,
// delta-storage-s3-dynamodb) and delta-rs's S3DynamoDbLogStore, so Go and Spark writers can
// commit to one table: a DynamoDB item per commit decides who owns a version, then the
// commit is copied to _delta_log/<v:020>.json.
//
// The item schema (table "delta_log" by default, configurable):
//
//	tablePath  S  HASH   "<scheme>://<bucket>/<prefix>", see TablePath
//	fileName   S  RANGE  "<v:020>.json"
//	tempPath   S         ".tmp/<v:020>.json.<uuid>", relative to <table>/_delta_log/
//	complete   S         "true" / "false"
//	expireTime N         epoch seconds, now + 1 day, set only when complete (TTL attribute)
//
// Writing version N (docs/reference/delta-protocol.md §13.11, which Spark and delta-rs
// readers both recover):
//
//  1. Check N: N.json must not exist, and item N-1 must be complete (recovered here when
//     it is not) with N-1.json present. Skipped when this LogStore saw N-1 committed and
//     N.json absent less than Options.KnownFor ago: an item created since then cannot have
//     expired, so the conditional put below still excludes every other writer.
//  2. Put the bytes in the temp file.
//  3. PutItem with attribute_not_exists(fileName): the linearization point. A failed
//     condition is logstore.ErrVersionExists, unless a consistent read finds our own
//     tempPath in the item (the SDK retried a claim whose first answer was lost, and the
//     retry failed on our own item). From here on version N is ours.
//  4. Publish: copy temp → N.json with If-None-Match: * (on 412 the file is read back: our
//     bytes mean someone recovered our entry already, which counts as done; other bytes
//     mean an expired entry let us claim a taken version: ErrVersionExists), then mark the
//     item complete with its expireTime.
//     Failures here are retried and then left for recovery; Write still succeeds.
//
// Latest and Read recover the newest entry when it is incomplete (copy, then mark
// complete), as Spark does before listing the log; only the newest entry can be
// incomplete, since every writer recovers N-1 before claiming N.
//
// Only safe when every writer of the table uses a DynamoDB log store with the same table,
// region and tablePath (scheme included). Operating it:
//   - create the table with CreateTable (or the same key schema in Terraform) and enable
//     TTL on expireTime, or complete entries pile up;
//   - use the Spark jobs' region (Spark defaults ddb.region to us-east-1 whatever the
//     bucket's region) and scheme (Options.Scheme, "s3a" for OSS Spark);
//   - expire <table>/_delta_log/.tmp/ with an S3 lifecycle rule (e.g. 30 days): temp files
//     are kept, as Spark keeps them, since a recovering reader may still need the newest.
package dynamo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Client is the part of *dynamodb.Client the log store uses, with the SDK's signatures.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Defaults of Options.
const (
	// DefaultTable is the DynamoDB table name both Spark and delta-rs default to.
	DefaultTable = "delta_log"
	// DefaultTTL is how long a complete entry lives: Spark's ddb.ttl default and delta-rs's
	// fixed delay. It must outlast any window in which a fresh N.json might be invisible.
	DefaultTTL = 24 * time.Hour
	// DefaultKnownFor bounds how old an observation of "N-1 committed, N.json absent" may
	// be for Write to skip its pre-checks; well under DefaultTTL, so an entry created after
	// the observation is still there to make the conditional put fail.
	DefaultKnownFor = time.Hour
	// DefaultAttempts is how many times publishing or recovering an entry is tried (Spark
	// and delta-rs both try 4 times).
	DefaultAttempts = 4
	// DefaultRetryDelay is the pause before the second attempt; it doubles each attempt.
	DefaultRetryDelay = 50 * time.Millisecond
)

// Options configures a LogStore. Zero fields take the defaults.
type Options struct {
	// Table is the DynamoDB table name (DefaultTable).
	Table string
	// TablePath is the tablePath key. When empty it is TablePath(store.URL(), Scheme).
	TablePath string
	// Scheme is the URL scheme of the tablePath key (DefaultScheme); match the Spark jobs.
	Scheme string
	// TTL is the delay from completion to expireTime (DefaultTTL).
	TTL time.Duration
	// KnownFor: see DefaultKnownFor. Negative disables the shortcut (always pre-check).
	KnownFor time.Duration
	// Attempts bounds publish and recovery attempts (DefaultAttempts).
	Attempts int
	// RetryDelay is the first pause between attempts (DefaultRetryDelay).
	RetryDelay time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// NewID returns the unique part of a temp file name (a random UUID).
	NewID func() string
}

// LogStore commits one table through DynamoDB. Safe for concurrent use.
type LogStore struct {
	ddb       Client
	store     storage.Store
	table     string
	tablePath string
	opts      Options

	mu    sync.Mutex
	known known
	// replaced counts the logs found replaced (logstore.Replacements): known's entry gone
	// or another, or its commit file gone.
	replaced uint64
}

// known is an observation: version Version is committed (its entry complete or gone) and
// Version+1.json did not exist at At. Version -1 with a non-zero At is an empty log seen
// with no entry; with a zero At, no observation. TempPath is Version's entry's tempPath
// (unique per commit: a random UUID) when the observation saw the entry, the identity by
// which Latest tells the entry, and so the log, from another's (checkIdentity); "" when
// no entry was seen. ETag is Version.json's ETag as a listing showed it ("" when no
// listing has shown it yet): the identity that outlives the entry, checked by the
// listing from Version when no entry identifies the log (commitlog.LatestFrom).
type known struct {
	Version  int64
	At       time.Time
	TempPath string
	ETag     string
}

var (
	_ logstore.LogStore     = (*LogStore)(nil)
	_ logstore.Lister       = (*LogStore)(nil)
	_ logstore.Replacements = (*LogStore)(nil)
	_ logstore.Coordinated  = (*LogStore)(nil)
)

// New returns a LogStore for the table rooted at store. It does no I/O; the DynamoDB table
// must exist (see CreateTable).
func New(ddb Client, store storage.Store, opts Options) (*LogStore, error) {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.KnownFor == 0 {
		opts.KnownFor = DefaultKnownFor
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = newUUID
	}
	tp := opts.TablePath
	if tp == "" {
		var err error
		if tp, err = TablePath(store.URL(), opts.Scheme); err != nil {
			return nil, err
		}
	}
	return &LogStore{ddb: ddb, store: store, table: opts.Table, tablePath: tp, opts: opts, known: known{Version: -1}}, nil
}

// Coordinator names the DynamoDB table every writer of the table must commit through
// (logstore.Coordinated).
func (l *LogStore) Coordinator() string { return "DynamoDB table " + l.table }

// TablePathKey is the tablePath this LogStore keys its entries with.
func (l *LogStore) TablePathKey() string { return l.tablePath }

// Client is the DynamoDB client the log store was made with.
func (l *LogStore) Client() Client { return l.ddb }

// observe records that version v (-1: none) is committed and v+1.json was absent at time at;
// tempPath is v's entry's, "" when the observation found no entry (a tempPath known for v
// is then forgotten: its entry expired, and Latest must not take it for deleted); etag is
// v.json's ETag as a listing showed it, "" when the observation made no listing (an
// ETag known for v is then kept: a commit file does not expire).
func (l *LogStore) observe(v int64, at time.Time, tempPath, etag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case v > l.known.Version:
		l.known = known{Version: v, At: at, TempPath: tempPath, ETag: etag}
	case v == l.known.Version:
		if etag == "" {
			etag = l.known.ETag
		}
		if at.After(l.known.At) {
			l.known = known{Version: v, At: at, TempPath: tempPath, ETag: etag}
		} else {
			l.known.ETag = etag
		}
	}
}

// current is the observation and the count of replaced logs, read together.
func (l *LogStore) current() (known, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known, l.replaced
}

// markReplaced records that the log known when Replaced was gen was found replaced: the
// observation is forgotten (once, however many calls found it).
func (l *LogStore) markReplaced(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.replaced == gen {
		l.replaced++
		l.known = known{Version: -1}
	}
}

// Replaced counts the times Latest found the log it knew replaced
// (logstore.Replacements).
func (l *LogStore) Replaced() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replaced
}

// fresh reports whether the observation is less than KnownFor old. l.mu is held.
func (l *LogStore) fresh() bool {
	return l.opts.KnownFor >= 0 && !l.known.At.IsZero() && l.opts.Now().Sub(l.known.At) < l.opts.KnownFor
}

// knows reports whether an observation that v is committed and v+1 free is fresh (v -1:
// the log was seen empty, with no entry).
func (l *LogStore) knows(v int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known.Version == v && l.fresh()
}

// knowsUpTo reports whether a fresh observation (less than KnownFor old) names a version
// at or below v as committed with the next one absent.
func (l *LogStore) knowsUpTo(v int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known.Version <= v && l.fresh()
}

// knownLatest is the version of a fresh observation (ok false: none). When the newest-entry
// Query finds no entry at all, it is the latest version: a commit made since the
// observation would still have its entry.
func (l *LogStore) knownLatest() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known.Version, l.fresh()
}

// hint is a version known to exist, where listing can start: -1 for none, 0 when the log
// was seen empty (list from its start, without reading _last_checkpoint).
func (l *LogStore) hint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known.Version < 0 && !l.known.At.IsZero() {
		return 0
	}
	return l.known.Version
}

// sleep waits before attempt n (n ≥ 1), doubling from RetryDelay.
func (l *LogStore) sleep(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	t := time.NewTimer(l.opts.RetryDelay << (n - 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func wrap(op string, v int64, err error) error {
	return fmt.Errorf("dynamo: %s version %d: %w", op, v, err)
}
