package mssql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// SQL Server error numbers this package branches on (sys.messages).
const (
	errSelectDenied      = 229   // The %ls permission was denied on the object '%.*ls'
	errColumnDenied      = 230   // The %ls permission was denied on the column '%.*ls' of the object
	errInvalidObject     = 208   // Invalid object name '%.*ls'
	errInvalidColumn     = 207   // Invalid column name '%.*ls'
	errLockTimeout       = 1222  // Lock request time out period exceeded
	errDeadlock          = 1205  // Transaction was deadlocked ... chosen as the deadlock victim (SQLSTATE 40001)
	errLoginFailed       = 18456 // Login failed for user '%.*ls'
	errCDCNotEnabledDB   = 22901 // The database '%s' is not enabled for Change Data Capture
	errCDCObjectNotFound = 22981 // Object does not exist or access is denied (sp_cdc_* on an unknown instance)
)

// transientNumbers are server errors a retry may heal: deadlock victim (40001), and the
// connection/throttling errors Azure SQL and SQL Server report while a database moves or
// fails over (the list Microsoft documents for Azure SQL transient faults).
var transientNumbers = map[int32]bool{
	errDeadlock: true,
	40613:       true,                           // database not currently available
	40501:       true,                           // service busy
	40197:       true,                           // error processing the request (failover)
	49918:       true, 49919: true, 49920: true, // cannot process request, too many operations
	10928: true, 10929: true, // resource limits
	// Always On availability group failover (docs/reference/sqlserver-cdc.md §13.4): the
	// database is moving between replicas and comes back within seconds to minutes.
	976:   true,                           // the availability database is not accessible for queries (replica changing role)
	978:   true,                           // the database is accessible only with ApplicationIntent=ReadOnly (a secondary now)
	983:   true,                           // the replica is not in the PRIMARY or SECONDARY role (resolving)
	3948:  true,                           // transaction ended by an availability replica config/state change
	4060:  true,                           // cannot open the database requested by the login (also while it fails over)
	4221:  true,                           // login to a readable secondary timed out waiting for row versioning
	233:   true,                           // connection closed by the server
	64:    true,                           // specified network name no longer available
	10053: true, 10054: true, 10060: true, // transport-level errors
}

// errContext names the call an error came from, so the typed errors can say what failed.
type errContext struct {
	// Op is a short verb phrase for wraps ("read change table").
	Op string
	// CaptureInstance, when the call is about one.
	CaptureInstance string
	// Table is the quoted source table of a source-table read ([schema].[table]).
	Table string
	// Database and User come from the options, for CDCNotEnabledError and GRANT texts.
	Database string
	User     string
	// Server and DSNField come from the options, for an UnreachableError.
	Server   string
	DSNField string
}

// mapError turns a driver error into the typed errors of core/source (the one place SQL
// error numbers are mapped; their meaning: docs/reference/sqlserver-cdc.md §10):
//
//	1222                                  *source.LockTimeoutError
//	18456                                 *source.LoginError
//	22901, "not enabled for Change Data Capture"  *source.CDCNotEnabledError
//	22981 on a call naming a capture instance      *source.CaptureInstanceNotFoundError
//	22981 otherwise                                *source.CDCNotEnabledError
//	229, 230                              *source.PermissionError with the GRANT to run
//	1205, connection and throttling errors, broken connections, network timeouts
//	                                      *source.TransientError
//	a refused connection, a host name not found, a dial that timed out, a login the
//	server did not answer in time or answered with no TDS (*loginFailure)
//	                                      *source.TransientError around a
//	                                      *source.UnreachableError naming the DSN's field
//
// Context cancellation and anything else come back wrapped as "<op>: %w". nil is nil.
// A permission error on a change table is only a guess until probeChangeTable confirms
// it (P6, docs/reference/sqlserver-cdc.md §9); the caller runs the probe.
func mapError(err error, c errContext) error {
	if err == nil {
		return nil
	}
	if isTyped(err) {
		return err
	}
	if u := unreachable(err, c); u != nil {
		// Before the context check: a dial that timed out is a context.DeadlineExceeded
		// too (net's timeout error says so), and it is the server's address at fault.
		return &source.TransientError{Op: c.Op, Err: u}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", c.Op, err)
	}
	if se, ok := serverError(err); ok {
		switch n := se.Number; {
		case n == errLockTimeout:
			return &source.LockTimeoutError{Table: c.Table}
		case n == errLoginFailed:
			return &source.LoginError{Message: se.Message}
		case n == errCDCNotEnabledDB || strings.Contains(strings.ToLower(se.Message), "not enabled for change data capture"):
			return &source.CDCNotEnabledError{Database: c.Database, Table: c.Table}
		case n == errCDCObjectNotFound && c.CaptureInstance != "":
			return &source.CaptureInstanceNotFoundError{Name: c.CaptureInstance}
		case n == errCDCObjectNotFound:
			return &source.CDCNotEnabledError{Database: c.Database, Table: c.Table}
		case n == errSelectDenied || n == errColumnDenied:
			obj := c.Table
			if c.CaptureInstance != "" && strings.Contains(strings.ToLower(se.Message), strings.ToLower(c.CaptureInstance+"_CT")) {
				obj = changeTable(c.CaptureInstance)
			}
			if obj == "" {
				obj = "the object named in: " + se.Message
			}
			return &source.PermissionError{Object: obj, Grant: grantText(obj, c.User)}
		case transientNumbers[n]:
			return &source.TransientError{Op: c.Op, Err: err}
		}
		return fmt.Errorf("%s: %w", c.Op, err)
	}
	if isTransientTransport(err) {
		return &source.TransientError{Op: c.Op, Err: err}
	}
	return fmt.Errorf("%s: %w", c.Op, err)
}

