package config

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
)

// MSSQL is the core/source/mssql options of the spec's source: the DSN with password set
// as its user password (ConnString), the TLS and timeout fields, and sourceTimeZone. The
// wiring opens the source with mssql.Open(spec.MSSQL(password)).
func (s *Spec) MSSQL(password string) (mssql.Options, error) {
	dsn, err := s.Source.ConnString(password)
	if err != nil {
		return mssql.Options{}, err
	}
	o := s.Source.mssqlOptions(dsn)
	o.SourceTimeZone = s.Options.SourceTimeZone
	return o, nil
}

func (src Source) mssqlOptions(dsn string) mssql.Options {
	return mssql.Options{DSN: dsn, Encrypt: src.Encrypt, TrustServerCertificate: src.TrustServerCertificate,
		Certificate: src.Certificate, HostNameInCertificate: src.HostNameInCertificate, Development: src.Development,
		DialTimeout: time.Duration(src.DialTimeoutSeconds) * time.Second, LoginTimeout: time.Duration(src.LoginTimeoutSeconds) * time.Second,
		Auth: src.Auth, TenantID: src.TenantID, ClientID: src.ClientID, DSNField: "source.dsn"}
}

// connectionProblems reports what core/source/mssql refuses in the connection settings
// (TLS off or unverified outside development, GUID conversion, a setting given in the DSN
// and a field with different values), under the field that holds it. The rules themselves
// live in mssql.Options.Validate.
func (src Source) connectionProblems(ps *problems) {
	if src.DSN == "" {
		return
	}
	if u, err := url.Parse(src.DSN); err != nil || u.Scheme != "sqlserver" {
		return // reported as source.dsn already
	}
	err := src.mssqlOptions(src.DSN).Validate()
	fields := map[string]string{"encrypt": "source.encrypt", "trustservercertificate": "source.trust_server_certificate",
		"certificate": "source.certificate", "hostnameincertificate": "source.host_name_in_certificate", "dialtimeout": "source.dial_timeout_seconds",
		"logintimeout": "source.login_timeout_seconds", "auth": "source.auth", "tenantid": "source.tenant_id", "clientid": "source.client_id"}
	for _, e := range flatten(err) {
		var ia *source.InvalidArgumentError
		if !errors.As(e, &ia) {
			continue
		}
		field := "source.dsn"
		if f, ok := fields[strings.ReplaceAll(strings.ToLower(ia.Arg), " ", "")]; ok && src.setsField(f) {
			field = f
		}
		if field != "source.dsn" && slices.ContainsFunc(*ps, func(p Problem) bool { return p.Field == field }) {
			continue // the spec's own bound said it already (a negative timeout), in the spec's words
		}
		ps.add(field, "%s: %s", ia.Arg, ia.Reason)
	}
}

// setsField reports whether the spec itself sets the field (else the DSN does).
func (src Source) setsField(f string) bool {
	switch f {
	case "source.encrypt":
		return src.Encrypt != ""
	case "source.trust_server_certificate":
		return src.TrustServerCertificate
	case "source.certificate":
		return src.Certificate != ""
	case "source.host_name_in_certificate":
		return src.HostNameInCertificate != ""
	case "source.dial_timeout_seconds":
		return src.DialTimeoutSeconds != 0
	case "source.login_timeout_seconds":
		return src.LoginTimeoutSeconds != 0
	case "source.auth", "source.tenant_id", "source.client_id":
		return true
	}
	return false
}

// flatten unjoins errors.Join trees.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// CommandID reports whether change reads read and order by __$command_id
// (includeCommandId, default true).
func (o Options) CommandID() bool { return o.IncludeCommandID == nil || *o.IncludeCommandID }
