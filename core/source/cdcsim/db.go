package cdcsim

import (
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

var _ source.Source = (*DB)(nil)

// Defaults of Config.
const (
	// DefaultDatabase is the database name errors report.
	DefaultDatabase = "cdcsim"
	// DefaultCollation is SQL Server's default server collation for US English
	// installations, case-insensitive.
	DefaultCollation = "SQL_Latin1_General_CP1_CI_AS"
	// DefaultStartUnix is the simulated clock's first reading when Config.Start is zero,
	// in Unix seconds: 2026-09-21T14:13:20Z.
	DefaultStartUnix = 1_790_000_000
)

// DefaultFirstLSN is the first LSN the simulator hands out, in the shape of a real one
// (virtual log file 0x2A, block 0x100, slot 1).
var DefaultFirstLSN = lsn.MustParse("0x0000002A000001000001")

// Config sets up a DB. The zero value is a UTC server whose capture job keeps up with every
// commit and writes no idle entries on its own.
type Config struct {
	// Seed makes LSN gaps (and anything else random) repeatable.
	Seed uint64
	// Database is the database name used in errors; DefaultDatabase when empty.
	Database string
	// Location is the server's time zone: tran_end_time is its local wall clock. UTC when nil.
	Location *time.Location
	// Start is the simulated clock's first reading (UTC); a fixed date when zero.
	Start time.Time
	// FirstLSN is the first LSN handed out; DefaultFirstLSN when zero.
	FirstLSN lsn.LSN
	// ManualCapture holds committed transactions back from the change tables, the mapping
	// and MaxLSN until RunCapture, like a capture job that has not run yet.
	ManualCapture bool
	// IdleEvery, when positive, writes an idle mapping entry whenever Advance moves the
	// clock this far past the last entry (SQL Server 2022 writes one about every 305 s).
	IdleEvery time.Duration
	// KeyUpdateAsDeleteInsert records an update that changes the unique key as a delete and
	// an insert (operations 1 and 2) instead of an update pair (3 and 4).
	KeyUpdateAsDeleteInsert bool
	// NullStartLSNUntilCaptured reports a capture instance's start_lsn as NULL (the zero
	// LSN) in CaptureInstances until capture has reached it: sp_cdc_help_change_data_capture
	// documents NULL as "the low endpoint has not been established".
	NullStartLSNUntilCaptured bool
	// Collation is the database's default collation, which char, varchar, nchar and
	// nvarchar columns created without one get (sys.columns.collation_name);
	// DefaultCollation when empty. A name with _CI_ compares ignoring case, as SQL Server's
	// default installations do.
	Collation string
	// CDCDisabled makes the database answer as if sys.sp_cdc_enable_db never ran.
	CDCDisabled bool
}

// DB is one simulated database. Create it with New.
type DB struct {
	mu     sync.Mutex
	cfg    Config
	loc    *time.Location
	rng    *rand.Rand
	pcg    *rand.PCG // rng's state, saved by Backup so a restore hands out the same LSNs again
	now    time.Time
	next   lsn.LSN
	closed bool

	// timeline is cdc.lsn_time_mapping: captured commits and idle entries in LSN order.
	// Rows below purged are gone (cleanup); timeline[purged:] is what the mapping holds.
	timeline []commitEntry
	purged   int
	// pending are committed transactions capture has not processed (ManualCapture).
	pending []*committed
	// lastEntry is the local time of the newest mapping entry, for IdleEvery.
	lastEntry time.Time

	tables    map[string]*table // by lower-cased "schema.name"
	instances []*instance       // every live capture instance, in creation order
	created   int               // capture instances ever created, for command_id offsets
	open      map[*Txn]struct{}
	queued    []*Txn // CommitBeforeRead

	faults faultState
	// lag, when set, routes the next change reads to a secondary that is behind (LagReplica).
	lag *replicaLag
	net Network // Ping's round trip and the change reads' network wait (SetNetwork)
	// denied are the capture instances (lower-cased) whose change table the reading login
	// may not SELECT (DenySelect).
	denied map[string]bool
}

// commitEntry is one cdc.lsn_time_mapping row.
type commitEntry struct {
	lsn lsn.LSN
	// local is tran_end_time: the server's wall clock (as a UTC-located time), rounded to
	// 1/300 s. utc is the same instant in UTC, as the fall-back aware conversion gives.
	local time.Time
	utc   time.Time
	idle  bool
}

// New returns an empty database with CDC enabled.
func New(cfg Config) *DB {
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	db := &DB{
		cfg:    cfg,
		loc:    cfg.Location,
		rng:    rand.New(pcg),
		pcg:    pcg,
		now:    cfg.Start,
		next:   cfg.FirstLSN,
		tables: map[string]*table{},
		open:   map[*Txn]struct{}{},
	}
	if db.loc == nil {
		db.loc = time.UTC
	}
	if db.now.IsZero() {
		db.now = time.Unix(DefaultStartUnix, 0).UTC()
	}
	db.now = db.now.UTC()
	if db.next.IsZero() {
		db.next = DefaultFirstLSN
	}
	if db.cfg.Database == "" {
		db.cfg.Database = DefaultDatabase
	}
	if db.cfg.Collation == "" {
		db.cfg.Collation = DefaultCollation
	}
	db.lastEntry = db.now
	return db
}

// Now is the simulated clock (UTC).
func (db *DB) Now() time.Time {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.now
}

// SetTime moves the simulated clock to t. Moving it backwards is allowed (a server clock
// set back); commit order stays LSN order.
func (db *DB) SetTime(t time.Time) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.now = t.UTC()
}

