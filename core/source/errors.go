package source

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// ErrClosed is returned by calls on a closed Source.
var ErrClosed = errors.New("source: closed")

// CaptureInstanceNotFoundError: the capture instance does not exist, the login may not
// see it, or capture has not processed its creation yet (min LSN NULL or zero).
type CaptureInstanceNotFoundError struct {
	Name    string
	Similar []string
}

func (e *CaptureInstanceNotFoundError) Error() string {
	msg := fmt.Sprintf("capture instance %q not found, not visible to this login, or not yet processed by the capture job (retry after it ran)", e.Name)
	if len(e.Similar) > 0 {
		msg += "; similar: " + strings.Join(e.Similar, ", ")
	}
	return msg
}

// AmbiguousCaptureInstanceError: a name matched two capture instances that differ only in
// case, on a case-sensitive database.
type AmbiguousCaptureInstanceError struct {
	Name    string
	Matches []string
}

func (e *AmbiguousCaptureInstanceError) Error() string {
	return fmt.Sprintf("capture instance %q matches %s ignoring case: give the exact name", e.Name, strings.Join(e.Matches, " and "))
}

// CDCNotEnabledError: CDC is not enabled on the database (or on the table).
type CDCNotEnabledError struct {
	Database string
	Table    string
}

func (e *CDCNotEnabledError) Error() string {
	if e.Table != "" {
		return fmt.Sprintf("CDC is not enabled on table %s of database %s: run sys.sp_cdc_enable_table", e.Table, e.Database)
	}
	return fmt.Sprintf("CDC is not enabled on database %s: run sys.sp_cdc_enable_db", e.Database)
}

// PermissionError: the login lacks a grant. Grant is the statement a DBA runs.
type PermissionError struct {
	Object string
	Grant  string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("permission denied on %s: run %s", e.Object, e.Grant)
}

// LoginError: the server refused the login (error 18456).
type LoginError struct {
	Message string
}

func (e *LoginError) Error() string { return "login failed: " + e.Message }

// LockTimeoutError: a source-table read waited longer than lockTimeoutMs (error 1222).
type LockTimeoutError struct {
	Table string
}

func (e *LockTimeoutError) Error() string {
	return fmt.Sprintf("lock timeout reading %s (error 1222): a writer holds locks in the range; retry, raise lockTimeoutMs or read with isolation=snapshot", e.Table)
}

// TransientError: a connection or timeout failure that a retry may heal (SQLSTATE 08xxx,
// HYT00, HYT01, 40001, a lost connection). Implementations retry it before returning it.
type TransientError struct {
	Op  string
	Err error
}

