// Package reconcile checks a silver table (the current table, kept from bronze) against the
// SQL Server table it mirrors, without writing anything to SQL Server
// (docs/reconcile.md).
//
// Two tiers, as docs/reference/original-library.md §14 describes the original's:
//
//   - Tier 1 compares row counts per bucket. For one integer or date key (a date as its
//     days since 1970-01-01) the server counts and sums the keys of fine buckets in one
//     scan (Source.KeyBuckets, never CHECKSUM_AGG or BINARY_CHECKSUM, which XOR and
//     collide); silver's are computed from its key column;
//     adjacent fine buckets are merged until the larger side holds BucketRows rows. A table
//     with another key is one bucket, counted on both sides.
//   - Tier 2 reads the rows of every mismatched bucket and of a sample of the matching
//     ones on both sides and compares them row by row: a SHA-256 of each row's captured
//     columns (computed columns left out), joined on the key. Another key's table above
//     BucketRows is read in key tiles the server cuts in its own order (Source.KeyTiles):
//     a sample of them, every one when the table's counts differ.
//
// A difference that a change not yet in silver explains is IN_FLIGHT, not a mismatch: the
// keys bronze changed after silver's position, and the keys the change table holds after
// that position up to the source's max LSN read at the start. So is one that a chunk of an
// open chunked snapshot silver has not applied yet will set right (unapplied), and nothing
// else: a difference on an image at or after the snapshot's S, or in a chunk silver has
// applied, is reported while the snapshot is open.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Kind is what a report row says (docs/reconcile.md § Report).
type Kind string

// Bucket kinds (tier 1) and key kinds (tier 2).
const (
	// Match: the bucket's counts (and key sums) agree on both sides.
	Match Kind = "MATCH"
	// Mismatch: they differ and no change in flight explains it.
	Mismatch Kind = "MISMATCH"
	// InFlight: a bucket or key differs, but a change silver has not applied yet touches it.
	InFlight Kind = "IN_FLIGHT"
	// MissingTarget: the source has the key, silver does not.
	MissingTarget Kind = "MISSING_TARGET"
	// MissingSource: silver has the key, the source does not.
	MissingSource Kind = "MISSING_SOURCE"
	// RecordDiff: both have the key with different values; Columns names them.
	RecordDiff Kind = "RECORD_DIFF"
	// ChunkTiling: a chunked snapshot's chunks do not tile the key space (Detail says how).
	ChunkTiling Kind = "CHUNK_TILING"
	// ChunkRows: bronze's rows of a chunk differ from the count recorded for it.
	ChunkRows Kind = "CHUNK_ROWS"
	// ChunkStamp: a chunk's stamp is below S, or its rows or records carry another one.
	ChunkStamp Kind = "CHUNK_STAMP"
)

// Options say what to compare and how closely.
type Options struct {
	// Table is the source table; Columns its captured columns (Source.CapturedColumns);
	// Keys the key columns rows are joined on (the capture instance's unique index, or
	// snapshotKeys), all among Columns.
	Table   source.Table
	Columns []source.Column
	Keys    []source.Column
	// CaptureInstance is read for the keys changed after silver's position (IN_FLIGHT);
	// WithoutCommandID reads its change table as the stream does with includeCommandId
	// false.
	CaptureInstance  string
	WithoutCommandID bool
	// AppliedLSN is how far silver has applied bronze (its position's applied_lsn: every
	// transaction up to it is in silver, docs/silver.md § Position); the zero LSN takes
	// the newest _start_lsn among silver's rows, which overstates it when a row came from
	// a snapshot or chunk read ahead of the changes to other keys.
	AppliedLSN lsn.LSN
	// Position is silver's position (nil: none recorded): which waves of an open chunked
	// snapshot silver has applied. With Deps.Chunks it tells the keys of the chunks silver
	// has not applied yet, whose differences are IN_FLIGHT (docs/reconcile.md § While a
	// chunked snapshot is open); without a position the chunks read count as applied.
	Position *silver.Position
	// BucketRows is how many rows a merged bucket aims to hold (DefaultBucketRows when 0).
	BucketRows int64
	// Sample is the fraction of matching buckets tier 2 also reads (0..1; 0 reads none).
	Sample float64
	// Seed makes the sample repeatable.
	Seed uint64
	// Read bounds the record batches of the source reads.
	Read source.ReadOptions
	// Logger receives progress (nil: none).
	Logger *slog.Logger
}

// DefaultBucketRows is the merged bucket size tier 1 aims for.
const DefaultBucketRows = 1_000_000

// fineBuckets is about how many fine buckets the key's span is cut into before merging.
const fineBuckets = 100_000

