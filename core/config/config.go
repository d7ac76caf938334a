// Package config is the table spec: one JSON document per table that says where the
// changes come from (a SQL Server capture instance), where they go (bronze, facts and the
// checkpoint) and how the jobs read them (docs/design.md §4.6, docs/spec.md).
//
// Names follow the Python original library, so a spec reads like its calls: source options
// keep its camelCase names (numPartitions, maxCommitsPerBatch, startingLsn, ...) and job
// parameters its snake_case names (app_id, checkpoint, facts_table, bootstrap, ...)
// (docs/reference/original-library.md §16). JSON field names match case-insensitively, as
// the original's options did; an unknown field is an error rather than a silent no-op.
//
// Parse decodes and applies defaults; Validate collects every problem into one
// *ConfigError. Secrets are resolved by the caller (main or the CLI) through Password, so
// this package reads no environment and calls no AWS API.
package config

import (
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Spec is one table's spec. The zero value is not valid; use Parse (which applies
// Defaults) or fill it and call Defaults and Validate.
type Spec struct {
	// AppID is the sink identity (Delta txn appId of bronze appends; facts rows use
	// "<app_id>#facts"). Keep one per checkpoint for its whole life
	// (docs/reference/original-library.md §5.2).
	AppID string `json:"app_id"`
	// Source is how to reach SQL Server and which capture instance to read.
	Source Source `json:"source"`
	// Options are the original library's source options.
	Options Options `json:"options"`

	// Bronze is the bronze Delta table's URL: a local path, file://, or s3://bucket/prefix.
	Bronze string `json:"bronze"`
	// Checkpoint is the checkpoint prefix URL (offsets/, commits/; docs/design.md §4.5).
	Checkpoint string `json:"checkpoint"`
	// FactsTable is the facts Delta table's URL; many tables may share one.
	FactsTable string `json:"facts_table"`

	// Bootstrap takes (or finds) a snapshot before the first batch; not with startingLsn.
	Bootstrap bool `json:"bootstrap"`
	// Snapshot is the snapshot mode: "full" (the default: the bootstrap machine reads the
	// whole table at one LSN) or "chunked" (the stream opens the snapshot at S and starts
	// at once; the backfill machine reads it in waves of chunks: docs/snapshots.md).
	Snapshot string `json:"snapshot"`
	// ChunkRows is the rows per chunk of a chunked snapshot; nil when unset. Set only with
	// snapshot "chunked".
	ChunkRows *int64 `json:"chunk_rows"`
	// MaxSeconds bounds one invocation's work in seconds; 0 means only the invocation's
	// deadline bounds it.
	MaxSeconds float64 `json:"max_seconds"`
	// MaxWaves bounds the waves of one backfill call; 0 means no bound; nil when unset.
	// Chunked snapshots only.
	MaxWaves *int `json:"max_waves"`
	// MinHeadroomHours pauses a backfill while the stream's retention headroom is lower;
	// nil when unset. Chunked snapshots only.
	MinHeadroomHours *float64 `json:"min_headroom_hours"`
	// TargetWaveSeconds is how long a backfill wave aims to read; 0 reads one round; nil
	// when unset. Chunked snapshots only.
	TargetWaveSeconds *float64 `json:"target_wave_seconds"`
	// Isolation overrides Options.IsolationLevel for snapshot reads: "" (inherit),
	// "readCommitted" or "snapshot".
	Isolation string `json:"isolation"`

	// OnDataLoss is what the stream does when CDC cleanup purged changes it has not read:
	// "fail" (the default, DataLossError) or "resnapshot" (open a new generation with a
	// new snapshot in the table's snapshot mode and go on; docs/stream.md "Data loss").
	OnDataLoss string `json:"on_data_loss"`
	// ResnapshotIntervalDays allows at most one automatic re-snapshot or failed attempt per
	// this many days (default 7; 0 allows an immediate retry); nil when unset. A loss
	// inside it is a DataLossError naming the previous one.
	ResnapshotIntervalDays *float64 `json:"resnapshot_interval_days"`
	// SnapshotOnSwitch appends a whole snapshot after the first batch that reads a newer
	// capture instance, so rows unchanged since its start carry its new columns
	// (docs/stream.md "Schema changes"): with snapshot "full" the stream returns
	// stream.OutcomeSwitchSnapshotRequired and the recover steps take it; with snapshot
	// "chunked" the stream opens a chunked snapshot of kind switch and the backfill reads
	// it.
	SnapshotOnSwitch bool `json:"snapshot_on_switch"`

	// Storage is how the tables' URLs are reached (S3 endpoint, DynamoDB log table).
	Storage Storage `json:"storage"`

	// Silver is the current table the apply function keeps from bronze (docs/silver.md);
	// nil when the spec keeps none.
	Silver *Silver `json:"silver"`

	// Reconcile is how the reconcile function (functions/reconcile, scheduled) compares
	// silver with the source table (docs/reconcile.md); nil when the spec runs none.
	// Needs Silver.
	Reconcile *Reconcile `json:"reconcile"`
}

// Reconcile is where the scheduled reconcile writes its report and how closely it
// compares (docs/reconcile.md; `mssqlcdc reconcile` takes the same as flags).
type Reconcile struct {
	// ReportTable is the Delta report table's URL (a local path, file:// or
	// s3://bucket/prefix), created by the first run; it must differ from the other tables.
	ReportTable string `json:"report_table"`
	// BucketRows is how many rows a tier-1 bucket aims to hold (0: 1,000,000).
	BucketRows int64 `json:"bucket_rows"`
	// Sample is the fraction of matching buckets also compared row by row, 0 to 1 (nil:
	// DefaultReconcileSample).
	Sample *float64 `json:"sample"`
}

// DefaultReconcileSample is the fraction of matching buckets a reconcile compares row by
// row when reconcile.sample is not set.
const DefaultReconcileSample = 0.01

// SampleOr is the sample fraction: Sample, else DefaultReconcileSample.
func (r *Reconcile) SampleOr() float64 {
	if r.Sample == nil {
		return DefaultReconcileSample
	}
	return *r.Sample
}

// Silver is where and how the apply function (functions/apply, `mssqlcdc apply`) keeps
// the current table from bronze (docs/silver.md).
type Silver struct {
	// Table is the silver Delta table's URL (a local path, file:// or s3://bucket/prefix),
	// created by the first apply; it must differ from bronze, checkpoint and facts_table.
	Table string `json:"table"`
	// Keys are silver's key columns, the source table's primary key; empty uses
	// options.snapshotKeys, else the keys silver recorded at its first apply.
	Keys []string `json:"keys"`
	// MaxSeconds bounds one apply invocation in seconds (0: only the invocation's deadline
	// less the handler's margin).
	MaxSeconds float64 `json:"max_seconds"`
	// MemoryMB bounds the bronze rows one key range holds, in MiB (0: 256,
	// silver.DefaultMemoryBytes); MinSilverMemoryMB to MaxSilverMemoryMB.
	MemoryMB int64 `json:"memory_mb"`
	// CopyOnWrite turns deletion vectors off: every file that loses a row is rewritten.
	CopyOnWrite bool `json:"copy_on_write"`
}

// Bounds of Silver.MemoryMB (a Lambda has at most 10,240 MB).
const (
	MinSilverMemoryMB = 1
	MaxSilverMemoryMB = 8192
)

// SilverKeys are the key columns the apply uses: silver.keys, else options.snapshotKeys;
// nil lets silver use the keys it recorded.
func (s *Spec) SilverKeys() []string {
	if s.Silver != nil && len(s.Silver.Keys) > 0 {
		return s.Silver.Keys
	}
	return s.Options.SnapshotKeys
}

// Source is the SQL Server connection and capture instance.
type Source struct {
	// DSN is a go-mssqldb URL, "sqlserver://user@host:1433?database=db". A password in it
	// is refused when PasswordEnv or PasswordSecretARN is set.
	DSN string `json:"dsn"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `json:"password_env"`
	// PasswordSecretARN is an AWS Secrets Manager secret holding the password, as plain
	// text or as JSON with a "password" key (the RDS secret shape).
	PasswordSecretARN string `json:"password_secret_arn"`
	// CaptureInstance is the capture instance name, matched exactly first, then ignoring
	// case (source.Resolve).
	CaptureInstance string `json:"captureInstance"`

	// Encrypt is "" or "true" (the default: the session encrypted, the certificate
	// verified), "strict" (TDS 8.0), or "false"/"disable" (development sources only).
	// The DSN's own encrypt setting counts the same (docs/reference/sqlserver-cdc.md §13.3).
	Encrypt string `json:"encrypt"`
	// TrustServerCertificate skips certificate verification: development sources only.
	TrustServerCertificate bool `json:"trust_server_certificate"`
	// Certificate is the path of the CA (PEM or DER) the server's certificate must chain
	// to, e.g. the Amazon RDS bundle shipped with the function; "" uses the system's roots.
	Certificate string `json:"certificate"`
	// HostNameInCertificate is the name the certificate carries when it is not the DSN's
	// host.
	HostNameInCertificate string `json:"host_name_in_certificate"`
	// Development marks a source that is no production server (a local container): only
	// it may turn encryption or certificate verification off.
	Development bool `json:"development"`
	// DialTimeoutSeconds bounds opening a TCP connection; 0 means 30 s.
	DialTimeoutSeconds int `json:"dial_timeout_seconds"`
	// LoginTimeoutSeconds bounds the login on a connection SQL Server accepted; 0 means
	// the DSN's connection timeout, else 30 s (mssql.Options.LoginTimeout).
	LoginTimeoutSeconds int `json:"login_timeout_seconds"`
	// Auth is how the login authenticates: "sql" (the default, a SQL Server login),
	// "ntlm" (an Active Directory account, DOMAIN\user in the DSN) or
	// "entra-service-principal" (Microsoft Entra ID: TenantID, ClientID, and the client
	// secret as the password). Kerberos is not available.
	Auth string `json:"auth"`
	// TenantID and ClientID identify the Entra ID application ("entra-service-principal").
	TenantID string `json:"tenant_id"`
	ClientID string `json:"client_id"`
}

// Options are the original library's source options, under their names
// (docs/reference/original-library.md §16).
type Options struct {
	// NumPartitions is the most ranges (connections) one batch or snapshot reads at once.
	NumPartitions int `json:"numPartitions"`
	// MaxCommitsPerBatch bounds a batch to this many commits of cdc.lsn_time_mapping,
	// counted database-wide; nil is unlimited. 0 is an error (not "unlimited").
	MaxCommitsPerBatch *int `json:"maxCommitsPerBatch"`
	// StartingLsn is "earliest", "latest" or an LSN taken as already processed; used only
	// when the checkpoint has no offsets (docs/reference/sqlserver-cdc.md §1.6).
	StartingLsn string `json:"startingLsn"`
	// SnapshotKeys are the key columns of snapshots; empty uses the unique index of the
	// capture instance.
	SnapshotKeys []string `json:"snapshotKeys"`
	// IsolationLevel of source-table reads: "readCommitted" or "snapshot". Never NOLOCK.
	IsolationLevel string `json:"isolationLevel"`
	// LockTimeoutMs is SET LOCK_TIMEOUT for source-table reads; nil waits for ever.
	LockTimeoutMs *int `json:"lockTimeoutMs"`
	// SnapshotLsn stamps a snapshot with this LSN instead of max_lsn before the read.
	SnapshotLsn string `json:"snapshotLsn"`
	// SourceTimeZone is "auto", "UTC" or a Windows zone name: how tran_end_time converts
	// to UTC.
	SourceTimeZone string `json:"sourceTimeZone"`
	// IncludeCommandID reads __$command_id and orders by it (default true). false is for
	// change tables left without the column by a failed upgrade step (SQL Server 2012–2016
	// before KB3030352): rows are then ordered by (start_lsn, seqval, operation) and
	// _command_id is NULL.
	IncludeCommandID *bool `json:"includeCommandId"`
	// FailOnDataLoss stops with DataLossError when changes were purged before being read
	// (default true); false skips ahead and records a data_skipped facts row.
	FailOnDataLoss *bool `json:"failOnDataLoss"`
	// SchemaChangePolicy is what DDL on the source table inside a batch does: "classify"
	// (the default: go on, or SchemaChangedError for a type bronze cannot hold, per
	// docs/stream.md "Schema changes") or "fail" (any DDL is a SchemaChangedError).
	SchemaChangePolicy string `json:"schemaChangePolicy"`
	// Columns, when set, are the captured columns the stream and the snapshots read, by
	// name (matched ignoring case); the others, types bronze cannot hold among them, are
	// left out. Checked against the capture instance at the start of each invocation: a
	// declared column the instance lacks reads NULL, with a warning. Key columns must be
	// listed.
	Columns []string `json:"columns"`
}

// Storage is how table URLs are opened (deltalog/location.Config).
type Storage struct {
	// Region of S3 and DynamoDB; empty uses the SDK's default chain.
	Region string `json:"region"`
	// S3Endpoint overrides the S3 endpoint (emulators, S3-compatible stores).
	S3Endpoint string `json:"s3_endpoint"`
	// S3PathStyle addresses buckets in the path instead of the host name.
	S3PathStyle bool `json:"s3_path_style"`
	// DynamoTable is the DynamoDB table of the S3DynamoDBLogStore ("delta_log"); empty
	// commits with S3 conditional puts instead.
	DynamoTable string `json:"dynamo_table"`
	// DynamoEndpoint overrides the DynamoDB endpoint (emulators).
	DynamoEndpoint string `json:"dynamo_endpoint"`
	// DynamoRegion is the DynamoDB log table's region; empty: Region (then the SDK's
	// chain). Every writer of a table must use the same table in the same region: Spark's
	// S3DynamoDBLogStore defaults ddb.region to SparkDynamoRegion whatever the bucket's
	// region (docs/reference/delta-protocol.md §13.3), so set it to that next to Spark
	// writers left at their defaults. Only with DynamoTable.
	DynamoRegion string `json:"dynamo_region"`
	// TablePathScheme is the scheme of the log table's tablePath key: "s3", "s3a" or
	// "s3n", the scheme the Spark writers use (s3a for OSS Spark with hadoop-aws, often s3
	// on EMR). Spark keys by the path as the job wrote it, so s3://b/t and s3a://b/t get no
	// mutual exclusion (docs/reference/delta-protocol.md §13.4). Empty: each URL's own
	// scheme. Only with DynamoTable.
	TablePathScheme string `json:"table_path_scheme"`
}

// Defaults, named so docs and tests can cite them.
const (
	// DefaultNumPartitions: connections per batch. The original used the cluster's
	// parallelism; a Lambda has a few vCPUs and SQL Server is the shared resource.
	DefaultNumPartitions = 4
	// DefaultStartingLsn reads from the oldest capture instance's min_lsn.
	DefaultStartingLsn = StartEarliest
	// DefaultIsolationLevel reads the source table under READ COMMITTED.
	DefaultIsolationLevel = IsolationReadCommitted
	// DefaultSourceTimeZone detects the server's zone (CURRENT_TIMEZONE_ID on 2022+).
	DefaultSourceTimeZone = "auto"
	// DefaultSnapshot is the snapshot mode.
	DefaultSnapshot = SnapshotFull
	// DefaultChunkRows is the chunk size the original library's guide uses
	// (docs/reference/original-library.md §16).
	DefaultChunkRows = 1_000_000
	// DefaultTargetWaveSeconds is the original's 5 minutes per backfill wave
	// (docs/reference/original-library.md §10.3).
	DefaultTargetWaveSeconds = 300.0
	// DefaultMinHeadroomHours is the pause threshold the original library's guide uses
	// (docs/reference/original-library.md §16).
	DefaultMinHeadroomHours = 24.0
	// DefaultOnDataLoss fails the stream on data loss.
	DefaultOnDataLoss = OnDataLossFail
	// DefaultResnapshotIntervalDays is the original's anti-loop interval
	// (docs/reference/original-library.md §7.5): keep it above the CDC retention.
	DefaultResnapshotIntervalDays = 7.0
	// DefaultSchemaChangePolicy classifies DDL by kind.
	DefaultSchemaChangePolicy = SchemaChangeClassify
	// DefaultDynamoTable is Delta's S3DynamoDBLogStore default table name; it applies only
	// when Storage.DynamoTable is set to it explicitly (empty means conditional put).
	DefaultDynamoTable = "delta_log"
	// SparkDynamoRegion is the region Spark's S3DynamoDBLogStore uses for its log table
	// when ddb.region is unset, whatever the bucket's region
	// (docs/reference/delta-protocol.md §13.3).
	// It is not a default here (an unset Storage.DynamoRegion follows Storage.Region, where
	// the Terraform module grants the table); set DynamoRegion to it to share a table's
	// commits with such Spark jobs.
	SparkDynamoRegion = "us-east-1"
)

// tablePath schemes of the DynamoDB log store's keys (Storage.TablePathScheme): the
// Hadoop file systems that reach S3.
const (
	SchemeS3  = "s3"
	SchemeS3A = "s3a"
	SchemeS3N = "s3n"
)

// startingLsn keywords, snapshot modes and isolation names.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"

	SnapshotFull    = "full"
	SnapshotChunked = "chunked"

	IsolationReadCommitted = "readCommitted"
	IsolationSnapshot      = "snapshot"

	OnDataLossFail       = "fail"
	OnDataLossResnapshot = "resnapshot"

	SchemaChangeClassify = "classify"
	SchemaChangeFail     = "fail"
)

// Defaults fills unset fields with the named defaults. Parse calls it.
func (s *Spec) Defaults() {
	if s.Options.NumPartitions == 0 {
		s.Options.NumPartitions = DefaultNumPartitions
	}
	if s.Options.StartingLsn == "" && !s.Bootstrap {
		s.Options.StartingLsn = DefaultStartingLsn
	}
	s.Options.StartingLsn = startingKeyword(s.Options.StartingLsn)
	if s.Options.IsolationLevel == "" {
		s.Options.IsolationLevel = DefaultIsolationLevel
	}
	if s.Options.SourceTimeZone == "" {
		s.Options.SourceTimeZone = DefaultSourceTimeZone
	}
	if s.Options.FailOnDataLoss == nil {
		t := true
		s.Options.FailOnDataLoss = &t
	}
	if s.Snapshot == "" {
		s.Snapshot = DefaultSnapshot
	}
	if s.OnDataLoss == "" {
		s.OnDataLoss = DefaultOnDataLoss
	}
	if s.ResnapshotIntervalDays == nil {
		v := DefaultResnapshotIntervalDays
		s.ResnapshotIntervalDays = &v
	}
	if s.Options.SchemaChangePolicy == "" {
		s.Options.SchemaChangePolicy = DefaultSchemaChangePolicy
	}
	if s.Snapshot == SnapshotChunked {
		// The chunked-only parameters take their defaults only in that mode, so that
		// Validate can tell a set one (refused with snapshot "full") from an unset one.
		if s.ChunkRows == nil {
			v := int64(DefaultChunkRows)
			s.ChunkRows = &v
		}
		if s.MinHeadroomHours == nil {
			v := DefaultMinHeadroomHours
			s.MinHeadroomHours = &v
		}
		if s.TargetWaveSeconds == nil {
			v := DefaultTargetWaveSeconds
			s.TargetWaveSeconds = &v
		}
	}
}

// PlansSuffix names a chunked snapshot's plans table after bronze (docs/design.md §4.4).
const PlansSuffix = "_snapshot_plans"

// PlansTable is the URL of the plans table next to bronze: <bronze>_snapshot_plans (a
// trailing slash of bronze dropped). It holds key values: give it bronze's access policy.
func (s *Spec) PlansTable() string { return strings.TrimRight(s.Bronze, "/") + PlansSuffix }

// FailsOnDataLoss is Options.FailOnDataLoss with its default (true).
func (s *Spec) FailsOnDataLoss() bool {
	return s.Options.FailOnDataLoss == nil || *s.Options.FailOnDataLoss
}

// startingKeyword returns StartEarliest or StartLatest for those words in any case
// ("LATEST"), and v unchanged otherwise.
func startingKeyword(v string) string {
	for _, k := range []string{StartEarliest, StartLatest} {
		if strings.EqualFold(v, k) {
			return k
		}
	}
	return v
}

// Resnapshots reports whether the stream re-snapshots by itself on data loss
// (on_data_loss "resnapshot").
func (s *Spec) Resnapshots() bool { return s.OnDataLoss == OnDataLossResnapshot }

// ResnapshotInterval is resnapshot_interval_days as a duration (the default when unset).
func (s *Spec) ResnapshotInterval() time.Duration {
	d := DefaultResnapshotIntervalDays
	if s.ResnapshotIntervalDays != nil {
		d = *s.ResnapshotIntervalDays
	}
	return time.Duration(d * 24 * float64(time.Hour))
}

// FailsOnDDL reports whether any DDL inside a batch stops the stream (schemaChangePolicy
// "fail").
func (s *Spec) FailsOnDDL() bool { return s.Options.SchemaChangePolicy == SchemaChangeFail }

// Starting is the parsed startingLsn: kind is StartEarliest, StartLatest or "lsn" with the
// LSN. The keywords are taken in any case. Call after Validate.
func (s *Spec) Starting() (kind string, l lsn.LSN) {
	switch startingKeyword(s.Options.StartingLsn) {
	case "", StartEarliest:
		return StartEarliest, lsn.Zero
	case StartLatest:
		return StartLatest, lsn.Zero
	}
	l, _ = lsn.Parse(s.Options.StartingLsn)
	return "lsn", l
}

// EffectiveIsolation is the snapshot read isolation: Isolation when set, else
// Options.IsolationLevel, as the original's backfill did (docs/reference/original-library.md
// §10.3).
func (s *Spec) EffectiveIsolation() string {
	if s.Isolation != "" {
		return s.Isolation
	}
	return s.Options.IsolationLevel
}
