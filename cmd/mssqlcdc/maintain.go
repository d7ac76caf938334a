package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/maintain"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

func init() {
	register(command{
		name:    "maintain",
		summary: "Delta maintenance, what the scheduled maintain function runs (--all): compaction (--compact), a checkpoint (--checkpoint), expired log files (--cleanup-log), unreferenced data files (--vacuum), orphaned temporary files (--temp-files)",
		run:     runMaintain,
	})
}

// maintainReport is what maintain prints; with --json, this JSON object (core/maintain's
// Report). An operation not asked for is null.
type maintainReport = maintain.Report

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

func maintainUsage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: mssqlcdc maintain TABLE_URL [--all] [--compact] [--checkpoint] [--cleanup-log] [--vacuum] [--temp-files]")
		fmt.Fprintln(w, "                         [--target-size BYTES] [--dry-run] [--retention DURATION] [--force] [--json] [-v]")
		fmt.Fprintln(w, "TABLE_URL is a path, file:///path or s3://bucket/prefix. Give the operations to run, or --all for")
		fmt.Fprintln(w, "every one (what the scheduled maintain function runs). They run in the order listed.")
		fmt.Fprintln(w, "--compact packs small files into files of --target-size (default 128 MiB) in log order, one")
		fmt.Fprintln(w, "commit per group with dataChange=false: safe while the stream appends.")
		fmt.Fprintln(w, "--checkpoint writes a checkpoint of the newest version when the newest checkpoint is older.")
		fmt.Fprintln(w, "--cleanup-log deletes log files older than the newest checkpoint before the retention")
		fmt.Fprintln(w, "(default delta.logRetentionDuration, else 30 days). Its cut-off is midnight UTC of the")
		fmt.Fprintln(w, "day the retention ago (Spark's rule): with 30 days, a run at any hour of 31 Dec keeps")
		fmt.Fprintln(w, "every commit from 1 Dec 00:00 UTC on, so up to a day more than the retention is kept.")
		fmt.Fprintln(w, "--vacuum deletes data files that no snapshot within the retention references and that are")
		fmt.Fprintln(w, "older than it (default delta.deletedFileRetentionDuration, else 7 days). A --retention")
		fmt.Fprintln(w, "below the table's configured value is refused unless --force; with --dry-run it is")
		fmt.Fprintln(w, "listed, and the output says a real run needs --force.")
		fmt.Fprintln(w, "--temp-files deletes temporary commit files of decided versions and unfinished local writes")
		fmt.Fprintln(w, "older than a day.")
		fs.PrintDefaults()
	}
}

func runMaintain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("maintain", stderr)
	fs.Usage = maintainUsage(fs)
	all := fs.Bool("all", false, "every operation below, in order (the scheduled maintain function's set)")
	compact := fs.Bool("compact", false, "bin-pack small files into target-size files (dataChange=false)")
	checkpoint := fs.Bool("checkpoint", false, "write a checkpoint of the newest version when the newest checkpoint is older")
	cleanup := fs.Bool("cleanup-log", false, "delete expired _delta_log files (docs/reference/delta-protocol.md §11.2)")
	vacuum := fs.Bool("vacuum", false, "delete data files the table no longer references (VACUUM)")
	tempFiles := fs.Bool("temp-files", false, "delete orphaned temporary commit and write files older than a day")
	targetSize := fs.Int64("target-size", 0, "compaction's target file size in bytes (default 134217728, 128 MiB)")
	dryRun := fs.Bool("dry-run", false, "list what would be done; change nothing")
	var retention retentionFlag
	fs.Var(&retention, "retention", "retention for --cleanup-log and --vacuum, e.g. 168h or \"7 days\" (default: the table's property, else the Delta default)")
	force := fs.Bool("force", false, "allow a --retention below the table's configured retention (a --dry-run needs none)")
	asJSON := fs.Bool("json", false, "print a JSON object instead of text")
	verbose := fs.Bool("v", false, "list every file deleted (or, with --dry-run, that would be)")
	cfg := addTableFlags(fs)
	positional, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return &usageError{msg: "want exactly one TABLE_URL (a path, file:// or s3:// URL)"}
	}
	o := maintain.Options{Compact: *compact, Checkpoint: *checkpoint, CleanupLog: *cleanup, Vacuum: *vacuum,
		TempFiles: *tempFiles}
	if *all {
		o = maintain.All()
	}
	if !o.Compact && !o.Checkpoint && !o.CleanupLog && !o.Vacuum && !o.TempFiles {
		return &usageError{msg: "nothing to do: give --all or operations (--compact, --checkpoint, --cleanup-log, --vacuum, --temp-files)"}
	}
	if *targetSize < 0 {
		return &usageError{msg: "--target-size must be positive"}
	}
	o.Compaction.TargetFileSize = *targetSize
	o.DryRun, o.Retention, o.Force = *dryRun, retention.d, *force
	if o.Vacuum {
		newVacuumProgress(stderr).attach(&o)
	}
	rep, err := maintainTable(ctx, positional[0], *cfg, o)
	if rep != nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if eerr := enc.Encode(rep); eerr != nil && err == nil {
				err = eerr
			}
		} else {
			printMaintain(stdout, rep, *verbose)
		}
	}
	return err
}

