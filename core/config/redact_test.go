package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// leaks reports the first piece of secret (4 characters or more) that msg repeats.
func leaks(msg, secret string) (string, bool) {
	for n := len(secret); n >= 4; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(msg, secret[i:i+n]) {
				return secret[i : i+n], true
			}
		}
	}
	return "", false
}

// DSNs that do not parse as URLs, each with the password "Pa55#w%zz rd" (or a piece of it)
// where net/url would quote it back: an unescaped '#', an invalid escape, a space, a
// control character.
var badDSNs = []string{
	"sqlserver://sa:Pa55#w%zz rd@db.example.com:1433?database=shop",
	"sqlserver://sa:Pa55w%zzrd@db.example.com?database=shop",
	"sqlserver://sa:Pa55 wzz rd@db host?database=shop",
	"sqlserver://sa:Pa55\x7fwzzrd@db.example.com?database=shop",
	"sqlserver://db.example.com:Pa55wzzrd?database=shop",
}

const badDSNPassword = "Pa55#w%zz rd"

// No problem Parse reports about a DSN repeats its password, or any 4 characters of it,
// however the DSN is broken (issue 12: the error reached the logs and Step Functions).
func TestParseNeverEchoesTheDSNPassword(t *testing.T) {
	for _, dsn := range badDSNs {
		q, _ := json.Marshal(dsn)
		doc := fmt.Sprintf(`{"app_id":"a","source":{"dsn":%s,"captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`, q)
		_, err := Parse([]byte(doc))
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has("source.dsn") {
			t.Errorf("%q: err = %v, want a problem on source.dsn", dsn, err)
			continue
		}
		for _, secret := range []string{badDSNPassword, "Pa55wzzrd", "Pa55 wzz rd"} {
			if piece, ok := leaks(err.Error(), secret); ok {
				t.Errorf("%q: error repeats %q: %v", dsn, piece, err)
			}
		}
		if !strings.Contains(err.Error(), "percent-encode") {
			t.Errorf("%q: %v does not say what to do", dsn, err)
		}
	}
	// A DSN of the wrong JSON type is not echoed either.
	_, err := Parse([]byte(`{"app_id":"a","source":{"dsn":123456789,"captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`))
	if err == nil || strings.Contains(err.Error(), "123456789") {
		t.Errorf("numeric dsn: %v", err)
	}
}

// ConnString, given a DSN that is not a URL, says so without repeating it; the password
// it would have set is not in the message either.
func TestConnStringNeverEchoesTheDSN(t *testing.T) {
	for _, dsn := range badDSNs {
		_, err := Source{DSN: dsn}.ConnString("An0ther-secret")
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has("source.dsn") {
			t.Fatalf("%q: err = %v, want a *ConfigError on source.dsn", dsn, err)
		}
		for _, secret := range []string{badDSNPassword, "Pa55wzzrd", "An0ther-secret"} {
			if piece, ok := leaks(err.Error(), secret); ok {
				t.Errorf("%q: error repeats %q: %v", dsn, piece, err)
			}
		}
	}
}

// Redact removes each secret as given and as a URL escapes it, keeps the error chain, and
// leaves an error without secrets untouched.
func TestRedact(t *testing.T) {
	pw := "p@ss:/w rd"
	base := &ConfigError{Problems: []Problem{{Field: "x", Reason: "y"}}}
	for _, msg := range []string{
		"login failed for p@ss:/w rd",
		"dial sqlserver://u:p%40ss%3A%2Fw%20rd@h: refused",
		"dial sqlserver://u:p@ss:%2Fw%20rd@h: refused",
		"query p%40ss%3A%2Fw+rd",
	} {
		err := Redact(fmt.Errorf("%s: %w", msg, base), pw)
		if strings.Contains(err.Error(), "ss:") || strings.Contains(err.Error(), "w rd") || !strings.Contains(err.Error(), Redacted) {
			t.Errorf("%q -> %q", msg, err)
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: the chain lost *ConfigError", msg)
		}
	}
	// The password written in a DSN passed as a secret is removed too.
	err := Redact(errors.New("bad: Inl1ne-pw"), "sqlserver://u:Inl1ne-pw@h?database=d")
	if strings.Contains(err.Error(), "Inl1ne") {
		t.Errorf("inline password kept: %v", err)
	}
	plain := errors.New("nothing secret")
	if Redact(plain, pw) != plain || Redact(nil, pw) != nil {
		t.Error("Redact changed an error without secrets")
	}
	if got := RedactDSN("sqlserver://sa:Inl1ne-pw@h:1433?database=d"); strings.Contains(got, "Inl1ne") || !strings.Contains(got, "sa:") {
		t.Errorf("RedactDSN = %q", got)
	}
	if got := RedactDSN(badDSNs[0]); strings.Contains(got, "Pa55") {
		t.Errorf("RedactDSN of a bad DSN = %q", got)
	}
}

