package config

import (
	"context"
	"errors"
	"math"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
)

func minimal() string {
	return `{"app_id":"a","source":{"dsn":"sqlserver://u@h?database=d","captureInstance":"dbo_t"},
	"bronze":"/lake/b","checkpoint":"/lake/cp","facts_table":"/lake/f"}`
}

func TestParseFull(t *testing.T) {
	data, err := os.ReadFile("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Options.NumPartitions != 8 || *s.Options.MaxCommitsPerBatch != 5000 || s.FailsOnDataLoss() {
		t.Errorf("options = %+v", s.Options)
	}
	if s.EffectiveIsolation() != IsolationSnapshot || s.Snapshot != SnapshotFull || s.MaxSeconds != 600 {
		t.Errorf("spec = %+v", s)
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := Parse([]byte(minimal()))
	if err != nil {
		t.Fatal(err)
	}
	if s.Options.NumPartitions != DefaultNumPartitions || s.Options.MaxCommitsPerBatch != nil ||
		s.Options.StartingLsn != StartEarliest || !s.FailsOnDataLoss() || s.Options.SourceTimeZone != "auto" ||
		s.Snapshot != SnapshotFull || s.ChunkRows != nil || s.TargetWaveSeconds != nil {
		t.Errorf("defaults not applied: %+v", s)
	}
	if k, _ := s.Starting(); k != StartEarliest {
		t.Errorf("Starting = %s", k)
	}
}

func TestOptionNamesCaseInsensitive(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"options":{"NUMPARTITIONS":3,"startinglsn":"0x2a"},"bronze"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	k, l := s.Starting()
	if s.Options.NumPartitions != 3 || k != "lsn" || l.String() != "0x0000000000000000002A" {
		t.Errorf("got %d %s %s", s.Options.NumPartitions, k, l)
	}
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	doc := `{"app_id":"a#b","source":{"dsn":"http://h","captureInstance":"x]y","password_env":"P","password_secret_arn":"nope"},
	"options":{"numPartitions":-1,"maxCommitsPerBatch":0,"startingLsn":"soon","isolationLevel":"readUncommitted","lockTimeoutMs":-5,"snapshotLsn":"zz"},
	"bronze":"gs://x","checkpoint":"","snapshot":"partial","chunk_rows":-1,"bootstrap":true,"storage":{"s3_endpoint":"localhost"}}`
	_, err := Parse([]byte(doc))
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *ConfigError", err)
	}
	for _, f := range []string{"app_id", "source.dsn", "source.captureInstance", "source.password_secret_arn",
		"options.numPartitions", "options.maxCommitsPerBatch", "options.startingLsn", "options.isolationLevel",
		"options.lockTimeoutMs", "options.snapshotLsn", "bronze", "checkpoint", "facts_table", "snapshot",
		"chunk_rows", "storage.s3_endpoint"} {
		if !ce.Has(f) {
			t.Errorf("no problem for %s in %v", f, ce)
		}
	}
}

