package config

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Problem is one invalid field: its JSON path ("options.numPartitions") and why.
type Problem struct {
	Field  string
	Reason string
}

// ConfigError lists every problem Validate or Parse found, or a job found in the fields of
// its request. Step Functions matches the name ConfigError (never retried: the spec or the
// request must change).
type ConfigError struct {
	Problems []Problem
	// In names what held the fields when it is not the table spec ("seed request": the
	// seed's as_of, copy, copy_format); the message then says "invalid seed request", not
	// "invalid table spec" of a spec that is fine. Empty: the table spec.
	In string
}

func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Reason
	}
	in := e.In
	if in == "" {
		in = "table spec"
	}
	return "invalid " + in + ": " + strings.Join(parts, "; ")
}

// Has reports whether a problem names field.
func (e *ConfigError) Has(field string) bool {
	for _, p := range e.Problems {
		if p.Field == field {
			return true
		}
	}
	return false
}

type problems []Problem

func (ps *problems) add(field, format string, args ...any) {
	*ps = append(*ps, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// Bounds of the duration-valued fields. Every duration in a spec is bounded, so that no
// value overflows time.Duration (about 292 years in nanoseconds; max_seconds = 1e10 once
// wrapped to a negative budget and stopped after one batch).
const (
	// MaxDurationSeconds bounds max_seconds, target_wave_seconds and min_headroom_hours
	// (in seconds): 366 days.
	MaxDurationSeconds = 366 * 24 * 3600
	// MaxLockTimeoutMs is the largest SET LOCK_TIMEOUT SQL Server takes (an int), about
	// 24.8 days.
	MaxLockTimeoutMs = 1<<31 - 1
	// MaxDialTimeoutSeconds bounds source.dial_timeout_seconds: an hour.
	MaxDialTimeoutSeconds = 3600
	// MaxLoginTimeoutSeconds bounds source.login_timeout_seconds: an hour.
	MaxLoginTimeoutSeconds = 3600
	// MaxNumPartitions bounds options.numPartitions, each a SQL Server connection and a
	// range read at once: the bootstrap machine's Map runs at most 400 ranges
	// (docs/decisions/0008-bootstrap-map-inline-400-ranges.md).
	MaxNumPartitions = 400
)

// validateSeconds adds SecondsProblem's problem, if any, and reports whether v was valid.
func validateSeconds(ps *problems, field string, v float64, zero string) bool {
	p := SecondsProblem(field, v, zero)
	if p != nil {
		*ps = append(*ps, *p)
	}
	return p == nil
}

// SecondsProblem is the problem with the duration-valued field's value v, in seconds,
// unless 0 <= v <= MaxDurationSeconds (NaN and the infinities a command-line flag can
// carry included); nil when v is in range. The reason gives v and the range in the
// field's unit (hours for min_headroom_hours, days for resnapshot_interval_days) as a
// reader takes them in: "10000000000: want seconds from 0 up to 366 days (31,622,400 s)",
// the value in digits when it is an integer of 15 digits or fewer, never "0..3.16224e+07".
// zero, when set, says what 0 means. One rule for the spec's fields and the parameters
// that override them (a backfill call's, core/snapshot; the CLI's flags).
func SecondsProblem(field string, v float64, zero string) *Problem {
	if v >= 0 && v <= MaxDurationSeconds {
		return nil
	}
	const days = MaxDurationSeconds / 86400
	unit, shown, limit := "seconds", v, fmt.Sprintf(" (%s s)", Grouped(MaxDurationSeconds))
	switch field {
	case "min_headroom_hours":
		unit, shown, limit = "hours", v/3600, fmt.Sprintf(" (%s h)", Grouped(MaxDurationSeconds/3600))
	case "resnapshot_interval_days":
		unit, shown, limit = "days", v/86400, ""
	}
	upTo := fmt.Sprintf("%d days%s", days, limit)
	if unit == "days" {
		upTo = strconv.Itoa(days)
	}
	if zero != "" {
		zero = "; " + zero
	}
	return &Problem{Field: field, Reason: fmt.Sprintf("%s: want %s from 0 up to %s%s", PlainNumber(shown), unit, upTo, zero)}
}

// PlainNumber is v for a message, as a reader wrote it: digits for a finite value below
// 10^15 in magnitude (10000000000, 0.5, -5), else Go's shortest form (1e+300, NaN, +Inf);
// never %g's 1e+10. SecondsProblem and the CLI's own bounds print values with it.
func PlainNumber(v float64) string {
	if math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// upTo is an integer field's range as a reader takes it in, the bounds thousands
// separated: upTo(0, 2147483647, "ms (about 24.8 days)") is "from 0 up to 2,147,483,647 ms
// (about 24.8 days)"; unit (with what the bound means, if anything) may be empty. Never
// "0..2147483647": see SecondsProblem for the durations in float seconds.
func upTo(lo, hi int, unit string) string {
	if unit != "" {
		unit = " " + unit
	}
	return fmt.Sprintf("from %s up to %s%s", Grouped(int64(lo)), Grouped(int64(hi)), unit)
}

// Grouped is n with comma thousands separators, as messages print counts and bounds:
// 31622400 is "31,622,400", -2147483648 is "-2,147,483,648".
func Grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

// maxAppIDLen keeps "<app_id>#snapchunks.<S>" and friends well under DynamoDB and Delta
// limits.
const maxAppIDLen = 200

// Validate checks the spec as it stands (call Defaults first) and returns a *ConfigError
// listing every problem, or nil.
func (s *Spec) Validate() error {
	var ps problems
	validateAppID(&ps, s.AppID)
	s.Source.validate(&ps)
	s.Options.validate(&ps)

	validateURL(&ps, "bronze", s.Bronze, true)
	validateURL(&ps, "checkpoint", s.Checkpoint, true)
	validateURL(&ps, "facts_table", s.FactsTable, true)
	if s.Bronze != "" && sameLocation(s.Bronze, s.Checkpoint) {
		ps.add("checkpoint", "must differ from bronze")
	}
	if s.FactsTable != "" && sameLocation(s.FactsTable, s.Bronze) {
		ps.add("facts_table", "must differ from bronze")
	}
	if s.Bronze != "" && s.Snapshot == SnapshotChunked {
		for _, f := range [][2]string{{"checkpoint", s.Checkpoint}, {"facts_table", s.FactsTable}} {
			if f[1] != "" && sameLocation(f[1], s.PlansTable()) {
				ps.add(f[0], "must differ from the plans table %s (bronze's URL + %s)", s.PlansTable(), PlansSuffix)
			}
		}
	}

	if s.Bootstrap && s.Options.StartingLsn != "" {
		ps.add("options.startingLsn", "not allowed with bootstrap=true (the snapshot's LSN is the start)")
	}
	s.validateSnapshotMode(&ps)
	s.validateRecovery(&ps)
	validateSeconds(&ps, "max_seconds", s.MaxSeconds, "0 = bounded by the invocation's deadline only")
	if s.Isolation != "" {
		validateIsolation(&ps, "isolation", s.Isolation)
	}
	s.Storage.validate(&ps)
	s.validateSilver(&ps)
	s.validateReconcile(&ps)
	if len(ps) > 0 {
		return &ConfigError{Problems: ps}
	}
	return nil
}

// validateSilver checks the silver section: a table URL apart from the other locations,
// key names given once, the budget and memory in range.
func (s *Spec) validateSilver(ps *problems) {
	sv := s.Silver
	if sv == nil {
		return
	}
	validateURL(ps, "silver.table", sv.Table, true)
	for _, other := range []struct{ field, url string }{{"bronze", s.Bronze}, {"checkpoint", s.Checkpoint}, {"facts_table", s.FactsTable}} {
		if sv.Table != "" && other.url != "" && sameLocation(sv.Table, other.url) {
			ps.add("silver.table", "must differ from %s", other.field)
		}
	}
	seen := map[string]bool{}
	for i, k := range sv.Keys {
		field := fmt.Sprintf("silver.keys[%d]", i)
		switch lk := strings.ToLower(k); {
		case k == "":
			ps.add(field, "empty: want a column name")
		case seen[lk]:
			ps.add(field, "%q named twice", k)
		default:
			seen[lk] = true
		}
	}
	validateSeconds(ps, "silver.max_seconds", sv.MaxSeconds, "0 = bounded by the invocation's deadline only")
	if sv.MemoryMB != 0 && (sv.MemoryMB < MinSilverMemoryMB || sv.MemoryMB > MaxSilverMemoryMB) {
		ps.add("silver.memory_mb", "%d: want %d to %d MiB (leave it out for 256)", sv.MemoryMB, MinSilverMemoryMB, MaxSilverMemoryMB)
	}
}

// validateReconcile checks the reconcile section: silver to compare, a report table apart
// from the other locations, a sample fraction and a bucket size in range.
func (s *Spec) validateReconcile(ps *problems) {
	rc := s.Reconcile
	if rc == nil {
		return
	}
	if s.Silver == nil {
		ps.add("reconcile", "compares silver with the source: set silver.table too")
	}
	validateURL(ps, "reconcile.report_table", rc.ReportTable, true)
	others := []struct{ field, url string }{{"bronze", s.Bronze}, {"checkpoint", s.Checkpoint}, {"facts_table", s.FactsTable}}
	if s.Silver != nil {
		others = append(others, struct{ field, url string }{"silver.table", s.Silver.Table})
	}
	for _, other := range others {
		if rc.ReportTable != "" && other.url != "" && sameLocation(rc.ReportTable, other.url) {
			ps.add("reconcile.report_table", "must differ from %s", other.field)
		}
	}
	if rc.BucketRows < 0 {
		ps.add("reconcile.bucket_rows", "%d: want 1 or more rows (leave it out for 1,000,000)", rc.BucketRows)
	}
	if rc.Sample != nil && !(*rc.Sample >= 0 && *rc.Sample <= 1) {
		ps.add("reconcile.sample", "%v: want a fraction from 0 to 1", *rc.Sample)
	}
}

// validateSnapshotMode checks the snapshot mode and the chunked-only parameters: set
// beside snapshot "full" they are refused, as storage.dynamo_region is without
// dynamo_table, since they would have no effect. A chunked snapshot's S is stamped by the
// stream's open, never given: snapshotLsn is refused with it (a stamp below S would break
// it, docs/snapshots.md "Pitfalls").
func (s *Spec) validateSnapshotMode(ps *problems) {
	switch s.Snapshot {
	case SnapshotFull:
	case SnapshotChunked:
		if s.Options.SnapshotLsn != "" {
			ps.add("options.snapshotLsn", "not allowed with snapshot %q: the stream's open stamps S itself, and a chunk stamped below S would miss commits", SnapshotChunked)
		}
	default:
		ps.add("snapshot", "%q: want %q (the default) or %q", s.Snapshot, SnapshotFull, SnapshotChunked)
	}
	onlyChunked := func(field string) {
		if s.Snapshot != SnapshotChunked {
			ps.add(field, "applies only to snapshot %q: remove it, or set snapshot %q", SnapshotChunked, SnapshotChunked)
		}
	}
	if s.ChunkRows != nil {
		if *s.ChunkRows < 1 {
			ps.add("chunk_rows", "%d: want an integer >= 1", *s.ChunkRows)
		} else {
			onlyChunked("chunk_rows")
		}
	}
	if s.MaxWaves != nil {
		if *s.MaxWaves < 0 {
			ps.add("max_waves", "%d: want >= 0 (0 = no bound)", *s.MaxWaves)
		} else {
			onlyChunked("max_waves")
		}
	}
	if s.MinHeadroomHours != nil {
		if validateSeconds(ps, "min_headroom_hours", *s.MinHeadroomHours*3600, "") {
			onlyChunked("min_headroom_hours")
		}
	}
	if s.TargetWaveSeconds != nil {
		if validateSeconds(ps, "target_wave_seconds", *s.TargetWaveSeconds, "0 reads one round") {
			onlyChunked("target_wave_seconds")
		}
	}
}

// validateRecovery checks on_data_loss and resnapshot_interval_days
// (docs/reference/original-library.md §7.4–§7.5): a re-snapshot needs failOnDataLoss true,
// since skipping the gap and re-snapshotting it are two answers to one loss.
func (s *Spec) validateRecovery(ps *problems) {
	switch s.OnDataLoss {
	case OnDataLossFail:
	case OnDataLossResnapshot:
		if !s.FailsOnDataLoss() {
			ps.add("on_data_loss", "%q needs options.failOnDataLoss true (false skips the gap instead of re-snapshotting it): choose one", s.OnDataLoss)
		}
	default:
		ps.add("on_data_loss", "%q: want %q (the default) or %q", s.OnDataLoss, OnDataLossFail, OnDataLossResnapshot)
	}
	if d := s.ResnapshotIntervalDays; d != nil {
		validateSeconds(ps, "resnapshot_interval_days", *d*24*3600, "0 allows an immediate retry")
	}
}

func validateAppID(ps *problems, id string) {
	switch {
	case id == "":
		ps.add("app_id", "required")
	case len(id) > maxAppIDLen:
		ps.add("app_id", "%d characters, at most %d", len(id), maxAppIDLen)
	default:
		for _, r := range id {
			if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' || r == '_' || r == '.') {
				ps.add("app_id", "%q: only letters, digits, '-', '_' and '.' (the '#' suffixes are reserved)", id)
				return
			}
		}
	}
}

func (src Source) validate(ps *problems) {
	if src.DSN == "" {
		ps.add("source.dsn", "required (sqlserver://user@host:1433?database=db)")
	} else if u, err := url.Parse(src.DSN); err != nil {
		ps.add("source.dsn", "%s", dsnParseReason(err))
	} else {
		if u.Scheme != "sqlserver" {
			ps.add("source.dsn", "scheme %q: want sqlserver://", u.Scheme)
		}
		if u.Host == "" {
			ps.add("source.dsn", "no host")
		}
		// The driver's port is a uint16 (core/source/mssql refuses the rest at the first
		// connection); the value is not repeated, as no number under source is.
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n > 65535 {
				ps.add("source.dsn", "port out of range: want from 0 up to 65,535 (SQL Server's default is 1433)")
			}
		}
		if _, hasPw := u.User.Password(); (hasPw || dsnPasswordParam(u)) && (src.PasswordEnv != "" || src.PasswordSecretARN != "") {
			ps.add("source.dsn", "holds a password and password_env/password_secret_arn is set: keep the password out of the DSN")
		}
	}
	if src.PasswordEnv != "" && src.PasswordSecretARN != "" {
		ps.add("source.password_secret_arn", "set together with password_env: choose one")
	}
	// Neither value is repeated: a password pasted into the field by mistake would reach
	// the logs and Step Functions (docs/spec.md).
	if src.PasswordSecretARN != "" && !strings.HasPrefix(src.PasswordSecretARN, "arn:") {
		ps.add("source.password_secret_arn", "not an ARN (not shown, in case it is the password): want the secret's ARN, arn:aws:secretsmanager:<region>:<account>:secret:<name>")
	}
	if src.PasswordEnv != "" && !envName.MatchString(src.PasswordEnv) {
		ps.add("source.password_env", "not an environment variable name (not shown, in case it is the password): want the name of the variable that holds the password, such as MSSQL_PASSWORD")
	}
	if src.DialTimeoutSeconds < 0 || src.DialTimeoutSeconds > MaxDialTimeoutSeconds {
		ps.add("source.dial_timeout_seconds", "%d: want seconds %s; 0 = 30 s", src.DialTimeoutSeconds, upTo(0, MaxDialTimeoutSeconds, "s (an hour)"))
	}
	if src.LoginTimeoutSeconds < 0 || src.LoginTimeoutSeconds > MaxLoginTimeoutSeconds {
		ps.add("source.login_timeout_seconds", "%d: want seconds %s; 0 = the DSN's connection timeout, else 30 s", src.LoginTimeoutSeconds, upTo(0, MaxLoginTimeoutSeconds, "s (an hour)"))
	}
	src.connectionProblems(ps)
	if src.CaptureInstance == "" {
		ps.add("source.captureInstance", "required")
	} else if len(src.CaptureInstance) > 100 || strings.ContainsAny(src.CaptureInstance, "]") || strings.IndexFunc(src.CaptureInstance, unicode.IsControl) >= 0 {
		ps.add("source.captureInstance", "%q: at most 100 characters, no ']' and no control characters", src.CaptureInstance)
	}
}

func (o Options) validate(ps *problems) {
	if o.NumPartitions < 1 || o.NumPartitions > MaxNumPartitions {
		ps.add("options.numPartitions", "%d: want an integer %s", o.NumPartitions, upTo(1, MaxNumPartitions, ""))
	}
	if o.MaxCommitsPerBatch != nil && *o.MaxCommitsPerBatch < 1 {
		ps.add("options.maxCommitsPerBatch", "%d: want an integer >= 1 (leave it out for unlimited)", *o.MaxCommitsPerBatch)
	}
	switch startingKeyword(o.StartingLsn) {
	case "", StartEarliest, StartLatest:
	default:
		if _, err := lsn.Parse(o.StartingLsn); err != nil {
			ps.add("options.startingLsn", "%q: want earliest, latest or an LSN (0x + 20 hex digits)", o.StartingLsn)
		}
	}
	for i, k := range o.SnapshotKeys {
		if k == "" || strings.ContainsAny(k, "]") || strings.IndexFunc(k, unicode.IsControl) >= 0 {
			ps.add(fmt.Sprintf("options.snapshotKeys[%d]", i), "%q: a column name, without ']' or control characters", k)
		}
	}
	validateIsolation(ps, "options.isolationLevel", o.IsolationLevel)
	if o.LockTimeoutMs != nil && (*o.LockTimeoutMs < 0 || *o.LockTimeoutMs > MaxLockTimeoutMs) {
		ps.add("options.lockTimeoutMs", "%d: want milliseconds %s; leave it out to wait for ever (SET LOCK_TIMEOUT takes an int)", *o.LockTimeoutMs, upTo(0, MaxLockTimeoutMs, "ms (about 24.8 days)"))
	}
	if o.SnapshotLsn != "" {
		if _, err := lsn.Parse(o.SnapshotLsn); err != nil {
			ps.add("options.snapshotLsn", "%q: not an LSN", o.SnapshotLsn)
		}
	}
	switch o.SchemaChangePolicy {
	case SchemaChangeClassify, SchemaChangeFail:
	default:
		ps.add("options.schemaChangePolicy", "%q: want %q (the default) or %q", o.SchemaChangePolicy, SchemaChangeClassify, SchemaChangeFail)
	}
	seen := map[string]bool{}
	for i, c := range o.Columns {
		field := fmt.Sprintf("options.columns[%d]", i)
		switch {
		case c == "" || strings.ContainsAny(c, "]") || strings.IndexFunc(c, unicode.IsControl) >= 0:
			ps.add(field, "%q: a column name, without ']' or control characters", c)
		case seen[strings.ToLower(c)]:
			ps.add(field, "%q: listed twice (names compare ignoring case)", c)
		}
		seen[strings.ToLower(c)] = true
	}
	if o.Columns != nil && len(o.Columns) == 0 {
		ps.add("options.columns", "empty: list the columns to read, or leave it out to read every captured column")
	}
	if o.SourceTimeZone == "" || strings.ContainsAny(o.SourceTimeZone, "'\"[];") || strings.IndexFunc(o.SourceTimeZone, unicode.IsControl) >= 0 {
		ps.add("options.sourceTimeZone", "%q: want auto, UTC or a Windows time zone name", o.SourceTimeZone)
	}
}

func validateIsolation(ps *problems, field, v string) {
	switch v {
	case IsolationReadCommitted, IsolationSnapshot:
	default:
		ps.add(field, "%q: want %q or %q (never NOLOCK or READ UNCOMMITTED)", v, IsolationReadCommitted, IsolationSnapshot)
	}
}

func validateURL(ps *problems, field, v string, required bool) {
	if v == "" {
		if required {
			ps.add(field, "required (a local path, file:// or s3://bucket/prefix URL)")
		}
		return
	}
	if !strings.Contains(v, "://") {
		return // a local path
	}
	u, err := url.Parse(v)
	if err != nil {
		ps.add(field, "not a URL: %v", err)
		return
	}
	switch u.Scheme {
	case "file":
	case "s3", "s3a":
		if u.Host == "" {
			ps.add(field, "%q: no bucket", v)
		}
		if _, err := storage.CleanPrefix(u.Path); err != nil {
			ps.add(field, "%q: %v", v, strings.TrimPrefix(err.Error(), "storage: "))
		}
	default:
		ps.add(field, "scheme %q: want s3://, s3a://, file:// or a local path", u.Scheme)
	}
}

// sameLocation reports whether two table URLs name the same place: s3:// and s3a:// URLs
// of one bucket whose prefixes are equal under storage.CleanPrefix ("s3://b/lake//t/" is
// "s3a://b/lake/t"), or local paths equal once cleaned.
func sameLocation(a, b string) bool {
	return a == b || locationKey(a) == locationKey(b)
}

// locationKey is a table URL in the form sameLocation compares.
func locationKey(v string) string {
	if !strings.Contains(v, "://") {
		if rest, ok := strings.CutPrefix(v, "file:"); ok {
			v = rest
		}
		return "file:" + filepath.Clean(v)
	}
	u, err := url.Parse(v)
	if err != nil {
		return v
	}
	switch strings.ToLower(u.Scheme) {
	case "s3", "s3a":
		if p, err := storage.CleanPrefix(u.Path); err == nil {
			return "s3:" + u.Host + "/" + p
		}
	case "file":
		return "file:" + filepath.Clean(u.Path)
	}
	return v
}

func (st Storage) validate(ps *problems) {
	for _, f := range []struct{ name, v string }{{"storage.s3_endpoint", st.S3Endpoint}, {"storage.dynamo_endpoint", st.DynamoEndpoint}} {
		if f.v == "" {
			continue
		}
		if u, err := url.Parse(f.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ps.add(f.name, "%q: want an http(s):// URL", f.v)
		}
	}
	if st.DynamoRegion != "" && !regionName.MatchString(st.DynamoRegion) {
		ps.add("storage.dynamo_region", "%q: want an AWS region name such as %s", st.DynamoRegion, SparkDynamoRegion)
	}
	if st.Region != "" && !regionName.MatchString(st.Region) {
		ps.add("storage.region", "%q: want an AWS region name such as eu-west-1", st.Region)
	}
	switch st.TablePathScheme {
	case "", SchemeS3, SchemeS3A, SchemeS3N:
	default:
		ps.add("storage.table_path_scheme", "%q: want %q, %q or %q (lower case), the scheme the Spark writers use", st.TablePathScheme, SchemeS3A, SchemeS3, SchemeS3N)
	}
	if st.DynamoTable == "" {
		if st.DynamoRegion != "" {
			ps.add("storage.dynamo_region", "has no effect without storage.dynamo_table (commits use S3 conditional puts): set dynamo_table or remove it")
		}
		if st.TablePathScheme != "" {
			ps.add("storage.table_path_scheme", "has no effect without storage.dynamo_table (commits use S3 conditional puts): set dynamo_table or remove it")
		}
	}
}

// dsnPasswordParam reports whether the DSN's query gives a password (go-mssqldb's
// password=, or ADO's pwd=; keys compare ignoring case), which the Terraform module
// refuses too.
func dsnPasswordParam(u *url.URL) bool {
	for k := range u.Query() {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "pwd") {
			return true
		}
	}
	return false
}

// envName is an environment variable name: a letter or '_', then letters, digits and
// '_' (the POSIX portable shape, which Lambda and shells take).
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// regionName is an AWS region's shape ("eu-west-1", "us-gov-west-1").
var regionName = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