// unreachable is the *source.UnreachableError for err when SQL Server could not be reached
// at all: the connection refused, the server's host name not found (a lookup of another
// name, such as an Entra token authority's, is not the server's address), a dial that
// timed out, a login not answered in time or not in TDS (a *loginFailure). nil
// otherwise, and for a cancelled call.
func unreachable(err error, c errContext) *source.UnreachableError {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	var dns *net.DNSError
	var op *net.OpError
	var lf *loginFailure
	var cause string
	switch {
	case errors.As(err, &lf):
		return &source.UnreachableError{Server: c.Server, Field: c.DSNField, Cause: lf.Cause, Waited: lf.Waited, Limit: lf.Limit, Err: err}
	case errors.As(err, &dns):
		host, _, _ := strings.Cut(c.Server, "/")
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !strings.EqualFold(strings.TrimSuffix(dns.Name, "."), host) {
			return nil
		}
		cause = source.UnreachableDNS
		if dns.IsNotFound {
			cause = source.UnreachableNoHost
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		cause = source.UnreachableRefused
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		cause = source.UnreachableTimedOut
	default:
		return nil
	}
	return &source.UnreachableError{Server: c.Server, Field: c.DSNField, Cause: cause, Err: err}
}

// knownNumber reports the error numbers mapError branches on.
func knownNumber(n int32) bool {
	switch n {
	case errLockTimeout, errLoginFailed, errCDCNotEnabledDB, errCDCObjectNotFound, errSelectDenied, errColumnDenied, errInvalidObject, errInvalidColumn:
		return true
	}
	return transientNumbers[n]
}

// serverError finds the SQL Server error in err. A batch can raise several (go-mssqldb
// reports the last and keeps all in All, first to last); the first one this package
// knows wins, so a 229 followed by a generic "statement could not be prepared" still maps.
func serverError(err error) (mssqldrv.Error, bool) {
	var se mssqldrv.Error
	if !errors.As(err, &se) {
		return se, false
	}
	for _, e := range se.All {
		if knownNumber(e.Number) {
			return e, true
		}
	}
	return se, true
}

// grantText is the statement a DBA runs to give user SELECT on obj.
func grantText(obj, user string) string {
	if user == "" {
		user = "<user>"
	}
	return "GRANT SELECT ON " + obj + " TO [" + strings.ReplaceAll(user, "]", "]]") + "]"
}

// isTransientTransport reports connection-level failures: a connection the driver
// reports as bad, a stream that ended early, a network error (timeouts included).
func isTransientTransport(err error) bool {
	var re mssqldrv.RetryableError
	var ne net.Error
	var ope *net.OpError
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.As(err, &re):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &ope), errors.As(err, &ne):
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "i/o timeout")
}

// isTyped reports errors that are already core/source's typed errors.
func isTyped(err error) bool {
	var (
		lt *source.LockTimeoutError
		le *source.LoginError
		ce *source.CDCNotEnabledError
		pe *source.PermissionError
		te *source.TransientError
		nf *source.CaptureInstanceNotFoundError
		ia *source.InvalidArgumentError
		cm *source.CommandIDMissingError
	)
	return errors.As(err, &lt) || errors.As(err, &le) || errors.As(err, &ce) || errors.As(err, &pe) ||
		errors.As(err, &te) || errors.As(err, &nf) || errors.As(err, &ia) || errors.As(err, &cm) || errors.Is(err, source.ErrClosed)
}

// isChangeTableDenied reports whether err, from a change-table read of ci, is the kind the
// P6 probe decides: a permission error (229/230) or an invalid object name (208) naming
// cdc.<ci>_CT.
func isChangeTableDenied(err error, ci string) bool {
	se, ok := serverError(err)
	if !ok {
		return false
	}
	switch se.Number {
	case errSelectDenied, errColumnDenied, errInvalidObject:
		return strings.Contains(strings.ToLower(se.Message), strings.ToLower(ci+"_CT"))
	}
	return false
}
