package mssql

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func TestDSNEscapes(t *testing.T) {
	o := Options{Host: "db.example", Database: "shop db", User: "reader", Password: "p@ss:w/rd?&#%", Encrypt: "true", TrustServerCertificate: true, Development: true, DialTimeout: 1500 * time.Millisecond}
	u, err := url.Parse(o.dsn())
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if u.Scheme != "sqlserver" || u.Host != "db.example:1433" || u.User.Username() != "reader" || pw != o.Password {
		t.Errorf("dsn %s", o.dsn())
	}
	q := u.Query()
	if q.Get("database") != "shop db" || q.Get("encrypt") != "true" || q.Get("TrustServerCertificate") != "true" ||
		q.Get("dial timeout") != "2" || q.Get("app name") != "mssqlcdc" {
		t.Errorf("query %v", q)
	}
	inst := Options{Host: "h", Instance: "SQLEXPRESS", Database: "d"}
	if u, _ := url.Parse(inst.dsn()); u.Host != "h" || u.Path != "/SQLEXPRESS" {
		t.Errorf("named instance dsn %s", inst.dsn())
	}
}

func TestValidate(t *testing.T) {
	err := Options{Port: 70000, Encrypt: "maybe", SourceTimeZone: "x;y", BatchRows: -1}.Validate()
	var ia *source.InvalidArgumentError
	if !errors.As(err, &ia) {
		t.Fatalf("got %v", err)
	}
	// Every problem is reported at once.
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 6 {
		t.Errorf("%d problems reported, want 6 (host, database, port, encrypt, batch, zone): %v", n, err)
	}
	if err := (Options{DSN: "sqlserver://u:p@h?database=d", Host: "h"}).Validate(); err == nil {
		t.Error("DSN and host together")
	}
	if err := (Options{DSN: "postgres://h"}).Validate(); err == nil {
		t.Error("not a sqlserver DSN")
	}
	if err := (Options{Host: "h", Database: "d", SourceTimeZone: "UTC"}).Validate(); err != nil {
		t.Error(err)
	}
	db, user := Options{DSN: "sqlserver://reader:x@h:1433?database=shop"}.databaseAndUser()
	if db != "shop" || user != "reader" {
		t.Errorf("databaseAndUser = %q, %q", db, user)
	}
}

// Open does no I/O; calls after Close fail with source.ErrClosed; bad arguments fail
// before any connection is made.
func TestOpenCloseAndArgumentsWithoutServer(t *testing.T) {
	d, err := Open(Options{Host: "127.0.0.1", Port: 1, Database: "none", SourceTimeZone: "UTC", Retry: Retry{Retries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.MinLSN(ctx, "a]b"); !isInvalid(err) {
		t.Errorf("MinLSN bad name: %v", err)
	}
	if _, _, err := d.NthCommitAfter(ctx, lsn.Zero, 0); !isInvalid(err) {
		t.Errorf("NthCommitAfter n=0: %v", err)
	}
	if _, err := d.SplitChanges(ctx, "ci", lsn.Zero, lsn.Zero, 0); !isInvalid(err) {
		t.Errorf("SplitChanges n=0: %v", err)
	}
	if _, _, err := d.LSNAtOrBefore(ctx, time.Time{}); !isInvalid(err) {
		t.Errorf("LSNAtOrBefore zero time: %v", err)
	}
	if _, err := d.KeyBuckets(ctx, tbl, colI, 0, nil, nil); !isInvalid(err) {
		t.Errorf("KeyBuckets width 0: %v", err)
	}
	if _, err := d.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "t", Isolation: "read_uncommitted"}, Columns: []source.Column{colI}}); !isInvalid(err) {
		t.Errorf("ReadTable read uncommitted: %v", err)
	}
	// From > To reads nothing without asking the server.
	rows, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnB, To: lsnA, Columns: []source.Column{colI}})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := rows.Next(ctx); rec != nil || err == nil {
		t.Errorf("empty read gave %v, %v", rec, err)
	}
	if rows.Schema().NumFields() != 6 {
		t.Errorf("change schema has %d fields, want 5 metadata + 1", rows.Schema().NumFields())
	}
	rows.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MaxLSN(ctx); !errors.Is(err, source.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := Open(Options{}); !isInvalid(err) {
		t.Errorf("Open without host: %v", err)
	}
}