func TestBootstrapWithStartingLsn(t *testing.T) {
	doc := strings.Replace(minimal(), `"bronze"`, `"bootstrap":true,"options":{"startingLsn":"latest"},"bronze"`, 1)
	_, err := Parse([]byte(doc))
	var ce *ConfigError
	if !errors.As(err, &ce) || !ce.Has("options.startingLsn") {
		t.Fatalf("err = %v, want options.startingLsn problem", err)
	}
	// bootstrap alone is fine and leaves startingLsn unset.
	s, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"bootstrap":true,"bronze"`, 1)))
	if err != nil || s.Options.StartingLsn != "" {
		t.Fatalf("bootstrap alone: %v %q", err, s.Options.StartingLsn)
	}
}

func TestParseUnknownAndMalformed(t *testing.T) {
	for _, tc := range []struct{ doc, field string }{
		{strings.Replace(minimal(), `"bronze"`, `"bronz":"x","bronze"`, 1), "bronz"},
		{strings.Replace(minimal(), `"bronze":"/lake/b"`, `"bronze":5`, 1), "bronze"},
		{`{"app_id":`, "(document)"},
		{minimal() + "{}", "(document)"},
	} {
		_, err := Parse([]byte(tc.doc))
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has(tc.field) {
			t.Errorf("%s: err = %v, want problem on %s", tc.doc, err, tc.field)
		}
	}
}

type secrets map[string]string

func (m secrets) SecretString(_ context.Context, arn string) (string, error) {
	v, ok := m[arn]
	if !ok {
		return "", errors.New("ResourceNotFoundException")
	}
	return v, nil
}

func TestPassword(t *testing.T) {
	ctx := context.Background()
	env := func(k string) string { return map[string]string{"PW": "p@ss:/word"}[k] }
	src := Source{DSN: "sqlserver://reader@h:1433?database=d", PasswordEnv: "PW"}
	pw, err := src.Password(ctx, env, nil)
	if err != nil || pw != "p@ss:/word" {
		t.Fatalf("env: %q %v", pw, err)
	}
	cs, err := src.ConnString(pw)
	if err != nil || cs != "sqlserver://reader:p%40ss%3A%2Fword@h:1433?database=d" {
		t.Errorf("ConnString = %q %v", cs, err)
	}
	// Unset: what to do, not only what is wrong (a new user runs the CLI before exporting
	// it); and not "invalid table spec": the spec is fine, the environment is not, so it is
	// an error of its own (Step Functions sees PasswordUnsetError, not ConfigError).
	want := "password not set: source.password_env names the environment variable MISSING, which is empty or unset: " +
		"export it with the SQL login's password (MISSING=...) where mssqlcdc runs, or on AWS set it through the module's " +
		"extra_environment or use source.password_secret_arn"
	_, err = (Source{PasswordEnv: "MISSING"}).Password(ctx, env, nil)
	var ce *ConfigError
	if err == nil || err.Error() != want || errors.As(err, &ce) || reflect.TypeOf(err).String() != "*config.PasswordUnsetError" {
		t.Errorf("unset env: %T %v\nwant *config.PasswordUnsetError %s", err, err, want)
	}
	sm := secrets{"arn:plain": "s3cret", "arn:json": `{"username":"u","password":"js"}`, "arn:bad": `{"user":"u"}`, "arn:upper": `{"Password":"up"}`}
	for arn, want := range map[string]string{"arn:plain": "s3cret", "arn:json": "js", "arn:upper": "up"} {
		pw, err := (Source{PasswordSecretARN: arn}).Password(ctx, env, sm)
		if err != nil || pw != want {
			t.Errorf("%s: %q %v", arn, pw, err)
		}
	}
	// A secret of the wrong shape is no "invalid table spec" either: the spec is fine, the
	// secret is not. Its own error names the secret's ARN and the shape wanted, and never
	// repeats the secret's contents (here "hunter2" and "u").
	shapes := secrets{
		"arn:nokey":  `{"user":"u","pass":"hunter2"}`,
		"arn:number": `{"username":"u","password":20240101}`,
		"arn:empty":  `{"username":"u","password":""}`,
		"arn:broken": `{"username":"u","password":"hunter2"`,
	}
	for arn, why := range map[string]string{
		"arn:nokey":  `has no "password" key`,
		"arn:number": `has a "password" that is not a string`,
		"arn:empty":  `has an empty "password"`,
		"arn:broken": `begins with '{' but is not valid JSON`,
	} {
		_, err := (Source{PasswordSecretARN: arn}).Password(ctx, env, shapes)
		want := "password secret " + arn + " " + why + ": want the password as plain text, or JSON with a non-empty " +
			`"password" string (as RDS writes it: {"username":"...","password":"..."})`
		var pse *PasswordSecretError
		if err == nil || err.Error() != want || errors.As(err, &ce) || !errors.As(err, &pse) || pse.ARN != arn {
			t.Errorf("%s: %T %v\nwant *config.PasswordSecretError %s", arn, err, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), `"u"`)) {
			t.Errorf("%s: the error repeats the secret: %v", arn, err)
		}
	}
	if _, err := (Source{PasswordSecretARN: "arn:x"}).Password(ctx, env, nil); !errors.Is(err, ErrNoSecretGetter) {
		t.Errorf("no getter: %v", err)
	}
}

// The DynamoDB log store's region and tablePath scheme pass through from the spec, are
// validated, and need storage.dynamo_table to mean anything.
func TestStorageDynamoRegionAndScheme(t *testing.T) {
	doc := strings.Replace(minimal(), `"bronze":"/lake/b"`, `"bronze":"s3a://lake/b","storage":{"region":"eu-west-1","dynamo_table":"delta_log","dynamo_region":"us-east-1","table_path_scheme":"s3a"}`, 1)
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Storage.DynamoRegion != SparkDynamoRegion || s.Storage.TablePathScheme != SchemeS3A || s.Bronze != "s3a://lake/b" {
		t.Fatalf("storage %+v bronze %s", s.Storage, s.Bronze)
	}
	for _, tc := range []struct {
		storage string
		fields  []string
	}{
		{`{"dynamo_table":"delta_log","dynamo_region":"Mars","table_path_scheme":"S3A"}`, []string{"storage.dynamo_region", "storage.table_path_scheme"}},
		{`{"dynamo_table":"delta_log","table_path_scheme":"gs"}`, []string{"storage.table_path_scheme"}},
		{`{"dynamo_region":"us-east-1","table_path_scheme":"s3a"}`, []string{"storage.dynamo_region", "storage.table_path_scheme"}},
		{`{"region":"eu west"}`, []string{"storage.region"}},
	} {
		_, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"storage":`+tc.storage+`,"bronze"`, 1)))
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: err = %v, want *ConfigError", tc.storage, err)
		}
		for _, f := range tc.fields {
			if !ce.Has(f) {
				t.Errorf("%s: no problem for %s in %v", tc.storage, f, ce)
			}
		}
		if len(ce.Problems) != len(tc.fields) {
			t.Errorf("%s: problems %v, want only %v", tc.storage, ce.Problems, tc.fields)
		}
	}
}

