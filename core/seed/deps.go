package seed

import (
	"context"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Deps are what the steps work with: the table spec and the connections, which the caller
// opens and closes. Each step is a function of them and of what the previous step
// returned, so a Lambda invocation, the CLI and a test run the same code.
type Deps struct {
	// Spec is the validated table spec: app_id (the seed's txn is <app_id>#seed.<L>, the
	// bootstrap facts row carries it), the bronze URL, the capture instance.
	Spec *config.Spec
	// Source is the SQL Server: as_of is mapped on its clock, its retention checked. The
	// convert step does not use it.
	Source source.Source
	// Bronze is the table the seed is appended to.
	Bronze *deltalog.Table
	// Facts is the facts table: the mode lock reads it, the bootstrap row goes to it. nil:
	// no facts table (no row, no mode lock).
	Facts *deltalog.Table
	// Staging is the checkpoint prefix: the seed's plan and its file groups' manifests live
	// under seeds/<L>/<plan>/ between invocations (docs/seed.md § Staging).
	Staging storage.Store
	// OpenCopy opens the copy's URL (a local path, file:// or s3://) as a Delta table
	// handle; a folder without a Delta log opens too (its version is -1), and its Store
	// lists the Parquet files. The composition root supplies it (internal/connect).
	OpenCopy func(ctx context.Context, url string) (*deltalog.Table, error)
	// Options tune the run; the zero value is the seed machine's.
	Options Options
}

// Options tune a seed.
type Options struct {
	// GroupBytes is the copy's Parquet bytes one convert invocation aims at
	// (DefaultGroupBytes when 0); a file is never split, and the groups grow when the copy
	// would need more than MaxGroups.
	GroupBytes int64
	// MaxGroups bounds the file groups (DefaultMaxGroups when 0): the seed machine's Map
	// runs inline, so each group adds to the execution's history.
	MaxGroups int
	// Parallelism is how many groups are converted at once: the Map's MaxConcurrency, and
	// Run's width (DefaultParallelism when 0).
	Parallelism int
	// Writer tunes the bronze Parquet files; zero fields take ingest.Options' defaults.
	Writer parquetio.WriterOptions
	// DecodeAll converts every column by decoding and encoding it again: no column chunk
	// of the copy is written into bronze as it is (docs/seed.md § Conversion), so every
	// bronze file has the writer's own codec and encodings.
	DecodeAll bool
	// Now is the clock (started_at, written_at); time.Now when nil.
	Now func() time.Time
	// Progress, when set, is told of each file group Run converts (the CLI prints it).
	Progress func(Progress)
}

// Defaults of Options.
const (
	// DefaultGroupBytes: 512 MiB of the copy's Parquet per convert invocation. At the
	// conversion rate measured in docs/seed.md § Numbers this is well inside a Lambda's
	// 15 minutes on one vCPU.
	DefaultGroupBytes = 512 << 20
	// DefaultMaxGroups is the inline Map's bound, as the bootstrap machine's
	// (docs/decisions/0008-bootstrap-map-inline-400-ranges.md).
	DefaultMaxGroups = 400
	// DefaultParallelism: groups converted at once. They read only the copy and write
	// bronze (no SQL Server connection), so S3's throughput is the limit.
	DefaultParallelism = 8
)

func (d Deps) now() time.Time {
	if d.Options.Now != nil {
		return d.Options.Now().UTC()
	}
	return time.Now().UTC()
}

func (o Options) groupBytes() int64 {
	if o.GroupBytes > 0 {
		return o.GroupBytes
	}
	return DefaultGroupBytes
}

func (o Options) maxGroups() int {
	if o.MaxGroups > 0 {
		return o.MaxGroups
	}
	return DefaultMaxGroups
}

func (o Options) parallelism() int {
	if o.Parallelism > 0 {
		return o.Parallelism
	}
	return DefaultParallelism
}