// Advance moves the simulated clock forward by d, writing idle entries on the way when
// Config.IdleEvery is set (and capturing pending commits first, as the capture job would).
func (db *DB) Advance(d time.Duration) {
	db.mu.Lock()
	defer db.mu.Unlock()
	end := db.now.Add(d)
	if db.cfg.IdleEvery > 0 {
		for {
			last := db.lastEntry
			if n := len(db.timeline); n > 0 && db.timeline[n-1].utc.After(last) {
				last = db.timeline[n-1].utc
			}
			at := last.Add(db.cfg.IdleEvery)
			if at.After(end) {
				break
			}
			db.now = at
			db.captureLocked()
			db.idleLocked()
		}
	}
	db.now = end
}

// allocLSN hands out the next LSN and moves the counter past it by a varying gap: usually a
// few slots, sometimes a new log block, rarely a new virtual log file.
func (db *DB) allocLSN() lsn.LSN {
	l := db.next
	n := db.next
	switch r := db.rng.IntN(100); {
	case r < 2: // next VLF
		v := uint32(n[0])<<24 | uint32(n[1])<<16 | uint32(n[2])<<8 | uint32(n[3])
		v++
		n = lsn.LSN{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v), 0, 0, 0, 0x10, 0, 1}
	case r < 15: // next block
		b := uint32(n[4])<<24 | uint32(n[5])<<16 | uint32(n[6])<<8 | uint32(n[7])
		b += 1 + uint32(db.rng.IntN(64))
		n[4], n[5], n[6], n[7] = byte(b>>24), byte(b>>16), byte(b>>8), byte(b)
		n[8], n[9] = 0, 1
	default:
		s := uint16(n[8])<<8 | uint16(n[9])
		step := uint16(2 + db.rng.IntN(30))
		if s > 0xFFFF-step {
			b := uint32(n[4])<<24 | uint32(n[5])<<16 | uint32(n[6])<<8 | uint32(n[7]) + 1
			n[4], n[5], n[6], n[7] = byte(b>>24), byte(b>>16), byte(b>>8), byte(b)
			s, step = 0, 1
		}
		s += step
		n[8], n[9] = byte(s>>8), byte(s)
	}
	db.next = n
	return l
}

// localClock is tran_end_time for the UTC instant t: the wall clock in the server's zone,
// rounded to datetime's 1/300 s, as a UTC-located time.
func (db *DB) localClock(t time.Time) time.Time {
	l := t.In(db.loc)
	y, mo, d := l.Date()
	h, mi, s := l.Clock()
	return roundDatetime(time.Date(y, mo, d, h, mi, s, l.Nanosecond(), time.UTC))
}

// newEntry makes the mapping row of a commit at the current clock.
func (db *DB) newEntry(l lsn.LSN, idle bool) commitEntry {
	local := db.localClock(db.now)
	// The instant the rounded local reading stands for, with the offset of the commit.
	_, off := db.now.In(db.loc).Zone()
	utc := local.Add(-time.Duration(off) * time.Second)
	return commitEntry{lsn: l, local: local, utc: utc, idle: idle}
}

// Idle writes an idle entry: a mapping row with no change rows, as the capture job does on
// a quiet database. Pending commits are captured first. It returns the entry's LSN.
func (db *DB) Idle() lsn.LSN {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.captureLocked()
	return db.idleLocked()
}

func (db *DB) idleLocked() lsn.LSN {
	e := db.newEntry(db.allocLSN(), true)
	db.appendEntry(e)
	return e.lsn
}

func (db *DB) appendEntry(e commitEntry) {
	db.timeline = append(db.timeline, e)
	db.lastEntry = e.utc
	for _, ci := range db.instances {
		if ci.min.IsZero() && ci.start.Compare(e.lsn) <= 0 {
			ci.min = ci.start
		}
	}
}

// Close makes every later Source call fail with source.ErrClosed.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.closed = true
	return nil
}

// tableKey is the map key of schema.name.
func tableKey(schema, name string) string {
	return strings.ToLower(schema) + "." + strings.ToLower(name)
}

// splitName reads "schema.table" or "table" (schema dbo).
func splitName(name string) (string, string) {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "dbo", name
}
