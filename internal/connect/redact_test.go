package connect

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
)

// Opening SQL Server never puts a password in an error, whether it comes from the
// environment or is written in the DSN, and whatever step fails: a DSN that does not
// parse (the spec was built without Parse), one the driver refuses, an unset variable.
func TestSQLServerErrorsCarryNoPassword(t *testing.T) {
	const envPw = "Env-S3cret/pw"
	for _, tc := range []struct {
		name    string
		src     config.Source
		secrets []string
	}{
		{"unparsable DSN, password from the environment", config.Source{DSN: "sqlserver://sa@db host:1433?database=d", PasswordEnv: "PW"}, []string{envPw}},
		{"unparsable DSN with its own password", config.Source{DSN: "sqlserver://sa:Inl1ne#pw@db:1433?database=d"}, []string{"Inl1ne"}},
		{"unparsable DSN with its own password and one from the environment", config.Source{DSN: "sqlserver://sa:Inl1ne#pw@db:1433?database=d", PasswordEnv: "PW"}, []string{"Inl1ne", envPw}},
		{"not a sqlserver URL, password from the environment", config.Source{DSN: "mysql://sa@db:1433?database=d", PasswordEnv: "PW"}, []string{envPw}},
		{"not a sqlserver URL with its own password", config.Source{DSN: "mysql://sa:Inl1ne-pw@db?database=d"}, []string{"Inl1ne"}},
		{"driver refuses a setting", config.Source{DSN: "sqlserver://sa@db?database=d&encrypt=sometimes", PasswordEnv: "PW"}, []string{envPw}},
		{"unset variable", config.Source{DSN: "sqlserver://sa@db?database=d", PasswordEnv: "UNSET"}, []string{envPw}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &config.Spec{Source: tc.src, Options: config.Options{SourceTimeZone: "UTC"}}
			db, err := SQLServer(context.Background(), spec, env(map[string]string{"PW": envPw}), nil)
			if err == nil {
				db.Close()
				t.Fatal("opened; want an error")
			}
			// What a handler returns to Step Functions and logs is lambdaerr.Named(err): the
			// declared error inside err, whose own message Redact did not touch.
			named := lambdaerr.Named(err)
			for _, s := range tc.secrets {
				for _, msg := range []string{err.Error(), named.Error()} {
					if strings.Contains(msg, s) || strings.Contains(msg, strings.ReplaceAll(s, "/", "%2F")) {
						t.Errorf("error carries %q: %v", s, msg)
					}
				}
			}
		})
	}
}
