package mssql

import (
	"database/sql/driver"
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
	// DefaultLoginTimeout bounds the login on a connection SQL Server accepted (prelogin,
	// TLS handshake, authentication), when neither Options.LoginTimeout nor the DSN's
	// "connection timeout" says otherwise. A healthy server answers in well under a
	// second; what accepts connections and stays silent (a wrong port, a load balancer
	// with no healthy target) would otherwise hold the call for ever (docs/operations.md
	// "UnreachableError").
	DefaultLoginTimeout = 30 * time.Second
	DefaultAppName      = "mssqlcdc"
)

// Options open a DB. Either DSN or the connection fields are set, not both; the TLS,
// timeout and authentication settings apply to both (docs/reference/sqlserver-cdc.md §13.3).
type Options struct {
	// DSN is a complete go-mssqldb URL ("sqlserver://user:pass@host:1433?database=shop"),
	// e.g. MSSQL_TEST_DSN. When set, Host, Port, Instance, Database, User and Password are
	// empty; the database and user are read from it for messages. Its query settings count
	// like the fields below: a setting given in both with different values is refused.
	DSN string

	// Host and Port of the server (Port 0 means DefaultPort); Instance is a named instance
	// (then the port is found through the SQL Browser unless Port is set).
	Host     string
	Port     int
	Instance string
	Database string
	User     string
	Password string
	// Encrypt is go-mssqldb's encrypt setting. "" means "true": the whole session is
	// encrypted and the server's certificate verified against the system's roots (or
	// Certificate). "strict" is TDS 8.0 (TLS before the login, SQL Server 2022+, Azure).
	// "false" (the driver's default, which encrypts only the login and trusts any
	// certificate) and "disable" are refused unless Development is set.
	Encrypt string
	// TrustServerCertificate skips certificate validation; refused unless Development.
	TrustServerCertificate bool
	// Certificate is the path of a PEM or DER file of the CA (or certificate) to verify the
	// server against, e.g. the Amazon RDS CA bundle; "" uses the system's roots.
	Certificate string
	// HostNameInCertificate is the name the certificate must carry when it differs from
	// Host (a listener or an IP address).
	HostNameInCertificate string
	// Development marks a source that is no production server (a local container): only
	// then may Encrypt be "false" or "disable" and TrustServerCertificate be set.
	Development bool
	// AppName is the program name the server shows (sys.dm_exec_sessions); "" means
	// DefaultAppName.
	AppName string
	// DialTimeout bounds opening a TCP connection; 0 means DefaultDialTimeout. There is no
	// query timeout: it would also kill long, healthy snapshot reads
	// (docs/reference/sqlserver-cdc.md §8.2).
	DialTimeout time.Duration
	// LoginTimeout bounds the login on each new connection, from the moment the server
	// accepted the TCP connection to the end of the login; past it the call fails with a
	// transient *source.UnreachableError (UnreachableNoAnswer). 0 means the DSN's
	// "connection timeout" in seconds when it has one (0 there: no bound but the call's
	// context), else DefaultLoginTimeout. A cancelled context stops the login at once
	// whatever the bound (loginguard.go). config.Source.LoginTimeoutSeconds sets it.
	LoginTimeout time.Duration

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

	// Auth is how the login authenticates: AuthSQL ("" too), AuthNTLM or
	// AuthEntraServicePrincipal (docs/reference/sqlserver-cdc.md §13.8).
	Auth string
	// TenantID and ClientID identify the Entra ID application of
	// AuthEntraServicePrincipal; its client secret is the password.
	TenantID string
	ClientID string
	// EntraAuthority is the token authority; "" means DefaultEntraAuthority.
	EntraAuthority string

	// DSNField names, in the message of a server that cannot be reached
	// (*source.UnreachableError), the setting that holds its address: "source.dsn" when
	// the DSN comes from a table spec (config.Spec.MSSQL sets it); "" reads "the DSN".
	DSNField string

	// PasswordFunc, when set, gives the login password instead of Password or the DSN's:
	// read before the first login and again once after a refused login (a rotated secret),
	// after which the call is retried once and idle sessions are dropped.
	PasswordFunc PasswordFunc
	// newConnector builds a go-mssqldb connector from a URL (tests replace it).
	newConnector func(dsn string) (driver.Connector, error)
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
	} else {
		if o.Host == "" {
			bad("host", "empty")
		}
		if o.Database == "" {
			bad("database", "empty")
		}
	}
	if o.Port < 0 || o.Port > 65535 {
		bad("port", strconv.Itoa(o.Port)+": want from 0 up to 65,535")
	}
	if o.DialTimeout < 0 {
		bad("dialTimeout", "negative")
	}
	if o.LoginTimeout < 0 {
		bad("loginTimeout", "negative")
	}
	if o.BatchRows < 0 || o.BatchBytes < 0 {
		bad("batch size", "negative")
	}
	if _, _, err := parseZoneOption(o.SourceTimeZone); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.connURL(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.checkAuth(o.loginUser())...)
	return errors.Join(errs...)
}

