package config

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// parseProblems parses doc and returns its problems by field; it fails the test unless
// Parse returned a *ConfigError.
func parseProblems(t *testing.T, doc string) map[string]string {
	t.Helper()
	_, err := Parse([]byte(doc))
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *ConfigError", err)
	}
	got := map[string]string{}
	for _, p := range ce.Problems {
		if _, dup := got[p.Field]; dup {
			t.Errorf("%s reported twice: %v", p.Field, ce.Problems)
		}
		got[p.Field] = p.Reason
	}
	return got
}

// One document with unknown fields at two levels, values of the wrong JSON type (one in
// an array) and an invalid value: every problem comes back at once, under its qualified
// path, and nothing else (docs/spec.md).
func TestParseReportsEveryProblemAtOnce(t *testing.T) {
	doc := `{"app_id":"a#b","bronz":"/x",
	"source":{"dsn":"sqlserver://u@h?database=d","captureInstanse":"dbo_t"},
	"options":{"numPartitions":"4","snapshotKeys":["id",7]},
	"bronze":"/lake/b","checkpoint":"/lake/cp","facts_table":"/lake/f"}`
	got := parseProblems(t, doc)
	want := map[string]string{
		"app_id":                  "only letters",
		"bronz":                   "did you mean bronze?",
		"source.captureInstanse":  "did you mean source.captureInstance?",
		"source.captureInstance":  "required",
		"options.numPartitions":   "got a string, want an integer",
		"options.snapshotKeys[1]": "7: want a string",
	}
	for f, w := range want {
		if !strings.Contains(got[f], w) {
			t.Errorf("%s: %q, want it to say %q", f, got[f], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want exactly the fields of %v", got, want)
	}
}

// An unknown field names the known one it most likely meant: a sibling spelt differently
// (case, '_' or '-', a typo), or the same name in another section.
func TestParseSuggestsTheNearestField(t *testing.T) {
	for _, tc := range []struct{ insert, field, want string }{
		{`"max-seconds":5`, "max-seconds", "did you mean max_seconds?"},
		{`"maxSeconds":5`, "maxSeconds", "did you mean max_seconds?"},
		{`"captureInstance":"x"`, "captureInstance", "did you mean source.captureInstance?"},
		{`"numPartitions":2`, "numPartitions", "did you mean options.numPartitions?"},
		{`"options":{"numPartition":2}`, "options.numPartition", "did you mean options.numPartitions?"},
		{`"options":{"starting_lsn":"latest"}`, "options.starting_lsn", "did you mean options.startingLsn?"},
		{`"storage":{"dynamoTable":"t"}`, "storage.dynamoTable", "did you mean storage.dynamo_table?"},
		{`"copy_on_write":true`, "copy_on_write", "did you mean silver.copy_on_write?"},
		{`"colour":"blue"`, "colour", "docs/spec.md lists the fields"},
	} {
		got := parseProblems(t, strings.Replace(minimal(), `"bronze"`, tc.insert+`,"bronze"`, 1))
		if r, ok := got[tc.field]; !ok || !strings.HasPrefix(r, "unknown field") || !strings.Contains(r, tc.want) {
			t.Errorf("%s: problems %v, want %s: unknown field ... %s", tc.insert, got, tc.field, tc.want)
		}
	}
}

// A field given twice (in any case) is a problem rather than a silent last-one-wins.
func TestParseFieldGivenTwice(t *testing.T) {
	got := parseProblems(t, strings.Replace(minimal(), `"bronze"`, `"options":{"numPartitions":2,"NUMPARTITIONS":3},"bronze"`, 1))
	if r := got["options.numPartitions"]; !strings.Contains(r, "given twice") {
		t.Errorf("problems %v", got)
	}
}

// A value of the wrong type is reported once, not again by Validate as missing.
func TestParseTypeProblemNotAlsoRequired(t *testing.T) {
	got := parseProblems(t, strings.Replace(minimal(), `"app_id":"a"`, `"app_id":5`, 1))
	if len(got) != 1 || !strings.Contains(got["app_id"], "want a string") {
		t.Errorf("problems %v, want one: app_id wants a string", got)
	}
	got = parseProblems(t, strings.Replace(minimal(), `"source":{`, `"source":["x"],"s":{`, 1))
	if !strings.Contains(got["source"], "got an array, want a JSON object") || got["source.dsn"] != "" {
		t.Errorf("problems %v", got)
	}
}

// Malformed JSON says where: line and column.
func TestParseSyntaxErrorSaysWhere(t *testing.T) {
	got := parseProblems(t, "{\n  \"app_id\": \"a\",\n  \"bronze\" \"x\"\n}")
	if r := got["(document)"]; !strings.Contains(r, "line 3, column 12") {
		t.Errorf("problems %v, want line 3, column 12", got)
	}
	for _, doc := range []string{"", "[1]", `"x"`, minimal() + " {}"} {
		if got := parseProblems(t, doc); got["(document)"] == "" {
			t.Errorf("%q: problems %v, want one on (document)", doc, got)
		}
	}
}

// Every duration-valued field is bounded, so none overflows time.Duration: max_seconds
// of 1e10 once wrapped to a negative budget and stopped the stream after one batch.
func TestDurationsAreBounded(t *testing.T) {
	with := func(fields string) string { return strings.Replace(minimal(), `"bronze"`, fields+`,"bronze"`, 1) }
	for _, tc := range []struct{ insert, field string }{
		{`"max_seconds":1e10`, "max_seconds"},
		{`"max_seconds":9.3e9`, "max_seconds"},
		{`"max_seconds":-1`, "max_seconds"},
		{`"options":{"lockTimeoutMs":9300000000000}`, "options.lockTimeoutMs"},
		{`"options":{"lockTimeoutMs":2147483648}`, "options.lockTimeoutMs"},
		{`"snapshot":"chunked","min_headroom_hours":3e9`, "min_headroom_hours"},
		{`"snapshot":"chunked","target_wave_seconds":1e12`, "target_wave_seconds"},
	} {
		if got := parseProblems(t, with(tc.insert)); !strings.Contains(got[tc.field], "want") {
			t.Errorf("%s: problems %v, want one on %s", tc.insert, got, tc.field)
		}
	}
	for _, ok := range []string{`"max_seconds":31622400`, `"max_seconds":0.5`, `"options":{"lockTimeoutMs":2147483647}`} {
		if _, err := Parse([]byte(with(ok))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// A flag can carry what JSON cannot: NaN and the infinities.
	s, err := Parse([]byte(minimal()))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		s.MaxSeconds = v
		var ce *ConfigError
		if err := s.Validate(); !errors.As(err, &ce) || !ce.Has("max_seconds") {
			t.Errorf("max_seconds %v: %v", v, err)
		}
	}
}

// Table URLs are compared as the stores open them: a double or trailing slash, or s3a://
// for s3://, does not make checkpoint differ from bronze. A "." or ".." segment is refused.
func TestTableURLsComparedNormalized(t *testing.T) {
	doc := strings.NewReplacer(`"bronze":"/lake/b"`, `"bronze":"s3://bkt/lake//orders/"`, `"checkpoint":"/lake/cp"`, `"checkpoint":"s3a://bkt/lake/orders"`,
		`"facts_table":"/lake/f"`, `"facts_table":"/lake//b/../f"`).Replace(minimal())
	got := parseProblems(t, doc)
	if !strings.Contains(got["checkpoint"], "must differ from bronze") || len(got) != 1 {
		t.Errorf("problems %v, want checkpoint: must differ from bronze", got)
	}
	got = parseProblems(t, strings.Replace(minimal(), `"bronze":"/lake/b"`, `"bronze":"s3://bkt/lake/../orders"`, 1))
	if !strings.Contains(got["bronze"], `".." segment`) {
		t.Errorf("problems %v, want bronze: .. segment", got)
	}
}

// numPartitions 0 is refused like maxCommitsPerBatch 0, rather than silently becoming the
// default; leaving it out gives the default.
func TestZeroNumPartitionsRefused(t *testing.T) {
	got := parseProblems(t, strings.Replace(minimal(), `"bronze"`, `"options":{"numPartitions":0},"bronze"`, 1))
	if !strings.Contains(got["options.numPartitions"], "leave it out for the default, 4") || len(got) != 1 {
		t.Errorf("problems %v", got)
	}
	got = parseProblems(t, strings.Replace(minimal(), `"bronze"`, `"options":{"maxCommitsPerBatch":0},"bronze"`, 1))
	if !strings.Contains(got["options.maxCommitsPerBatch"], "leave it out for unlimited") {
		t.Errorf("problems %v", got)
	}
}

// The silver section: keys from silver.keys, else options.snapshotKeys; its table must be a
// location of its own; keys, budget and memory are checked; an unknown field is named.
func TestSilverSection(t *testing.T) {
	with := func(silver string) string {
		return strings.Replace(minimal(), `"bronze"`, `"options":{"snapshotKeys":["id"]},"silver":`+silver+`,"bronze"`, 1)
	}
	s, err := Parse([]byte(with(`{"table":"/lake/s","memory_mb":64,"max_seconds":120,"copy_on_write":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	if sv := s.Silver; sv == nil || sv.Table != "/lake/s" || sv.MemoryMB != 64 || sv.MaxSeconds != 120 || !sv.CopyOnWrite {
		t.Fatalf("silver %+v", s.Silver)
	}
	if k := s.SilverKeys(); len(k) != 1 || k[0] != "id" {
		t.Errorf("keys from snapshotKeys: %v", k)
	}
	s, err = Parse([]byte(with(`{"table":"s3://lake/silver/t","keys":["a","b"]}`)))
	if err != nil || strings.Join(s.SilverKeys(), ",") != "a,b" {
		t.Fatalf("silver.keys: %v, %v", err, s)
	}
	if s, err := Parse([]byte(minimal())); err != nil || s.Silver != nil || s.SilverKeys() != nil {
		t.Fatalf("no silver: %v %+v", err, s)
	}
	got := parseProblems(t, with(`{"table":"/lake/b/","keys":["a","A",""],"max_seconds":-1,"memory_mb":9000,"tables":"x"}`))
	want := map[string]string{
		"silver.table":       "must differ from bronze",
		"silver.keys[1]":     `"A" named twice`,
		"silver.keys[2]":     "empty",
		"silver.max_seconds": "-1: want seconds",
		"silver.memory_mb":   "9000: want 1 to 8192",
		"silver.tables":      "did you mean silver.table?",
	}
	for f, w := range want {
		if !strings.Contains(got[f], w) {
			t.Errorf("%s: %q, want it to say %q", f, got[f], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want exactly the fields of %v", got, want)
	}
	if got := parseProblems(t, with(`{}`)); !strings.Contains(got["silver.table"], "required") {
		t.Errorf("silver without a table: %v", got)
	}
}

// The reconcile section: a report table of its own, silver to compare with, a sample
// fraction and a bucket size in range; sample defaults to 0.01.
func TestReconcileSection(t *testing.T) {
	with := func(sections string) string {
		return strings.Replace(minimal(), `"bronze"`, sections+`,"bronze"`, 1)
	}
	const silver = `"silver":{"table":"/lake/s","keys":["id"]}`
	s, err := Parse([]byte(with(silver + `,"reconcile":{"report_table":"/lake/r","bucket_rows":500}`)))
	if err != nil {
		t.Fatal(err)
	}
	if rc := s.Reconcile; rc == nil || rc.ReportTable != "/lake/r" || rc.BucketRows != 500 || rc.SampleOr() != DefaultReconcileSample {
		t.Fatalf("reconcile %+v", s.Reconcile)
	}
	s, err = Parse([]byte(with(silver + `,"reconcile":{"report_table":"/lake/r","sample":0}`)))
	if err != nil || s.Reconcile.SampleOr() != 0 {
		t.Fatalf("sample 0: %v %+v", err, s)
	}
	got := parseProblems(t, with(silver+`,"reconcile":{"report_table":"/lake/s","sample":1.5,"bucket_rows":-1}`))
	want := map[string]string{
		"reconcile.report_table": "must differ from silver.table",
		"reconcile.sample":       "1.5: want a fraction",
		"reconcile.bucket_rows":  "-1: want 1 or more",
	}
	for f, w := range want {
		if !strings.Contains(got[f], w) {
			t.Errorf("%s: %q, want it to say %q", f, got[f], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want exactly the fields of %v", got, want)
	}
	if got := parseProblems(t, with(`"reconcile":{"report_table":"/lake/r"}`)); !strings.Contains(got["reconcile"], "set silver.table") {
		t.Errorf("reconcile without silver: %v", got)
	}
	if got := parseProblems(t, with(silver+`,"reconcile":{}`)); !strings.Contains(got["reconcile.report_table"], "required") {
		t.Errorf("reconcile without a report table: %v", got)
	}
}