// Snapshot "chunked" is accepted with its parameters (defaults applied); the chunked-only
// parameters are refused beside snapshot "full", rather than accepted and ignored; an
// unknown mode and snapshotLsn with chunked are refused.
func TestChunkedMode(t *testing.T) {
	problemOn := func(t *testing.T, doc, field string, wants ...string) {
		t.Helper()
		_, err := Parse([]byte(doc))
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: err = %v, want *ConfigError", doc, err)
		}
		if len(ce.Problems) != 1 || ce.Problems[0].Field != field {
			t.Fatalf("%s: problems %v, want one on %s", doc, ce.Problems, field)
		}
		for _, w := range wants {
			if !strings.Contains(ce.Problems[0].Reason, w) {
				t.Errorf("%s: reason %q does not say %q", field, ce.Problems[0].Reason, w)
			}
		}
	}
	with := func(fields string) string { return strings.Replace(minimal(), `"bronze"`, fields+`,"bronze"`, 1) }

	spec, err := Parse([]byte(with(`"snapshot":"chunked"`)))
	if err != nil {
		t.Fatal(err)
	}
	if *spec.ChunkRows != DefaultChunkRows || *spec.TargetWaveSeconds != DefaultTargetWaveSeconds || *spec.MinHeadroomHours != DefaultMinHeadroomHours {
		t.Errorf("chunked defaults: chunk_rows %d, target_wave_seconds %g, min_headroom_hours %g", *spec.ChunkRows, *spec.TargetWaveSeconds, *spec.MinHeadroomHours)
	}
	if spec.PlansTable() != spec.Bronze+"_snapshot_plans" {
		t.Errorf("plans table %q next to bronze %q", spec.PlansTable(), spec.Bronze)
	}
	problemOn(t, with(`"snapshot":"chunks"`), "snapshot", `"full"`, `"chunked"`)
	problemOn(t, with(`"snapshot":"chunked","options":{"snapshotLsn":"0x00000020000000100001"}`), "options.snapshotLsn", "chunked")
	for _, f := range []string{`"chunk_rows":500000`, `"max_waves":3`, `"min_headroom_hours":12`, `"target_wave_seconds":0`} {
		name := strings.Trim(strings.Split(f, ":")[0], `"`)
		problemOn(t, with(f), name, "chunked", "remove it")
		problemOn(t, with(`"snapshot":"full",`+f), name, "chunked")
		if _, err := Parse([]byte(with(`"snapshot":"chunked",` + f))); err != nil {
			t.Errorf("%s with snapshot chunked: %v", f, err)
		}
	}
	if _, err := Parse([]byte(with(`"snapshot":"full"`))); err != nil {
		t.Errorf("snapshot full: %v", err)
	}
}