// dsn is the URL Open hands go-mssqldb (connURL without its errors; Open validated).
func (o Options) dsn() string {
	s, _ := o.connURL()
	return s
}

// connURL builds the go-mssqldb URL with net/url: user and password escaped as userinfo,
// the named instance as the path, settings as query parameters, and applies the security
// rules of docs/reference/sqlserver-cdc.md §13.3 to the DSN's settings and the fields'
// alike. Problems are joined *source.InvalidArgumentError.
func (o Options) connURL() (string, error) {
	var u *url.URL
	if o.DSN != "" {
		p, err := url.Parse(o.DSN)
		if err != nil || p.Scheme != "sqlserver" {
			return "", &source.InvalidArgumentError{Arg: "DSN", Reason: "want a sqlserver:// URL"}
		}
		u = p
	} else {
		host := o.Host
		if port := o.Port; port != 0 || o.Instance == "" {
			if port == 0 {
				port = DefaultPort
			}
			host = net.JoinHostPort(o.Host, strconv.Itoa(port))
		}
		u = &url.URL{Scheme: "sqlserver", Host: host}
		if o.User != "" {
			u.User = url.UserPassword(o.User, o.Password)
		}
		if o.Instance != "" {
			u.Path = "/" + o.Instance
		}
	}
	q := settings{vals: u.Query()}
	if o.DSN == "" {
		q.set("database", o.Database)
	}
	q.set("encrypt", o.Encrypt)
	if o.TrustServerCertificate {
		q.set("TrustServerCertificate", "true")
	}
	q.set("certificate", o.Certificate)
	q.set("hostNameInCertificate", o.HostNameInCertificate)
	if o.DialTimeout != 0 {
		q.set("dial timeout", strconv.Itoa(int((o.DialTimeout+time.Second-1)/time.Second)))
	}
	q.set("app name", o.AppName)
	q.setDefault("app name", DefaultAppName)
	q.setDefault("dial timeout", strconv.Itoa(int(DefaultDialTimeout/time.Second)))
	q.setDefault("encrypt", "true")
	if v, ok := q.get("connection timeout"); ok {
		if _, err := strconv.ParseUint(v, 10, 32); err != nil { // as loginTimeout reads it
			q.errs = append(q.errs, &source.InvalidArgumentError{Arg: "connection timeout", Reason: fmt.Sprintf("%q: want whole seconds, 0 or more", v)})
		}
	}
	q.checkSecurity(o.Development)
	u.RawQuery = q.vals.Encode()
	return u.String(), errors.Join(q.errs...)
}

// settings are a connection URL's query parameters, whose names go-mssqldb matches
// ignoring case (msdsn lower-cases them).
type settings struct {
	vals url.Values
	errs []error
}