// A plain DSN or host connects with the whole session encrypted and the certificate
// verified, as go-mssqldb reads the URL we build; without an encrypt setting the driver
// would encrypt only the login and trust any certificate.
func TestTLSByDefault(t *testing.T) {
	for _, o := range []Options{
		{DSN: "sqlserver://reader@db.example:1433?database=shop"},
		{Host: "db.example", Database: "shop", User: "reader", Password: "x"},
	} {
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		cfg, err := msdsn.Parse(o.dsn())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Encryption != msdsn.EncryptionRequired || cfg.TrustServerCertificate || cfg.TLSConfig == nil || cfg.TLSConfig.InsecureSkipVerify {
			t.Errorf("%s: encryption %v, trust %v: want the session encrypted and the certificate verified", o.dsn(), cfg.Encryption, cfg.TrustServerCertificate)
		}
	}
	strict := Options{DSN: "sqlserver://reader@db.example?database=shop", Encrypt: "strict", Certificate: "/opt/rds-ca.pem", HostNameInCertificate: "db.internal"}
	if err := strict.Validate(); err != nil {
		t.Fatal(err)
	}
	q, _ := url.Parse(strict.dsn())
	if q.Query().Get("encrypt") != "strict" || q.Query().Get("certificate") != "/opt/rds-ca.pem" || q.Query().Get("hostNameInCertificate") != "db.internal" {
		t.Errorf("strict dsn %s", strict.dsn())
	}
}

// Settings that turn protection off need a development source; GUID conversion is never
// allowed; a setting given twice with different values is refused.
func TestInsecureSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		o   Options
		arg string
	}{
		{Options{DSN: "sqlserver://u@h?database=d&TrustServerCertificate=true"}, "TrustServerCertificate"},
		{Options{DSN: "sqlserver://u@h?database=d&trustservercertificate=yes"}, "TrustServerCertificate"},
		{Options{Host: "h", Database: "d", TrustServerCertificate: true}, "TrustServerCertificate"},
		{Options{DSN: "sqlserver://u@h?database=d&encrypt=false"}, "encrypt"},
		{Options{DSN: "sqlserver://u@h?database=d&Encrypt=disable"}, "encrypt"},
		{Options{Host: "h", Database: "d", Encrypt: "optional"}, "encrypt"},
		{Options{DSN: "sqlserver://u@h?database=d&guid+conversion=true"}, "guid conversion"},
		{Options{DSN: "sqlserver://u@h?database=d&guid+conversion=true", Development: true}, "guid conversion"},
		{Options{DSN: "sqlserver://u@h?database=d&encrypt=true", Encrypt: "strict"}, "encrypt"},
	} {
		err := c.o.Validate()
		var ia *source.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Arg != c.arg {
			t.Errorf("%+v: %v, want an invalid %s", c.o, err, c.arg)
		}
		if _, err := Open(c.o); err == nil {
			t.Errorf("%+v: Open accepted it", c.o)
		}
	}
	dev := Options{DSN: "sqlserver://sa:x@127.0.0.1?database=d&encrypt=true&TrustServerCertificate=true", Development: true}
	if err := dev.Validate(); err != nil {
		t.Errorf("development source: %v", err)
	}
	if err := (Options{DSN: "sqlserver://u@h?database=d&guid+conversion=false"}).Validate(); err != nil {
		t.Errorf("guid conversion=false: %v", err)
	}
	if err := (Options{DSN: "sqlserver://u@h?database=d&encrypt=false", Development: true}).Validate(); err != nil {
		t.Errorf("development, encrypt=false: %v", err)
	}
}

// Ranges in the options' and the column types' messages read plainly (they said
// "70000 is outside 0..65535", "fractional-second precision 8 is outside 0..7").
func TestRangesReadPlainly(t *testing.T) {
	err := Options{Host: "h", Database: "d", Port: 70000}.Validate()
	if want := "port: 70000: want from 0 up to 65,535"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("port 70000: %v, want it to contain %q", err, want)
	}
	_, err = castType(source.Column{Name: "c", DataType: "datetime2", DatetimePrecision: 8})
	if want := "fractional-second precision 8: want from 0 up to 7"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("datetime2(8): %v, want it to contain %q", err, want)
	}
}
