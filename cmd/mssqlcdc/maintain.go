package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

func init() {
	register(command{
		name:    "maintain",
		summary: "Delta maintenance: delete expired log files (--cleanup-log) and unreferenced data files (--vacuum)",
		run:     runMaintain,
	})
}

// The table properties that set each operation's retention, and their defaults
// (docs/reference/delta-protocol.md §11.1, §11.2, §11.4).
const (
	logRetentionKey     = "delta.logRetentionDuration"
	deletedRetentionKey = "delta.deletedFileRetentionDuration"
)

// maintainReport is what maintain prints; with --json, this JSON object. An operation
// not asked for is null.
type maintainReport struct {
	Table      string            `json:"table"`
	DryRun     bool              `json:"dryRun"`
	Vacuum     *maintainOpResult `json:"vacuum"`
	CleanupLog *maintainOpResult `json:"cleanupLog"`
}

// maintainOpResult is one operation's outcome.
type maintainOpResult struct {
	// RetentionHours is the retention used, in hours.
	RetentionHours float64 `json:"retentionHours"`
	// MinimumHours is the table's configured retention (its property, else the Delta
	// default), the lowest RetentionHours accepted without --force.
	MinimumHours float64 `json:"minimumHours"`
	// DeletedFiles and DeletedBytes count what was deleted (with --dry-run: would be).
	DeletedFiles int   `json:"deletedFiles"`
	DeletedBytes int64 `json:"deletedBytes"`
	// Deleted are the keys, relative to the table root.
	Deleted []string `json:"deleted"`
	// Vacuum only: the snapshot version whose references were kept, and the files kept
	// because that snapshot references them (Protected) or because they are younger than
	// the retention (TooNew).
	Version   *int64 `json:"version,omitempty"`
	Protected *int   `json:"protected,omitempty"`
	TooNew    *int   `json:"tooNew,omitempty"`
	// Log clean-up only: the checkpoint the kept log starts from; null when no
	// checkpoint is old enough and nothing was deleted.
	Checkpoint *int64 `json:"checkpoint,omitempty"`
	// Log clean-up only: the cut-off, midnight UTC of the day the retention ago (RFC
	// 3339); only commits at or before it expire.
	Cutoff *time.Time `json:"cutoff,omitempty"`
}

// retentionFlag is --retention: a Go duration ("168h") or a Delta interval ("7 days",
// "interval 1 week"); 0 (unset) means the table's configured retention.
type retentionFlag struct{ d time.Duration }

func (r *retentionFlag) String() string {
	if r == nil || r.d == 0 {
		return ""
	}
	return r.d.String()
}

func (r *retentionFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if d, err = deltalog.ParseInterval(s); err != nil {
			return fmt.Errorf("want a duration such as 168h or an interval such as \"7 days\": %q", s)
		}
	}
	if d <= 0 {
		return fmt.Errorf("retention must be positive: %q", s)
	}
	r.d = d
	return nil
}

// RetentionTooShortError: --retention is below the table's configured retention for an
// operation, and --force was not given.
type RetentionTooShortError struct {
	// Op is "vacuum" or "cleanup-log"; Property the table property that sets Minimum.
	Op, Property       string
	Retention, Minimum time.Duration
}

func (e *RetentionTooShortError) Error() string {
	return fmt.Sprintf("%s: retention %s is below the table's %s (%s): readers of older versions and writers mid-commit could lose files; pass --force to do it anyway",
		e.Op, readableDuration(e.Retention), e.Property, readableDuration(e.Minimum))
}

func maintainUsage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: mssqlcdc maintain TABLE_URL [--cleanup-log] [--vacuum] [--dry-run] [--retention DURATION] [--force] [--json] [-v]")
		fmt.Fprintln(w, "TABLE_URL is a path, file:///path or s3://bucket/prefix. Give --cleanup-log, --vacuum or both.")
		fmt.Fprintln(w, "--cleanup-log deletes log files older than the newest checkpoint before the retention")
		fmt.Fprintln(w, "(default delta.logRetentionDuration, else 30 days). Its cut-off is midnight UTC of the")
		fmt.Fprintln(w, "day the retention ago (Spark's rule): with 30 days, a run at any hour of 31 Dec keeps")
		fmt.Fprintln(w, "every commit from 1 Dec 00:00 UTC on, so up to a day more than the retention is kept.")
		fmt.Fprintln(w, "--vacuum deletes data files no")
		fmt.Fprintln(w, "snapshot within the retention references and older than it (default")
		fmt.Fprintln(w, "delta.deletedFileRetentionDuration, else 7 days). A --retention below the table's")
		fmt.Fprintln(w, "configured value is refused unless --force.")
		fs.PrintDefaults()
	}
}