// Deps are what reconcile reads: the source, silver and bronze (for changes in flight and
// the chunk checks), and the chunk records of a chunked snapshot (ReadChunkRecords, read
// before bronze; nil: no chunk checks).
type Deps struct {
	Source source.Source
	Silver *deltalog.Snapshot
	Bronze *deltalog.Snapshot
	Chunks *ChunkRecords
}

// Row is one report row: a bucket (tier 1), a key (tier 2) or a chunk (chunk checks).
type Row struct {
	Kind Kind
	// Scope is "bucket", "key" or "chunk".
	Scope string
	// Lo and Hi bound a bucket's keys ([Lo, Hi), decimal text; "" open) for an integer key,
	// or a chunk's (the plans table's JSON lists of key values; "" open).
	Lo, Hi string
	// Chunk is a chunk row's chunk index.
	Chunk int32
	// Detail says what a chunk check found ("" for MATCH).
	Detail string
	// Key is a key row's key values as text, in key order.
	Key []string
	// SourceRows and TargetRows are a bucket's counts on each side; for a chunk, the count
	// recorded for it (chunk row or facts row) and bronze's.
	SourceRows, TargetRows int64
	// Columns are the columns whose values differ (RECORD_DIFF).
	Columns []string
	// TargetLSN is silver's _start_lsn of a differing key ("" when silver lacks it), or
	// the smallest _start_lsn of a chunk's rows in bronze (its stamp).
	TargetLSN string
}

// Result is what a run found.
type Result struct {
	// MaxLSN is the source's max LSN read at the start; AppliedLSN silver's position.
	MaxLSN, AppliedLSN lsn.LSN
	// Rows are the report rows: every bucket, then every tile tier 2 read, then every key
	// that differs.
	Rows []Row
	// Counts are the rows per kind.
	Counts map[Kind]int
	// Tier2Buckets is how many buckets (or tiles) tier 2 read.
	Tier2Buckets int
	// Tiles is how many tiles the key space of a key that is not one integer or date
	// column was cut into when the table holds more than BucketRows rows (0: not tiled,
	// or no tile was to be read); TilesSampled how many of them tier 2 read.
	Tiles, TilesSampled int
	// ChunkedSnapshot is the S of the chunked snapshot whose chunks were checked ("" none).
	ChunkedSnapshot string
}

// OK is true when nothing mismatches: every row MATCH or IN_FLIGHT.
func (r Result) OK() bool {
	for k, n := range r.Counts {
		if n > 0 && k != Match && k != InFlight {
			return false
		}
	}
	return true
}