// maintainTable runs core/maintain on the table at url.
func maintainTable(ctx context.Context, url string, cfg location.Config, o maintain.Options) (*maintainReport, error) {
	store, logs, err := location.Open(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	rep, err := maintain.Run(ctx, deltalog.Open(store, logs, deltalog.Options{}), o)
	if errors.Is(err, maintain.ErrNoTable) {
		return nil, fmt.Errorf("%s: %w", url, errNoTable)
	}
	return rep, err
}

// vacuumProgress prints how a vacuum's listing goes (maintain.Options.VacuumStart and
// VacuumProgress): a line when it starts, and at most one per every with the counts so far.
// A table of hundreds of thousands of files takes minutes to list on S3.
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

// attach makes p the progress of o's vacuum.
func (p *vacuumProgress) attach(o *maintain.Options) {
	o.VacuumStart, o.VacuumProgress, o.VacuumProgressEvery = p.start, p.report, p.listEvery
}

func (p *vacuumProgress) start(url string, version int64) {
	p.shown = p.now()
	fmt.Fprintf(p.out, "vacuum: listing %s for files version %d does not reference\n", url, version)
}

func (p *vacuumProgress) report(listed int, so deltalog.VacuumResult) {
	if now := p.now(); now.Sub(p.shown) >= p.every {
		p.shown = now
		fmt.Fprintf(p.out, "vacuum: %s objects listed; so far %s to delete, %s referenced, %s younger than the retention\n",
			config.Grouped(int64(listed)), config.Grouped(int64(len(so.Deleted))), config.Grouped(int64(so.Protected)), config.Grouped(int64(so.TooNew)))
	}
}

func printMaintain(w io.Writer, r *maintainReport, verbose bool) {
	verb := "deleted"
	if r.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "table: %s\n", r.Table)
	if c := r.Compact; c != nil {
		// A dry run writes nothing, so it has no written counts to show.
		did, wrote := "rewrote", fmt.Sprintf(", writing %d %s (%d bytes, %d rows)", c.FilesAdded, plural(c.FilesAdded, "file"), c.BytesAdded, c.Rows)
		if r.DryRun {
			did, wrote = "would rewrite", ""
		}
		fmt.Fprintf(w, "compact: %s %d small %s (%d bytes) in %d %s%s; %d live %s, %d small %s left for the next run\n",
			did, c.FilesRemoved, plural(c.FilesRemoved, "file"), c.BytesRemoved, c.Commits, plural(c.Commits, "commit"),
			wrote, c.LiveFiles, plural(c.LiveFiles, "file"), c.FilesLeft, plural(c.FilesLeft, "file"))
	}
	if c := r.Checkpoint; c != nil {
		switch {
		case !c.Written:
			fmt.Fprintf(w, "checkpoint: version %d has one already\n", c.Version)
		case r.DryRun:
			fmt.Fprintf(w, "checkpoint: would write one of version %d\n", c.Version)
		default:
			fmt.Fprintf(w, "checkpoint: wrote one of version %d\n", c.Version)
		}
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
		printNeedsForce(w, "cleanup-log", maintain.LogRetentionKey, c)
		printKeys(w, c.Deleted, verbose)
	}
	if v := r.Vacuum; v != nil {
		fmt.Fprintf(w, "vacuum: %s %d %s (%d bytes); kept %d live %s of version %d and %d removed %s within the retention, %d unreferenced %s younger than the retention (retention %s)\n",
			verb, v.DeletedFiles, plural(v.DeletedFiles, "file"), v.DeletedBytes, *v.Live, plural(*v.Live, "file"), *v.Version,
			*v.Removed, plural(*v.Removed, "file"), *v.TooNew, plural(*v.TooNew, "file"), readableHours(v.RetentionHours))
		printNeedsForce(w, "vacuum", maintain.DeletedRetentionKey, v)
		printKeys(w, v.Deleted, verbose)
	}
	if c := r.TempFiles; c != nil {
		fmt.Fprintf(w, "temp-files: %s %d orphaned temporary %s (%d bytes) older than %s\n",
			verb, c.DeletedFiles, plural(c.DeletedFiles, "file"), c.DeletedBytes, readableHours(c.RetentionHours))
		printKeys(w, c.Deleted, verbose)
	}
}

// printNeedsForce says, after a dry run's line for op, that a real run with its retention
// would be refused without --force (maintain.OpResult.NeedsForce).
func printNeedsForce(w io.Writer, op, property string, r *maintain.OpResult) {
	if r.NeedsForce {
		fmt.Fprintf(w, "%s: a real run with this retention needs --force: %s is below the table's %s (%s)\n",
			op, readableHours(r.RetentionHours), property, readableHours(r.MinimumHours))
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

// readableDuration says a retention in the largest units that state it exactly
// (maintain.Readable).
func readableDuration(d time.Duration) string { return maintain.Readable(d) }