// The password from the environment or Secrets Manager never appears in Password's
// errors (an empty variable is named, its value is not read back).
func TestPasswordErrorsNameNoSecret(t *testing.T) {
	sm := secrets{"arn:bad": `{"user":"u","pass":"Js0n-secret"}`}
	_, err := (Source{PasswordSecretARN: "arn:bad"}).Password(context.Background(), nil, sm)
	if err == nil || strings.Contains(err.Error(), "Js0n") {
		t.Errorf("err = %v", err)
	}
}

// A password pasted into password_secret_arn or password_env by mistake is refused without
// being repeated, and the problem says what the field wants (docs/spec.md: no problem
// repeats a password).
func TestParseNeverEchoesAPasswordInAPasswordField(t *testing.T) {
	const pw = "Pa55w0rd! x"
	for _, field := range []string{"password_secret_arn", "password_env"} {
		q, _ := json.Marshal(pw)
		doc := fmt.Sprintf(`{"app_id":"a","source":{"dsn":"sqlserver://u@h?database=d","%s":%s,"captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`, field, q)
		_, err := Parse([]byte(doc))
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has("source."+field) {
			t.Errorf("%s: err = %v, want a problem on source.%s", field, err, field)
			continue
		}
		if piece, ok := leaks(err.Error(), pw); ok {
			t.Errorf("%s: error repeats %q: %v", field, piece, err)
		}
	}
	for _, doc := range []string{
		`{"app_id":"a","source":{"dsn":"sqlserver://u@h","password_env":"MSSQL_PASSWORD","captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`,
		`{"app_id":"a","source":{"dsn":"sqlserver://u@h","password_secret_arn":"arn:aws:secretsmanager:eu-west-1:123456789012:secret:r","captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`,
	} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// A DSN carrying its password as a query parameter (password=, or ADO's pwd=) is refused
// beside password_env or password_secret_arn, as one in user:password@ is (and as the
// Terraform module refuses it): with ConnString's password both would be given, which
// go-mssqldb refuses only when it connects. The password is not repeated.
func TestDSNPasswordParameterWithPasswordSource(t *testing.T) {
	for _, dsn := range []string{
		"sqlserver://u@h?database=d&password=Qu3ry-pw",
		"sqlserver://u@h?PWD=Qu3ry-pw&database=d",
	} {
		q, _ := json.Marshal(dsn)
		doc := fmt.Sprintf(`{"app_id":"a","source":{"dsn":%s,"password_env":"MSSQL_PASSWORD","captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`, q)
		_, err := Parse([]byte(doc))
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has("source.dsn") {
			t.Errorf("%s: err = %v, want a problem on source.dsn", dsn, err)
			continue
		}
		if piece, ok := leaks(err.Error(), "Qu3ry-pw"); ok {
			t.Errorf("%s: error repeats %q: %v", dsn, piece, err)
		}
	}
	// Without a password source the DSN's own password is the one used: accepted.
	if _, err := Parse([]byte(`{"app_id":"a","source":{"dsn":"sqlserver://u@h?password=x","captureInstance":"dbo_t"},"bronze":"/b","checkpoint":"/c","facts_table":"/f"}`)); err != nil {
		t.Errorf("password= without a password source: %v", err)
	}
}
