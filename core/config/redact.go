package config

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a secret in an error message.
const Redacted = "xxxxx"

// RedactDSN is dsn for messages: its password replaced by Redacted (url.URL.Redacted). A
// DSN that does not parse as a URL is not shown at all, since no rule can tell its
// password apart: "(a DSN that is not a URL; not shown)".
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a DSN that is not a URL; not shown)"
	}
	return u.Redacted()
}

// dsnPassword is the password written in dsn's userinfo, "" when it has none or does not
// parse.
func dsnPassword(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// quoted matches the quoted fragments net/url puts in its errors (`invalid port ":pw"
// after host`, `invalid URL escape "%zz"`): parts of the URL, so possibly of a password.
var quoted = regexp.MustCompile(`"[^"]*"`)

// dsnParseReason says why dsn is not a URL without repeating any of it: the url.Error's
// reason with its quoted fragments removed, and the usual cause.
func dsnParseReason(err error) string {
	var ue *url.Error
	reason := "not a URL"
	if errors.As(err, &ue) {
		reason = strings.Join(strings.Fields(quoted.ReplaceAllString(ue.Err.Error(), "")), " ")
		reason = "not a URL (" + strings.TrimPrefix(reason, "net/url: ") + ")"
	}
	return reason + ": percent-encode '#', '%', '/', '?', '@' and spaces in the user name and password; the DSN is not shown, as it may hold a password"
}

// Redact returns err with every secret in its message replaced by Redacted: each secret
// as given and as net/url escapes it in a URL's userinfo, query or path, and the
// password written in each secret that is a DSN. errors.Is and errors.As still see err's
// chain (typed errors keep their names); their own messages must carry no secret, which
// Redact cannot check. nil stays nil; an err that names no secret is returned as is.
//
// The composition root (the code that resolves the password and opens SQL Server) wraps
// its errors with it, so no log line, Step Functions payload or CLI message carries a
// password (docs/spec.md § source).
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	var forms []string
	for _, s := range secrets {
		if pw := dsnPassword(s); pw != "" {
			secrets = append(secrets, pw)
		}
	}
	for _, s := range secrets {
		if len(s) < 3 {
			// A one- or two-character "secret" would blank out half the message and
			// protects nothing.
			continue
		}
		forms = append(forms, s, url.QueryEscape(s), url.PathEscape(s), url.UserPassword("", s).String()[1:])
	}
	msg := err.Error()
	red := msg
	for _, f := range forms {
		red = strings.ReplaceAll(red, f, Redacted)
	}
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactedError is an error whose message had secrets removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