func runMaintain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("maintain", stderr)
	fs.Usage = maintainUsage(fs)
	cleanup := fs.Bool("cleanup-log", false, "delete expired _delta_log files (docs/reference/delta-protocol.md §11.2)")
	vacuum := fs.Bool("vacuum", false, "delete data files the table no longer references (VACUUM)")
	dryRun := fs.Bool("dry-run", false, "list what would be deleted; delete nothing")
	var retention retentionFlag
	fs.Var(&retention, "retention", "retention for each operation, e.g. 168h or \"7 days\" (default: the table's property, else the Delta default)")
	force := fs.Bool("force", false, "allow a --retention below the table's configured retention")
	asJSON := fs.Bool("json", false, "print a JSON object instead of text")
	verbose := fs.Bool("v", false, "list every file deleted (or, with --dry-run, that would be)")
	cfg := addTableFlags(fs)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return &usageError{msg: "want exactly one TABLE_URL (a path, file:// or s3:// URL)"}
	}
	if !*cleanup && !*vacuum {
		return &usageError{msg: "nothing to do: give --cleanup-log, --vacuum or both"}
	}
	rep, err := maintainTable(ctx, positional[0], *cfg, maintainOptions{
		cleanupLog: *cleanup, vacuum: *vacuum, dryRun: *dryRun, retention: retention.d, force: *force,
		progress: newVacuumProgress(stderr),
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printMaintain(stdout, rep, *verbose)
	return nil
}

type maintainOptions struct {
	cleanupLog, vacuum, dryRun, force bool
	// retention is 0 for each operation's configured retention.
	retention time.Duration
	// progress, when set, shows how vacuum's listing of the table goes.
	progress *vacuumProgress
}

// vacuumProgress prints how a vacuum's listing goes (deltalog.VacuumOptions.Progress): a
// line when it starts, and at most one per every with the counts so far. A table of
// hundreds of thousands of files takes minutes to list on S3.
type vacuumProgress struct {
	out   io.Writer
	now   func() time.Time
	every time.Duration
	// listEvery is VacuumOptions.ProgressEvery (0: its default).
	listEvery int
	shown     time.Time
}

func newVacuumProgress(out io.Writer) *vacuumProgress {
	return &vacuumProgress{out: out, now: time.Now, every: progressEvery}
}

func (p *vacuumProgress) start(url string, version int64) {
	p.shown = p.now()
	fmt.Fprintf(p.out, "vacuum: listing %s for files version %d does not reference\n", url, version)
}

func (p *vacuumProgress) report(listed int, so deltalog.VacuumResult) {
	if now := p.now(); now.Sub(p.shown) >= p.every {
		p.shown = now
		fmt.Fprintf(p.out, "vacuum: %s objects listed; so far %s to delete, %s referenced, %s younger than the retention\n",
			thousands(int64(listed)), thousands(int64(len(so.Deleted))), thousands(int64(so.Protected)), thousands(int64(so.TooNew)))
	}
}

// maintainTable checks both retentions before deleting anything, then vacuums, then
// cleans the log.
func maintainTable(ctx context.Context, url string, cfg location.Config, o maintainOptions) (*maintainReport, error) {
	store, logs, err := location.Open(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	tbl := deltalog.Open(store, logs, deltalog.Options{})
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if snap.Version() < 0 {
		return nil, fmt.Errorf("%s: %w", url, errNoTable)
	}
	md := snap.Metadata()
	rep := &maintainReport{Table: store.URL(), DryRun: o.dryRun}
	type plan struct {
		op, property   string
		def            time.Duration
		retention, min time.Duration
	}
	var vac, clean *plan
	if o.vacuum {
		vac = &plan{op: "vacuum", property: deletedRetentionKey, def: deltalog.DefaultTombstoneRetention}
	}
	if o.cleanupLog {
		clean = &plan{op: "cleanup-log", property: logRetentionKey, def: deltalog.DefaultLogRetention}
	}
	for _, p := range []*plan{vac, clean} {
		if p == nil {
			continue
		}
		p.min = p.def
		if v, ok := md.Configuration[p.property]; ok {
			if p.min, err = deltalog.ParseInterval(v); err != nil {
				return nil, fmt.Errorf("%s: %w", p.property, err)
			}
		}
		p.retention = o.retention
		if p.retention == 0 {
			p.retention = p.min
		}
		if p.retention < p.min && !o.force {
			return nil, &RetentionTooShortError{Op: p.op, Property: p.property, Retention: p.retention, Minimum: p.min}
		}
	}
	if vac != nil {
		sizes, err := objectSizes(ctx, store, "")
		if err != nil {
			return nil, err
		}
		vo := deltalog.VacuumOptions{Retention: vac.retention, DryRun: o.dryRun}
		if p := o.progress; p != nil {
			p.start(store.URL(), snap.Version())
			vo.Progress, vo.ProgressEvery = p.report, p.listEvery
		}
		res, err := tbl.Vacuum(ctx, vo)
		if err != nil {
			return nil, err
		}
		r := newOpResult(vac.retention, vac.min, res.Deleted, sizes)
		r.Version, r.Protected, r.TooNew = &res.Version, &res.Protected, &res.TooNew
		rep.Vacuum = r
	}
	if clean != nil {
		sizes, err := objectSizes(ctx, store, deltalog.LogDir)
		if err != nil {
			return nil, err
		}
		res, err := tbl.CleanupLog(ctx, deltalog.CleanupOptions{Retention: clean.retention, DryRun: o.dryRun})
		if err != nil {
			return nil, err
		}
		r := newOpResult(clean.retention, clean.min, res.Deleted, sizes)
		if res.Checkpoint >= 0 {
			r.Checkpoint = &res.Checkpoint
		}
		if !res.Cutoff.IsZero() {
			r.Cutoff = &res.Cutoff
		}
		rep.CleanupLog = r
	}
	return rep, nil
}

// objectSizes lists the sizes of the objects under prefix, so the report can add up the
// bytes of the files an operation deletes (its result names only their keys).
func objectSizes(ctx context.Context, store storage.Store, prefix string) (map[string]int64, error) {
	sizes := map[string]int64{}
	for oi, err := range store.List(ctx, prefix, "") {
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", prefix, err)
		}
		sizes[oi.Key] = oi.Size
	}
	return sizes, nil
}

func newOpResult(retention, minimum time.Duration, deleted []string, sizes map[string]int64) *maintainOpResult {
	r := &maintainOpResult{
		RetentionHours: retention.Hours(), MinimumHours: minimum.Hours(),
		DeletedFiles: len(deleted), Deleted: deleted,
	}
	if r.Deleted == nil {
		r.Deleted = []string{}
	}
	for _, k := range deleted {
		r.DeletedBytes += sizes[k]
	}
	return r
}

func printMaintain(w io.Writer, r *maintainReport, verbose bool) {
	verb := "deleted"
	if r.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "table: %s\n", r.Table)
	if v := r.Vacuum; v != nil {
		fmt.Fprintf(w, "vacuum: %s %d %s (%d bytes); kept %d referenced by version %d, %d younger than the retention (retention %s)\n",
			verb, v.DeletedFiles, plural(v.DeletedFiles, "file"), v.DeletedBytes, *v.Protected, *v.Version, *v.TooNew, readableHours(v.RetentionHours))
		printKeys(w, v.Deleted, verbose)
	}
	if c := r.CleanupLog; c != nil {
		where := "no checkpoint is older than the retention"
		if c.Checkpoint != nil {
			where = fmt.Sprintf("the log starts at checkpoint %d", *c.Checkpoint)
		}
		cut := ""
		if c.Cutoff != nil {
			cut = fmt.Sprintf("; cut-off %s, midnight UTC %s ago", c.Cutoff.UTC().Format("2006-01-02 15:04 UTC"), readableHours(c.RetentionHours))
		}
		fmt.Fprintf(w, "cleanup-log: %s %d %s (%d bytes); %s (retention %s%s)\n",
			verb, c.DeletedFiles, plural(c.DeletedFiles, "file"), c.DeletedBytes, where, readableHours(c.RetentionHours), cut)
		printKeys(w, c.Deleted, verbose)
	}
}