// The connection's TLS settings: a plain DSN is valid (and gets encrypt=true, verified);
// turning verification or encryption off needs development; the problem names the field
// that holds the setting, the spec's own or the DSN.
func TestSourceTLSSettings(t *testing.T) {
	base := func() *Spec {
		s := &Spec{AppID: "a", Source: Source{DSN: "sqlserver://u@h?database=d", CaptureInstance: "dbo_t"}, Bronze: "/l/b", Checkpoint: "/l/c", FactsTable: "/l/f"}
		s.Defaults()
		return s
	}
	s := base()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := s.MSSQL("p@ss")
	if err != nil || o.Encrypt != "" || o.Development || o.Validate() != nil {
		t.Fatalf("options %+v %v", o, err)
	}
	for _, c := range []struct {
		edit  func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Source.TrustServerCertificate = true }, "source.trust_server_certificate"},
		{func(s *Spec) { s.Source.DSN += "&TrustServerCertificate=true" }, "source.dsn"},
		{func(s *Spec) { s.Source.Encrypt = "false" }, "source.encrypt"},
		{func(s *Spec) { s.Source.DSN += "&guid+conversion=true" }, "source.dsn"},
		{func(s *Spec) { s.Source.DialTimeoutSeconds = -1 }, "source.dial_timeout_seconds"},
		{func(s *Spec) { s.Source.Auth, s.Source.ClientID = "entra-service-principal", "app" }, "source.tenant_id"},
		{func(s *Spec) { s.Source.Auth = "kerberos" }, "source.auth"},
	} {
		s := base()
		c.edit(s)
		var ce *ConfigError
		if err := s.Validate(); !errors.As(err, &ce) || !ce.Has(c.field) {
			t.Errorf("%v, want a problem in %s", err, c.field)
		}
	}
	s = base()
	s.Source.TrustServerCertificate, s.Source.Development = true, true
	if err := s.Validate(); err != nil {
		t.Errorf("development source: %v", err)
	}
	if o, _ := s.MSSQL(""); !o.TrustServerCertificate || !o.Development {
		t.Errorf("options %+v", o)
	}
}