func (s *settings) key(name string) (string, bool) {
	for k := range s.vals {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

func (s *settings) get(name string) (string, bool) {
	if k, ok := s.key(name); ok {
		return s.vals.Get(k), true
	}
	return "", false
}

// set adds name=v ("" sets nothing); the DSN holding name with another value is an error.
func (s *settings) set(name, v string) {
	if v == "" {
		return
	}
	if old, ok := s.get(name); ok {
		if !strings.EqualFold(old, v) {
			s.errs = append(s.errs, &source.InvalidArgumentError{Arg: name, Reason: fmt.Sprintf("the DSN says %q and the options %q: give it once", old, v)})
		}
		return
	}
	s.vals.Set(name, v)
}

func (s *settings) setDefault(name, v string) {
	if _, ok := s.get(name); !ok {
		s.vals.Set(name, v)
	}
}

// checkSecurity applies the TLS rules: encrypt must verify the server unless the source is
// a development one, and GUID conversion must stay off.
func (s *settings) checkSecurity(development bool) {
	bad := func(arg, why string) { s.errs = append(s.errs, &source.InvalidArgumentError{Arg: arg, Reason: why}) }
	enc, _ := s.get("encrypt")
	switch strings.ToLower(enc) {
	case "mandatory", "yes", "1", "t", "true", "strict":
	case "optional", "no", "0", "f", "false", "disable":
		if !development {
			bad("encrypt", fmt.Sprintf("%q leaves the session (and with false the certificate) unprotected: use true or strict, or mark the source as a development one", enc))
		}
	default:
		bad("encrypt", fmt.Sprintf("%q: want true, strict, false or disable", enc))
	}
	if v, ok := s.get("TrustServerCertificate"); ok {
		trust, err := parseBool(v)
		switch {
		case err != nil:
			bad("TrustServerCertificate", fmt.Sprintf("%q is not a boolean", v))
		case trust && !development:
			bad("TrustServerCertificate", "true accepts any certificate (a man in the middle reads the password and the data): give the CA with certificate, or mark the source as a development one")
		}
	}
	if v, ok := s.get("guid conversion"); ok {
		if g, err := parseBool(v); err != nil || g {
			bad("guid conversion", fmt.Sprintf("%q: mssqlcdc converts uniqueidentifier bytes itself; the driver's conversion would swap them twice", v))
		}
	}
}

// parseBool reads a boolean as go-mssqldb does (strconv.ParseBool plus yes/no).
func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return strconv.ParseBool(v)
}

// loginUser is the user name o logs in as (the field, or the DSN's).
func (o Options) loginUser() string {
	_, u := o.databaseAndUser()
	return u
}

// loginTimeout is the bound on a login (Options.LoginTimeout); 0 means none but the
// context.
func (o Options) loginTimeout() time.Duration {
	if o.LoginTimeout != 0 {
		return o.LoginTimeout
	}
	if d, ok := o.dsnConnTimeout(); ok {
		return d
	}
	return DefaultLoginTimeout
}

// dsnConnTimeout is the DSN's "connection timeout" (go-mssqldb's deadline on each read and
// write of a session, the login's included), and whether the DSN sets one readably.
func (o Options) dsnConnTimeout() (time.Duration, bool) {
	if u, err := url.Parse(o.dsn()); err == nil {
		q := settings{vals: u.Query()}
		if v, ok := q.get("connection timeout"); ok {
			if n, err := strconv.ParseUint(v, 10, 32); err == nil {
				return time.Duration(n) * time.Second, true
			}
		}
	}
	return 0, false
}

// server is the address the DSN (or the fields) name, for messages: "host:port", or
// "host/instance" for a named instance found through the SQL Browser; never the userinfo.
func (o Options) server() string {
	u, err := url.Parse(o.dsn())
	if err != nil {
		return ""
	}
	return u.Host + strings.TrimSuffix(u.Path, "/")
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