func printKeys(w io.Writer, keys []string, verbose bool) {
	if !verbose {
		return
	}
	for _, k := range keys {
		fmt.Fprintf(w, "  %s\n", k)
	}
}

// plural is word for n of them: "1 file", "2 files", "2 batches".
func plural(n int, word string) string {
	switch {
	case n == 1:
		return word
	case strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "s"):
		return word + "es"
	}
	return word + "s"
}

// readableHours is readableDuration of h hours.
func readableHours(h float64) string {
	return readableDuration(time.Duration(h * float64(time.Hour)))
}

// readableDuration says a retention in the largest units that state it exactly: "7 days",
// "1 day 12 hours", "36 minutes", "1 hour 30 minutes"; below a minute, or with seconds,
// Go's form ("90.5s").
func readableDuration(d time.Duration) string {
	if d <= 0 || d%time.Minute != 0 {
		return d.String()
	}
	days, rest := d/(24*time.Hour), d%(24*time.Hour)
	hrs, mins := rest/time.Hour, (rest%time.Hour)/time.Minute
	var parts []string
	for _, p := range []struct {
		n    time.Duration
		unit string
	}{{days, "day"}, {hrs, "hour"}, {mins, "minute"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, plural(int(p.n), p.unit)))
		}
	}
	return strings.Join(parts, " ")
}