// startingLsn's keywords are taken in any case (issue 12 item 9): "LATEST" and "Earliest"
// are what a user means, not a malformed LSN.
func TestStartingLsnKeywordsAnyCase(t *testing.T) {
	for in, want := range map[string]string{"LATEST": StartLatest, "Latest": StartLatest, "EARLIEST": StartEarliest, "earLiest": StartEarliest} {
		s, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"options":{"startingLsn":"`+in+`"},"bronze"`, 1)))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if k, _ := s.Starting(); k != want || s.Options.StartingLsn != want {
			t.Errorf("%s: Starting %s, field %q, want %s", in, k, s.Options.StartingLsn, want)
		}
	}
}

// Every number of a spec that sizes a duration or a fan-out is bounded (issue 12 item 6):
// dial_timeout_seconds = 1e10 would overflow time.Duration, numPartitions = 1e9 would plan
// a billion ranges and connections.
func TestNumbersBounded(t *testing.T) {
	for _, c := range []struct {
		edit  func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Source.DialTimeoutSeconds = 10_000_000_000 }, "source.dial_timeout_seconds"},
		{func(s *Spec) { s.Source.DialTimeoutSeconds = MaxDialTimeoutSeconds + 1 }, "source.dial_timeout_seconds"},
		{func(s *Spec) { s.Source.LoginTimeoutSeconds = -1 }, "source.login_timeout_seconds"},
		{func(s *Spec) { s.Source.LoginTimeoutSeconds = MaxLoginTimeoutSeconds + 1 }, "source.login_timeout_seconds"},
		{func(s *Spec) { s.Source.DSN += "&connection+timeout=soon" }, "source.dsn"},
		{func(s *Spec) { s.Options.NumPartitions = 1_000_000_000 }, "options.numPartitions"},
		{func(s *Spec) { s.Options.NumPartitions = MaxNumPartitions + 1 }, "options.numPartitions"},
		{func(s *Spec) { s.MaxSeconds = 1e10 }, "max_seconds"},
	} {
		s, err := Parse([]byte(minimal()))
		if err != nil {
			t.Fatal(err)
		}
		c.edit(s)
		var ce *ConfigError
		if err := s.Validate(); !errors.As(err, &ce) || !ce.Has(c.field) {
			t.Errorf("%v, want a problem in %s", err, c.field)
		}
	}
	s, _ := Parse([]byte(minimal()))
	s.Source.DialTimeoutSeconds, s.Options.NumPartitions = MaxDialTimeoutSeconds, MaxNumPartitions
	s.Source.LoginTimeoutSeconds = MaxLoginTimeoutSeconds
	if err := s.Validate(); err != nil {
		t.Errorf("the bounds themselves: %v", err)
	}
	if o, _ := s.MSSQL("pw"); o.LoginTimeout != MaxLoginTimeoutSeconds*time.Second {
		t.Errorf("login_timeout_seconds %d: Options.LoginTimeout %s", s.Source.LoginTimeoutSeconds, o.LoginTimeout)
	}
}

// A duration out of range reads plainly: the value as given (an integer in digits, not
// 1e+10), and the bound in days with its value in the field's unit, thousands separated
// (it said "want seconds in 0..3.16224e+07").
func TestSecondsProblemReadsPlainly(t *testing.T) {
	for _, c := range []struct {
		field string
		v     float64
		zero  string
		want  string
	}{
		{"--max-seconds", 1e10, "0 = no bound", "10000000000: want seconds from 0 up to 366 days (31,622,400 s); 0 = no bound"},
		{"max_seconds", -5, "", "-5: want seconds from 0 up to 366 days (31,622,400 s)"},
		{"max_seconds", 31622400.5, "", "31622400.5: want seconds from 0 up to 366 days (31,622,400 s)"},
		{"max_seconds", 1e300, "", "1e+300: want seconds from 0 up to 366 days (31,622,400 s)"},
		{"max_seconds", math.NaN(), "", "NaN: want seconds from 0 up to 366 days (31,622,400 s)"},
		{"max_seconds", math.Inf(1), "", "+Inf: want seconds from 0 up to 366 days (31,622,400 s)"},
		{"min_headroom_hours", 9000 * 3600, "", "9000: want hours from 0 up to 366 days (8,784 h)"},
		{"resnapshot_interval_days", 400 * 86400, "0 allows an immediate retry", "400: want days from 0 up to 366; 0 allows an immediate retry"},
	} {
		p := SecondsProblem(c.field, c.v, c.zero)
		if p == nil || p.Field != c.field || p.Reason != c.want {
			t.Errorf("SecondsProblem(%s, %g) = %+v\nwant reason %s", c.field, c.v, p, c.want)
		}
	}
	for _, v := range []float64{0, 0.5, MaxDurationSeconds} {
		if p := SecondsProblem("max_seconds", v, ""); p != nil {
			t.Errorf("%g: %+v, want no problem", v, p)
		}
	}
}

// Grouped separates thousands, negative numbers too (the CLI's counts and the seed's
// integer ranges print with it).
func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000", -100: "-100",
		math.MinInt64: "-9,223,372,036,854,775,808"} {
		if got := Grouped(n); got != want {
			t.Errorf("Grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

// An integer field out of range reads plainly too: the bound thousands separated and, for
// a duration, in a unit a reader takes in (it said "want milliseconds in 0..2147483647").
func TestIntegerRangesReadPlainly(t *testing.T) {
	lock := MaxLockTimeoutMs + 1
	for _, c := range []struct {
		set   func(*Spec)
		field string
		want  string
	}{
		{func(s *Spec) { s.Options.LockTimeoutMs = &lock }, "options.lockTimeoutMs",
			"2147483648: want milliseconds from 0 up to 2,147,483,647 ms (about 24.8 days); leave it out to wait for ever (SET LOCK_TIMEOUT takes an int)"},
		{func(s *Spec) { s.Source.DialTimeoutSeconds = 10_000_000_000 }, "source.dial_timeout_seconds",
			"10000000000: want seconds from 0 up to 3,600 s (an hour); 0 = 30 s"},
		{func(s *Spec) { s.Source.LoginTimeoutSeconds = -1 }, "source.login_timeout_seconds",
			"-1: want seconds from 0 up to 3,600 s (an hour); 0 = the DSN's connection timeout, else 30 s"},
		{func(s *Spec) { s.Options.NumPartitions = 1_000_000_000 }, "options.numPartitions",
			"1000000000: want an integer from 1 up to 400"},
	} {
		s, err := Parse([]byte(minimal()))
		if err != nil {
			t.Fatal(err)
		}
		c.set(s)
		var ce *ConfigError
		err = s.Validate()
		if !errors.As(err, &ce) || !slices.Contains(ce.Problems, Problem{Field: c.field, Reason: c.want}) {
			t.Errorf("%s: %v\nwant reason %s", c.field, err, c.want)
		}
	}
}

// A SQL Server that cannot be reached (the port refuses, the host name does not resolve)
// says which field to check and what, and stays transient (retried: a server restarting
// heals by itself); the password is never in it (it said only "read max lsn: transient:
// unable to open tcp connection with host '127.0.0.1:1': ... connection refused").
func TestUnreachableSourceNamesTheDSNField(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now: the connection is refused
	// A listener that accepts and never answers (only 127.0.0.1: the sandbox may accept
	// connections to any address); its login is bounded by the DSN's connection timeout.
	quiet := sourcetest.SilentServer(t, sourcetest.NeverAnswers)
	const pw = "Sup3r-s3cret-pw"
	for _, c := range []struct{ host, query, says string }{
		{closed, "", "cannot reach SQL Server at " + closed + " (connection refused): check the host and port in source.dsn"},
		{"no-such-host.invalid:1433", "", "cannot reach SQL Server at no-such-host.invalid:1433 (host name not found): check the host name in source.dsn"},
		{quiet, "&connection+timeout=1", "SQL Server at " + quiet + " accepted the connection but did not answer the login within 1 s: check that source.dsn's host and port are SQL Server's"},
	} {
		doc := strings.Replace(minimal(), `"sqlserver://u@h?database=d"`, `"sqlserver://u@`+c.host+`?database=d`+c.query+`","password_env":"P","development":true,"encrypt":"disable"`, 1)
		spec, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		o, err := spec.MSSQL(pw)
		if err != nil {
			t.Fatal(err)
		}
		o.Retry = mssql.Retry{Retries: -1}
		db, err := mssql.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.MaxLSN(context.Background())
		db.Close()
		if err == nil || !source.IsTransient(err) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), pw) {
			t.Errorf("%s: %v\nwant a transient error saying %q, without the password", c.host, err, c.says)
		}
	}
}

// A DSN port out of range is a ConfigError on source.dsn when the spec is read, not the
// driver's "invalid tcp port '99999': strconv.ParseUint: ..." at the first connection;
// the port is not repeated (no number under source is: docs/spec.md).
func TestDSNPortOutOfRange(t *testing.T) {
	for _, port := range []string{"99999", "65536"} {
		_, err := Parse([]byte(strings.Replace(minimal(), "sqlserver://u@h?", "sqlserver://u@h:"+port+"?", 1)))
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has("source.dsn") || !strings.Contains(err.Error(), "port out of range: want from 0 up to 65,535") || strings.Contains(err.Error(), port) {
			t.Errorf("port %s: %v; want a source.dsn problem naming the range, not the port", port, err)
		}
	}
	for _, port := range []string{"1433", "0", "65535"} {
		if _, err := Parse([]byte(strings.Replace(minimal(), "sqlserver://u@h?", "sqlserver://u@h:"+port+"?", 1))); err != nil {
			t.Errorf("port %s: %v", port, err)
		}
	}
}

// A ConfigError on fields of a request (a seed's as_of, a flag) names the request, not
// the table spec: the spec is fine, the request must change. Without In it is the spec's.
func TestConfigErrorNamesWhereTheValueCameFrom(t *testing.T) {
	ps := []Problem{{Field: "as_of", Reason: "bad"}}
	if got, want := (&ConfigError{Problems: ps, In: "seed request"}).Error(), "invalid seed request: as_of: bad"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := (&ConfigError{Problems: ps}).Error(), "invalid table spec: as_of: bad"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A negative timeout is one problem on its own field: login_timeout_seconds = -1 was also
// reported as "source.dsn: loginTimeout: negative" (the mssql options' own check), naming a
// DSN that is fine.
func TestNegativeTimeoutNamesItsFieldOnce(t *testing.T) {
	for _, c := range []struct {
		edit  func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Source.LoginTimeoutSeconds = -1 }, "source.login_timeout_seconds"},
		{func(s *Spec) { s.Source.DialTimeoutSeconds = -1 }, "source.dial_timeout_seconds"},
	} {
		s, err := Parse([]byte(minimal()))
		if err != nil {
			t.Fatal(err)
		}
		c.edit(s)
		var ce *ConfigError
		if err := s.Validate(); !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != c.field {
			t.Errorf("%v, want one problem, in %s", err, c.field)
		}
	}
}
