package mssql

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Defaults of Options.
const (
	DefaultPort        = 1433
	DefaultDialTimeout = 30 * time.Second
	DefaultAppName     = "mssqlcdc"
)

// Options open a DB. Either DSN or the connection fields are set, not both.
type Options struct {
	// DSN is a complete go-mssqldb URL ("sqlserver://user:pass@host:1433?database=shop"),
	// e.g. MSSQL_TEST_DSN. When set, Host, Port, Instance, Database, User and Password are
	// empty; the database and user are read from it for messages.
	DSN string

	// Host and Port of the server (Port 0 means DefaultPort); Instance is a named instance
	// (then the port is found through the SQL Browser unless Port is set).
	Host     string
	Port     int
	Instance string
	Database string
	User     string
	Password string
	// Encrypt is go-mssqldb's encrypt setting: "" (driver default), "true", "false",
	// "strict" or "disable".
	Encrypt string
	// TrustServerCertificate skips certificate validation (local containers only).
	TrustServerCertificate bool
	// AppName is the program name the server shows (sys.dm_exec_sessions); "" means
	// DefaultAppName.
	AppName string
	// DialTimeout bounds opening a TCP connection; 0 means DefaultDialTimeout. There is no
	// query timeout: it would also kill long, healthy snapshot reads
	// (docs/reference/sqlserver-cdc.md §8.2).
	DialTimeout time.Duration

	// SourceTimeZone is how tran_end_time converts to UTC: "auto" (or ""), "UTC", or a
	// Windows time zone name such as "E. South America Standard Time"
	// (docs/reference/sqlserver-cdc.md §2.3).
	SourceTimeZone string

	// BatchRows and BatchBytes are the batch caps when a read's ReadOptions leave them 0;
	// 0 here means source.DefaultBatchRows / source.DefaultBatchBytes.
	BatchRows  int
	BatchBytes int

	// MaxOpenConns caps the pool; 0 means unlimited (database/sql's default).
	MaxOpenConns int

	// Retry is the transient-error policy; the zero value is 3 retries from 2 s.
	Retry Retry

	// Logger receives warnings (the fixed-offset time zone fallback); nil is slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem of o at once (errors.Join of
// *source.InvalidArgumentError).
func (o Options) Validate() error {
	var errs []error
	bad := func(arg, why string) { errs = append(errs, &source.InvalidArgumentError{Arg: arg, Reason: why}) }
	if o.DSN != "" {
		if o.Host != "" || o.Port != 0 || o.Instance != "" || o.Database != "" || o.User != "" || o.Password != "" {
			bad("DSN", "give either a DSN or host, port, instance, database, user and password, not both")
		}
		u, err := url.Parse(o.DSN)
		if err != nil || u.Scheme != "sqlserver" {
			bad("DSN", "want a sqlserver:// URL")
		}
	} else {
		if o.Host == "" {
			bad("host", "empty")
		}
		if o.Database == "" {
			bad("database", "empty")
		}
	}
	if o.Port < 0 || o.Port > 65535 {
		bad("port", strconv.Itoa(o.Port)+" is outside 0..65535")
	}
	switch o.Encrypt {
	case "", "true", "false", "strict", "disable":
	default:
		bad("encrypt", fmt.Sprintf("%q: want true, false, strict or disable", o.Encrypt))
	}
	if o.DialTimeout < 0 {
		bad("dialTimeout", "negative")
	}
	if o.BatchRows < 0 || o.BatchBytes < 0 {
		bad("batch size", "negative")
	}
	if _, _, err := parseZoneOption(o.SourceTimeZone); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// dsn builds the go-mssqldb URL with net/url: user and password escaped as userinfo, the
// named instance as the path, settings as query parameters.
func (o Options) dsn() string {
	if o.DSN != "" {
		return o.DSN
	}
	port := o.Port
	host := o.Host
	if port != 0 || o.Instance == "" {
		if port == 0 {
			port = DefaultPort
		}
		host = net.JoinHostPort(o.Host, strconv.Itoa(port))
	}
	u := url.URL{Scheme: "sqlserver", Host: host}
	if o.User != "" {
		u.User = url.UserPassword(o.User, o.Password)
	}
	if o.Instance != "" {
		u.Path = "/" + o.Instance
	}
	q := url.Values{}
	q.Set("database", o.Database)
	app := o.AppName
	if app == "" {
		app = DefaultAppName
	}
	q.Set("app name", app)
	dial := o.DialTimeout
	if dial == 0 {
		dial = DefaultDialTimeout
	}
	q.Set("dial timeout", strconv.Itoa(int((dial+time.Second-1)/time.Second)))
	if o.Encrypt != "" {
		q.Set("encrypt", o.Encrypt)
	}
	if o.TrustServerCertificate {
		q.Set("TrustServerCertificate", "true")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// databaseAndUser are the database and login named in o, for error messages.
func (o Options) databaseAndUser() (db, user string) {
	if o.DSN == "" {
		return o.Database, o.User
	}
	u, err := url.Parse(o.DSN)
	if err != nil {
		return "", ""
	}
	for k, v := range u.Query() {
		if strings.EqualFold(k, "database") && len(v) > 0 {
			db = v[0]
		}
		if strings.EqualFold(k, "user id") && len(v) > 0 {
			user = v[0]
		}
	}
	if u.User != nil {
		user = u.User.Username()
	}
	return db, user
}