func (e *TransientError) Error() string { return e.Op + ": transient: " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// UnreachableError: SQL Server could not be reached at all: the connection was refused,
// the host name did not resolve, the connection timed out, or what accepted the connection
// did not answer the login in time or did not answer as SQL Server does (another service
// on that port; docs/operations.md "UnreachableError"). Its message names the
// address, the setting it came from (Field, e.g. "source.dsn") and what to check there;
// never the DSN itself, which may hold a password. Sources return it inside a
// *TransientError (a server restarting or failing over heals by itself), so it is
// retried like any lost connection.
type UnreachableError struct {
	// Server is the address as the DSN gives it: "host:port", or "host/instance".
	Server string
	// Field names the setting that holds the address ("source.dsn"); "" reads "the DSN".
	Field string
	// Cause is one of the Unreachable* causes.
	Cause string
	// Waited is, for UnreachableNoAnswer, how long the login waited for the server
	// (the login timeout, mssql.Options.LoginTimeout, unless Limit says otherwise).
	Waited time.Duration
	// Limit, for UnreachableNoAnswer, names the bound that ended the wait when it was not
	// the login timeout: "the DSN's connection timeout, which fired before the login
	// timeout of 5 s". "" when the login timeout fired.
	Limit string
	// Err is the driver's error.
	Err error
}

// The causes of an *UnreachableError.
const (
	UnreachableRefused  = "connection refused"
	UnreachableNoHost   = "host name not found"
	UnreachableDNS      = "host name lookup failed"
	UnreachableTimedOut = "connection timed out"
	// UnreachableNoAnswer: the TCP connection was accepted, and the login got no answer
	// within Waited.
	UnreachableNoAnswer = "no answer to the login"
	// UnreachableNotSQLServer: what accepted the connection answered the login with
	// something that is not SQL Server's protocol (TDS).
	UnreachableNotSQLServer = "not SQL Server"
)

func (e *UnreachableError) Error() string {
	field := e.Field
	if field == "" {
		field = "the DSN"
	}
	var check string
	switch e.Cause {
	case UnreachableNoAnswer:
		limit := ""
		if e.Limit != "" {
			limit = " (" + e.Limit + ")"
		}
		return fmt.Sprintf("SQL Server at %s accepted the connection but did not answer the login within %s s%s: "+
			"check that %s's host and port are SQL Server's (not another service's, or a load balancer or proxy with nothing healthy behind it), "+
			"and that the server is not stuck or overloaded: %v", e.Server, strconv.FormatFloat(e.Waited.Seconds(), 'f', -1, 64), limit, field, e.Err)
	case UnreachableNotSQLServer:
		return fmt.Sprintf("SQL Server at %s accepted the connection but answered the login with something that is not SQL Server's protocol (TDS): "+
			"check that %s's host and port are SQL Server's, not another service's (HTTP, SSH, a proxy): %v", e.Server, field, e.Err)
	case UnreachableRefused:
		check = "check the host and port in " + field + ", and that SQL Server accepts TCP connections there (TCP/IP enabled, the instance's port)"
	case UnreachableNoHost, UnreachableDNS:
		check = "check the host name in " + field + ", and that this machine's DNS resolves it (a private name needs the network's own resolver)"
	default:
		check = "check the host and port in " + field + ", and that no firewall or security group drops this machine's connections to it"
	}
	return fmt.Sprintf("cannot reach SQL Server at %s (%s): %s: %v", e.Server, e.Cause, check, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// InvalidArgumentError: a call's argument is outside its contract (an identifier with
// ']' or control characters, n < 1, a key of the wrong arity).
type InvalidArgumentError struct {
	Arg    string
	Reason string
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Arg, e.Reason)
}

// LSNNotAvailableError: changes from Requested are gone from a capture instance whose low
// watermark is now Minimum (CDC cleanup passed them).
type LSNNotAvailableError struct {
	CaptureInstance string
	Requested       lsn.LSN
	Minimum         lsn.LSN
}

func (e *LSNNotAvailableError) Error() string {
	return fmt.Sprintf("%s: change data from %s is gone (min_lsn is now %s)", e.CaptureInstance, e.Requested, e.Minimum)
}

// IsTransient reports whether err is, or wraps, a *TransientError.
func IsTransient(err error) bool {
	var t *TransientError
	return errors.As(err, &t)
}

// ReplicaBehindError: the session that was to read a change range saw
// sys.fn_cdc_get_max_lsn() below the range's end. The range was planned against a max_lsn
// read on another session, so this session is on a replica that has not replayed that far
// (read-only routing to a lagging secondary, docs/reference/sqlserver-cdc.md §13); read now, it would return a short range that looks complete. Sources return
// it wrapped in a *TransientError: the replica catches up, and a retry on another session
// reads the whole range.
type ReplicaBehindError struct {
	// CaptureInstance is the change table read, or Table ("schema.name") the source
	// table read at a snapshot's stamp.
	CaptureInstance, Table string
	// To is the range's end (the stamp, for a table read); MaxLSN what the reading session
	// saw.
	To, MaxLSN lsn.LSN
}

func (e *ReplicaBehindError) Error() string {
	what := e.CaptureInstance
	if what == "" {
		what = e.Table
	}
	return fmt.Sprintf("%s: the session reading up to %s sees max_lsn %s: it is on a replica that has not caught up (read-only routing to a lagging secondary?); retry, or point the DSN at the primary", what, e.To, e.MaxLSN)
}

// LSNRewoundError: the database no longer holds the history a checkpoint or snapshot stamp
// was taken on. Either max_lsn is below the recorded LSN, or the commit at the recorded LSN
// has another commit time (or is gone while older commits remain). A database restore, an
// Always On forced failover with data loss, or a DSN pointed at another database or replica
// does this; reading on would skip every commit whose LSN the checkpoint already passed
// (docs/reference/sqlserver-cdc.md §13). Nothing is read or written
// after it; see docs/operations.md for recovery. The advice in its message follows
// RecordedBy: what recorded the LSN decides what to do next.
type LSNRewoundError struct {
	// Recorded is the checkpoint's (or stamp's) LSN and RecordedTime its recorded commit
	// time (zero when it was not a commit's).
	Recorded     lsn.LSN
	RecordedTime time.Time
	// MaxLSN is the server's max_lsn now.
	MaxLSN lsn.LSN
	// Found is the commit at or before Recorded now (zero LSN when max_lsn is below it).
	Found Commit
	// RecordedBy is what recorded the LSN: RecordedByCheckpoint (the zero value, as
	// CheckContinuity returns it), or a stamp (snapshot.CheckStampAs sets it).
	RecordedBy string
}

// What recorded the LSN an *LSNRewoundError is about (its RecordedBy), each with its own
// advice (docs/operations.md "LSNRewoundError").
const (
	// RecordedByCheckpoint: the stream's checkpoint (its last or pending batch's end).
	RecordedByCheckpoint = ""
	// RecordedBySnapshotStamp: a full snapshot's L or a chunked snapshot's S.
	RecordedBySnapshotStamp = "snapshot stamp"
	// RecordedByWaveStamp: a backfill wave's own stamp L (above its snapshot's S).
	RecordedByWaveStamp = "wave stamp"
	// RecordedBySeedStamp: the LSN a seed's as_of became (docs/seed.md).
	RecordedBySeedStamp = "seed stamp"
	// RecordedBySilverPosition: silver's applied LSN, which reconcile compares from
	// (docs/reconcile.md).
	RecordedBySilverPosition = "silver's applied LSN"
)

func (e *LSNRewoundError) Error() string {
	var what string
	switch {
	case e.MaxLSN.Less(e.Recorded) && e.RecordedBy == RecordedBySilverPosition:
		what = fmt.Sprintf("max_lsn %s is below silver's applied LSN %s", e.MaxLSN, e.Recorded)
	case e.MaxLSN.Less(e.Recorded):
		what = fmt.Sprintf("max_lsn %s is below the recorded LSN %s", e.MaxLSN, e.Recorded)
	case e.Found.LSN != e.Recorded:
		what = fmt.Sprintf("the commit at the recorded LSN %s (committed %s) is gone while older commits remain (the last one at or before it is %s)", e.Recorded, e.RecordedTime.UTC().Format(time.RFC3339Nano), e.Found.LSN)
	default:
		what = fmt.Sprintf("the commit at the recorded LSN %s was committed %s but the server now says %s", e.Recorded, e.RecordedTime.UTC().Format(time.RFC3339Nano), e.Found.Time.UTC().Format(time.RFC3339Nano))
	}
	const check = "Check the DSN (and sourceTimeZone, which changes commit times)"
	var advice string
	switch e.RecordedBy {
	case RecordedBySnapshotStamp:
		advice = "the snapshot would lack commits its stamp claims, and the stream starts after the stamp: nothing was read or written. " +
			check + "; if the database did go back, start the table over with a new checkpoint and a new snapshot (bootstrap; docs/operations.md)"
	case RecordedByWaveStamp:
		advice = "the wave's chunks would lack commits its stamp claims, and the stream starts after the snapshot's: nothing was read or written. " +
			check + "; if the database did go back, start the table over with a new checkpoint and a new snapshot (bootstrap; docs/operations.md)"
	case RecordedBySilverPosition:
		advice = "silver holds changes the source does not, which reconcile would report as in flight: nothing was compared. " +
			check + "; if the database did go back, the stream stops with this error too: start the table over with a new checkpoint and a new snapshot, and silver from the new bronze (docs/operations.md)"
	case RecordedBySeedStamp:
		advice = "the copy may hold commits the database lost, and the stream would start after the seed stamp: nothing was committed. " +
			check + "; if the database did go back, export a copy of the restored database and seed again with a new as_of (docs/seed.md)"
	default:
		advice = "the changes the checkpoint passed may never be read. Stop, " + strings.ToLower(check[:1]) + check[1:] + " and re-snapshot (docs/operations.md)"
	}
	return "LSN history rewound: " + what + ". The database was restored, failed over with data loss, or the DSN names another database or replica: " + advice
}

// CommandIDMissingError: the change table has no __$command_id column. SQL Server added it
// in cumulative updates of 2012 to 2016 (KB3030352); a change table whose upgrade step did
// not run lacks it (docs/reference/sqlserver-cdc.md §13.5). Set includeCommandId: false to
// read it ordered by (start_lsn, seqval, operation).
type CommandIDMissingError struct {
	CaptureInstance string
}

func (e *CommandIDMissingError) Error() string {
	return fmt.Sprintf("change table cdc.[%s_CT] has no __$command_id column (an upgrade step of KB3030352 did not run): set options.includeCommandId to false to read it in (start_lsn, seqval, operation) order", e.CaptureInstance)
}