// Run compares silver with the source table once. Errors: *config.ConfigError for options that
// cannot work (no keys, a key not among the columns, a silver table without a column);
// the source's and deltalog's errors as they are.
func Run(ctx context.Context, d Deps, o Options) (Result, error) {
	if err := o.check(d); err != nil {
		return Result{}, err
	}
	if o.BucketRows <= 0 {
		o.BucketRows = DefaultBucketRows
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	max, err := d.Source.MaxLSN(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("reconcile: read max LSN: %w", err)
	}
	cols, err := compared(d.Silver, o.Columns)
	if err != nil {
		return Result{}, err
	}
	res := Result{MaxLSN: max, Counts: map[Kind]int{}}
	intKey := len(o.Keys) == 1 && bucketed(o.Keys[0].DataType) // an integer or date key

	// Silver's side of tier 1, and its position when none was given.
	side, err := silverBuckets(ctx, d.Silver, o.Keys, intKey)
	if err != nil {
		return Result{}, err
	}
	res.AppliedLSN = o.AppliedLSN
	if res.AppliedLSN.IsZero() {
		res.AppliedLSN = side.newest
	}
	lower := res.AppliedLSN
	if max.Less(lower) {
		// Silver ahead of the max LSN read first: the stream moved on meanwhile, or the
		// source lost what silver holds (a restore, a failover with data loss, another
		// database), whose changes would all read IN_FLIGHT. max_lsn read again tells them
		// apart.
		if err := source.CheckContinuity(ctx, d.Source, res.AppliedLSN, time.Time{}); err != nil {
			var rw *source.LSNRewoundError
			if errors.As(err, &rw) {
				rw.RecordedBy = source.RecordedBySilverPosition
			}
			return Result{}, fmt.Errorf("reconcile: %w", err)
		}
		lower = max
	}
	moved, err := movedKeys(ctx, d, o, lower, max)
	if err != nil {
		return Result{}, err
	}
	un := unappliedChunks(d.Chunks, o.Position, o.Keys, o.Columns, log)
	log.Info("reconcile: silver read", "rows", side.rows, "applied_lsn", res.AppliedLSN.String(), "moved_keys", len(moved.keys))

	var buckets []bucket
	if intKey {
		buckets, err = intBuckets(ctx, d.Source, o, side)
	} else {
		buckets, err = wholeTable(ctx, d.Source, o, side)
	}
	if err != nil {
		return Result{}, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x7265636f6e63696c))
	var tier2 []bucket
	for i := range buckets {
		b := &buckets[i]
		switch {
		case b.src == b.dst && b.srcSum == b.dstSum:
			b.kind = Match
			if o.Sample > 0 && rng.Float64() < o.Sample {
				tier2 = append(tier2, *b)
			}
		case moved.inRange(b, intKey) || un.touches(b, intKey):
			b.kind = InFlight
			tier2 = append(tier2, *b)
		default:
			b.kind = Mismatch
			tier2 = append(tier2, *b)
		}
		res.add(b.row())
	}
	if !intKey && max64(buckets[0].src, buckets[0].dst) > o.BucketRows {
		// Another key's table above BucketRows: tier 2 reads tiles of the key, cut by the
		// server in its key order, every one when the table's counts differ.
		tier2, res.Tiles, err = keyTiles(ctx, d.Source, o, buckets[0], buckets[0].kind != Match, rng)
		if err != nil {
			return Result{}, err
		}
		res.TilesSampled = len(tier2)
	}
	if len(tier2) > 0 {
		res.Tier2Buckets = len(tier2)
		tiles, keys, bad, err := compareRows(ctx, d, o, cols, tier2, intKey, moved, un)
		if err != nil {
			return Result{}, err
		}
		// A bucket a change in flight or an unapplied chunk touches is IN_FLIGHT only when
		// none of its keys differs for another reason. The bucket rows are res.Rows[:len(buckets)].
		for i, b := range buckets {
			if b.kind == InFlight && bad[int64Or(b.lo, minInt64)] {
				res.Rows[i].Kind = Mismatch
				res.Counts[InFlight]--
				res.Counts[Mismatch]++
			}
		}
		for _, t := range tiles {
			res.add(t)
		}
		for _, k := range keys {
			res.add(k)
		}
	}
	chunks, s, err := checkChunks(ctx, d.Bronze, d.Chunks)
	if err != nil {
		return Result{}, err
	}
	res.ChunkedSnapshot = s
	for _, c := range chunks {
		res.add(c)
	}
	log.Info("reconcile: done", "buckets", len(buckets), "tier2_buckets", res.Tier2Buckets, "counts", fmt.Sprint(res.Counts))
	return res, nil
}

func (r *Result) add(row Row) {
	r.Rows = append(r.Rows, row)
	r.Counts[row.Kind]++
}

func (o Options) check(d Deps) error {
	if d.Source == nil || d.Silver == nil {
		return configError("reconcile", "a source and a silver table are needed")
	}
	if d.Silver.Version() < 0 {
		return configError("silver", "the silver table does not exist yet: apply bronze to it first (mssqlcdc apply)")
	}
	if len(o.Keys) == 0 {
		return configError("keys", "no key columns: the capture instance has no unique index; set snapshotKeys")
	}
	for _, k := range o.Keys {
		if !slices.ContainsFunc(o.Columns, func(c source.Column) bool { return strings.EqualFold(c.Name, k.Name) }) {
			return configError("keys", fmt.Sprintf("key column %q is not a captured column", k.Name))
		}
	}
	if o.Sample < 0 || o.Sample > 1 {
		return configError("sample", fmt.Sprintf("%v: want a fraction between 0 and 1", o.Sample))
	}
	return nil
}

// compared are the columns compared row by row: the captured columns the table still has,
// computed ones left out (their change rows hold NULL, docs/reference/sqlserver-cdc.md),
// each of which silver must have.
func compared(silver *deltalog.Snapshot, cols []source.Column) ([]source.Column, error) {
	sc, err := silver.ArrowSchema()
	if err != nil {
		return nil, err
	}
	var out []source.Column
	for _, c := range cols {
		if c.Computed || !c.Present {
			continue
		}
		if !slices.ContainsFunc(sc.Fields(), func(f arrowField) bool { return strings.EqualFold(f.Name, c.Name) }) {
			return nil, configError("silver", fmt.Sprintf("no column %q: is it the silver table of this source table?", c.Name))
		}
		out = append(out, c)
	}
	return out, nil
}

// configError is a reconcile that cannot run as asked: a *config.ConfigError (the name
// handlers return for a spec or event to change) on field, saying what to change. Its
// fields are the job's settings (keys, silver, sample), which the spec, a flag or an event
// gave, so it says "invalid reconcile settings", not "invalid table spec".
func configError(field, reason string) error {
	return &config.ConfigError{Problems: []config.Problem{{Field: field, Reason: reason}}, In: "reconcile settings"}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// startLSN is the silver/bronze column of a row's LSN.
const startLSN = bronze.ColStartLSN
