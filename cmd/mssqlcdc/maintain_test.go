package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/maintain"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

func openLocal(t *testing.T, dir string, opts deltalog.Options) *deltalog.Table {
	t.Helper()
	store, logs, err := location.Open(context.Background(), dir, location.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return deltalog.Open(store, logs, opts)
}

// writeIDTable creates at dir a table of one id column (deltatest.IDSchema): commits
// 0..n-1, commit i adding one Parquet file of ids 10i..10i+9.
func writeIDTable(t *testing.T, dir string, n int) {
	t.Helper()
	deltatest.AppendIDs(t, openLocal(t, dir, deltalog.Options{}), 0, n)
}

// readIDs reads every id of the table's latest snapshot, sorted.
func readIDs(t *testing.T, dir string) []int64 {
	t.Helper()
	return deltatest.IDs(t, openLocal(t, dir, deltalog.Options{}))
}

// orphan writes a file no commit references, modified age ago.
func orphan(t *testing.T, dir, name string, age time.Duration) int64 {
	t.Helper()
	p := filepath.Join(dir, name)
	data := []byte(strings.Repeat("x", 123+len(name)))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(-age)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	return int64(len(data))
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Stat(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func maintainJSON(t *testing.T, args ...string) maintainReport {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"maintain", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("maintain %v: exit %d: %s", args, code, errOut)
	}
	var rep maintainReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("maintain json: %v\n%s", err, out)
	}
	return rep
}

func TestMaintainVacuum(t *testing.T) {
	dir := t.TempDir()
	writeIDTable(t, dir, 3)
	before := readIDs(t, dir)
	if len(before) != 30 {
		t.Fatalf("table reads %d ids, want 30", len(before))
	}
	oldSize := orphan(t, dir, "part-orphan-old.parquet", 8*24*time.Hour) // older than 7 days
	orphan(t, dir, "part-orphan-new.parquet", 2*time.Hour)

	// Dry run: only the old orphan is listed, nothing is deleted.
	out, errOut, code := runCLI(t, "maintain", dir, "--vacuum", "--dry-run", "-v")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := fmt.Sprintf("vacuum: would delete 1 file (%d bytes); kept 3 live files of version 2 and 0 removed files within the retention, 1 unreferenced file younger than the retention (retention 7 days)\n  part-orphan-old.parquet\n", oldSize)
	if !strings.Contains(out, want) {
		t.Errorf("dry run output lacks %q:\n%s", want, out)
	}
	if !exists(t, filepath.Join(dir, "part-orphan-old.parquet")) || !exists(t, filepath.Join(dir, "part-orphan-new.parquet")) {
		t.Fatal("a dry run deleted a file")
	}
	// The listing shows itself on stderr when it starts (issue 12 item 12).
	if !strings.Contains(errOut, "vacuum: listing ") || !strings.Contains(errOut, "for files version 2 does not reference") {
		t.Errorf("no line says the vacuum is listing the table:\n%s", errOut)
	}

	// A retention below the table's 7 days is refused without --force.
	_, errOut, code = runCLI(t, "maintain", dir, "--vacuum", "--retention", "1h")
	if code != 1 || !strings.Contains(errOut, "retention 1 hour is below the table's delta.deletedFileRetentionDuration (7 days)") {
		t.Errorf("short retention: exit %d, %q; want a refusal naming the property", code, errOut)
	}
	if !exists(t, filepath.Join(dir, "part-orphan-new.parquet")) {
		t.Fatal("a refused run deleted a file")
	}
	// The same with --dry-run is no refusal (it deletes nothing): it lists what 1 hour
	// would delete, and says a real run needs --force.
	out, errOut, code = runCLI(t, "maintain", dir, "--vacuum", "--retention", "1h", "--dry-run")
	want = "vacuum: a real run with this retention needs --force: 1 hour is below the table's delta.deletedFileRetentionDuration (7 days)\n"
	if code != 0 || !strings.Contains(out, "vacuum: would delete 2 files") || !strings.Contains(out, want) {
		t.Errorf("short retention, dry run: exit %d, %q %q; want the deletions and %q", code, out, errOut, want)
	}
	if !exists(t, filepath.Join(dir, "part-orphan-new.parquet")) {
		t.Fatal("a dry run deleted a file")
	}
	if out, _, _ := runCLI(t, "maintain", dir, "--vacuum", "--retention", "1h", "--dry-run", "--force"); strings.Contains(out, "needs --force") {
		t.Errorf("forced dry run says it needs --force:\n%s", out)
	}

	// The real run deletes the old orphan only; the table reads the same rows.
	rep := maintainJSON(t, dir, "--vacuum")
	v := rep.Vacuum
	if v == nil || rep.CleanupLog != nil || rep.DryRun {
		t.Fatalf("report: %+v", rep)
	}
	if !slices.Equal(v.Deleted, []string{"part-orphan-old.parquet"}) || v.DeletedFiles != 1 || v.DeletedBytes != oldSize ||
		*v.Protected != 3 || *v.TooNew != 1 || v.RetentionHours != 168 || v.MinimumHours != 168 {
		t.Errorf("vacuum result: %+v", *v)
	}
	if exists(t, filepath.Join(dir, "part-orphan-old.parquet")) || !exists(t, filepath.Join(dir, "part-orphan-new.parquet")) {
		t.Error("vacuum deleted the wrong files")
	}
	if after := readIDs(t, dir); !slices.Equal(after, before) {
		t.Errorf("after vacuum the table reads %v, before %v", after, before)
	}

	// --force allows a shorter retention: the 2-hour-old orphan goes at 1h.
	rep = maintainJSON(t, dir, "--vacuum", "--retention", "1 hour", "--force")
	if !slices.Equal(rep.Vacuum.Deleted, []string{"part-orphan-new.parquet"}) {
		t.Errorf("forced 1h vacuum deleted %v", rep.Vacuum.Deleted)
	}
	if after := readIDs(t, dir); !slices.Equal(after, before) {
		t.Errorf("after the forced vacuum the table reads %v, before %v", after, before)
	}
}

func TestMaintainCleanupLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := openLocal(t, dir, deltalog.Options{CheckpointInterval: 10})
	for i := range 25 { // versions 0..24, checkpoints at 10 and 20
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		if err := tx.SetSchema(deltatest.IDSchema); err != nil {
			t.Fatal(err)
		}
		tx.Add(deltalog.Add{Path: fmt.Sprintf("part-%03d.parquet", i), Size: 100, DataChange: true, Stats: `{"numRecords":10}`})
		tx.SetAppTxn("stream", int64(i))
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	logDir := filepath.Join(dir, "_delta_log")
	commit := func(v int) string { return filepath.Join(logDir, fmt.Sprintf("%020d.json", v)) }
	for _, cp := range []int{10, 20} {
		if !exists(t, filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", cp))) {
			t.Fatalf("no checkpoint %d was written", cp)
		}
	}
	// Commits 0..14 are 40 days old (one minute apart), 15..24 are fresh: the cutoff
	// commit is 14, so the kept log starts at checkpoint 10.
	base := time.Now().Add(-40 * 24 * time.Hour)
	for v := range 15 {
		mt := base.Add(time.Duration(v) * time.Minute)
		if err := os.Chtimes(commit(v), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	var expired []string
	var expiredBytes int64
	for v := range 10 {
		expired = append(expired, fmt.Sprintf("_delta_log/%020d.json", v))
		st, err := os.Stat(commit(v))
		if err != nil {
			t.Fatal(err)
		}
		expiredBytes += st.Size()
	}
	snapBefore, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Below the table's 30 days without --force: refused.
	_, errOut, code := runCLI(t, "maintain", dir, "--cleanup-log", "--retention", "7 days")
	if code != 1 || !strings.Contains(errOut, "delta.logRetentionDuration") {
		t.Errorf("short log retention: exit %d, %q", code, errOut)
	}

	rep := maintainJSON(t, dir, "--cleanup-log", "--dry-run")
	c := rep.CleanupLog
	if c == nil || rep.Vacuum != nil || !rep.DryRun {
		t.Fatalf("report: %+v", rep)
	}
	if !slices.Equal(c.Deleted, expired) || c.DeletedBytes != expiredBytes || c.Checkpoint == nil || *c.Checkpoint != 10 || c.RetentionHours != 720 {
		t.Errorf("dry run: %+v, want %v (%d bytes) from checkpoint 10", *c, expired, expiredBytes)
	}
	if !exists(t, commit(0)) {
		t.Fatal("a dry run deleted a commit")
	}

	// The cut-off is midnight UTC of the day 30 days ago (Spark's rule), and it is reported.
	if cut := c.Cutoff; cut == nil || !cut.Equal(cut.UTC().Truncate(24*time.Hour)) ||
		time.Since(*cut) < 30*24*time.Hour || time.Since(*cut) > 31*24*time.Hour {
		t.Errorf("cutoff %v, want midnight UTC of the day 30 days ago", cut)
	}

	out, errOut, code := runCLI(t, "maintain", dir, "--cleanup-log")
	wantLine := fmt.Sprintf("cleanup-log: deleted 10 files (%d bytes); the log starts at checkpoint 10 (retention 30 days; cut-off %s 00:00 UTC, midnight UTC 30 days ago)\n",
		expiredBytes, c.Cutoff.UTC().Format(time.DateOnly))
	if code != 0 || !strings.Contains(out, wantLine) {
		t.Errorf("exit %d, %s; output lacks %q:\n%s", code, errOut, wantLine, out)
	}
	for v := range 25 {
		if got, want := exists(t, commit(v)), v >= 10; got != want {
			t.Errorf("commit %d exists: %v, want %v", v, got, want)
		}
	}
	for _, cp := range []int{10, 20} {
		if !exists(t, filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", cp))) {
			t.Errorf("checkpoint %d was deleted", cp)
		}
	}
	snapAfter, err := openLocal(t, dir, deltalog.Options{}).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snapAfter.Version() != 24 || len(snapAfter.Files()) != len(snapBefore.Files()) || len(snapAfter.Files()) != 25 {
		t.Errorf("after clean-up: version %d, %d files; want 24, 25", snapAfter.Version(), len(snapAfter.Files()))
	}
	if v, _ := snapAfter.TxnVersion("stream"); v != 24 {
		t.Errorf("txn stream = %d after clean-up, want 24", v)
	}
}

func TestMaintainUsage(t *testing.T) {
	// -h says when the log clean-up's cut-off falls: midnight UTC, Spark's rule.
	if help, _, _ := runCLI(t, "maintain", "-h"); !strings.Contains(help, "cut-off is midnight UTC of the\nday the retention ago") {
		t.Errorf("maintain -h does not explain the midnight UTC cut-off:\n%s", help)
	}
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour: "7 days", 24 * time.Hour: "1 day", 36 * time.Hour: "1 day 12 hours",
		time.Hour: "1 hour", 90 * time.Minute: "1 hour 30 minutes", 1500 * time.Millisecond: "1.5s",
	} {
		if got := readableDuration(d); got != want {
			t.Errorf("readableDuration(%v) = %q, want %q", d, got, want)
		}
	}
	dir := t.TempDir()
	writeIDTable(t, dir, 1)
	for _, args := range [][]string{
		{"maintain", dir},        // no operation
		{"maintain", "--vacuum"}, // no table
		{"maintain", dir, "--vacuum", "--retention", "soon"},
		{"maintain", dir, "--vacuum", "--retention", "-1h"},
	} {
		if _, errOut, code := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}

// A dry-run compaction says what it would rewrite and not "writing 0 files (0 bytes, 0
// rows)": it writes nothing, so it cannot know what it would write.
func TestMaintainDryRunCompactSaysNoWrittenCounts(t *testing.T) {
	dir := t.TempDir()
	writeIDTable(t, dir, 3)
	out, errOut, code := runCLI(t, "maintain", dir, "--compact", "--dry-run")
	if code != 0 || !strings.Contains(out, "compact: would rewrite 3 small files") || strings.Contains(out, "writing 0") {
		t.Errorf("exit %d, stdout %q, stderr %q: want the files it would rewrite, without written counts", code, out, errOut)
	}
}

// maintain's one-line summary in `mssqlcdc --help` names every operation it runs (it once
// named only --cleanup-log and --vacuum), and --checkpoint's help says when it writes one:
// whenever the newest checkpoint is older than the newest version (docs/operations.md §
// Maintenance), not only when none exists.
func TestMaintainHelpNamesEveryOperation(t *testing.T) {
	s := commands["maintain"].summary
	for _, op := range []string{"--compact", "--checkpoint", "--cleanup-log", "--vacuum", "--temp-files"} {
		if !strings.Contains(s, op) {
			t.Errorf("summary %q does not name %s", s, op)
		}
	}
	help, _, _ := runCLI(t, "maintain", "-h")
	if !strings.Contains(help, "write a checkpoint of the newest version when the newest checkpoint is older") {
		t.Errorf("maintain -h does not say when --checkpoint writes one:\n%s", help)
	}
}

// A long vacuum listing prints its counts so far, at most once per interval.
func TestMaintainVacuumProgress(t *testing.T) {
	dir := t.TempDir()
	writeIDTable(t, dir, 3)
	for i := range 4 {
		orphan(t, dir, fmt.Sprintf("part-orphan-%d.parquet", i), 8*24*time.Hour)
	}
	var out strings.Builder
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := &vacuumProgress{out: &out, now: func() time.Time { clock = clock.Add(6 * time.Second); return clock }, every: 10 * time.Second, listEvery: 1}
	o := maintain.Options{Vacuum: true, DryRun: true}
	p.attach(&o)
	if _, err := maintainTable(context.Background(), dir, location.Config{}, o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// Each call moves the clock 6 s: the start, then a line every second object listed.
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "vacuum: listing ") {
		t.Fatalf("lines:\n%s", out.String())
	}
	counts := regexp.MustCompile(`^vacuum: [\d,]+ objects listed; so far \d+ to delete, \d+ referenced, \d+ younger than the retention$`)
	for _, l := range lines[1:] {
		if !counts.MatchString(l) {
			t.Errorf("line %q", l)
		}
	}
}

// The operations run in the order the usage line lists them (compact, checkpoint,
// cleanup-log, vacuum, temp-files), and -h and the report say them in that order too: -h
// described temp-files before cleanup-log and vacuum, the report printed vacuum before
// cleanup-log, and -h broke a sentence after "data files no".
func TestMaintainSaysOperationsInRunOrder(t *testing.T) {
	order := []string{"compact", "checkpoint", "cleanup-log", "vacuum", "temp-files"}
	inOrder := func(what, text, prefix string) {
		t.Helper()
		last := -1
		for _, op := range order {
			i := strings.Index(text, prefix+op)
			if i < 0 || i < last {
				t.Errorf("%s: %q at %d, after %d: want the order %v:\n%s", what, prefix+op, i, last, order, text)
				return
			}
			last = i
		}
	}
	help, _, _ := runCLI(t, "maintain", "-h")
	desc := help[strings.Index(help, "\n--compact packs"):strings.Index(help, "  -all")]
	inOrder("-h", desc, "\n--")
	for _, line := range strings.Split(strings.TrimSpace(desc), "\n") {
		if len(line) < 40 && !strings.HasSuffix(line, ".") {
			t.Errorf("-h: a short line %q breaks a sentence:\n%s", line, desc)
		}
	}
	dir := t.TempDir()
	spec := writeSpecWith(t, filepath.Join(dir, "bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	if _, errOut, code := runCLI(t, "snapshot", "--sim", "--spec", spec); code != 0 {
		t.Fatalf("snapshot --sim: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "maintain", filepath.Join(dir, "bronze"), "--all", "--dry-run")
	if code != 0 {
		t.Fatalf("maintain --all --dry-run: exit %d: %s", code, errOut)
	}
	inOrder("report", out, "\n")
}

// maintain without --dynamo-table on a table whose _delta_log/.tmp/ holds a DynamoDB log
// store's temporary commit file (Spark's S3DynamoDBLogStore and ours leave them) refuses
// before doing anything, dry runs included: its commits (compaction) would bypass the
// DynamoDB table the other writers exclude one another through. The message names the
// file and the flag.
func TestMaintainRefusesATableCoordinatedThroughDynamoDB(t *testing.T) {
	dir := t.TempDir()
	writeIDTable(t, dir, 12) // versions 0..11: a checkpoint at 10, a checkpoint of 11 to write
	temp := "_delta_log/.tmp/00000000000000000011.json.0b7d4c2e-9f1a-4e58-8c3b-6a2d1e0f9c47"
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log", ".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	orphan(t, dir, filepath.FromSlash(temp), 48*time.Hour) // what --temp-files would delete
	for _, args := range [][]string{{"--all"}, {"--all", "--dry-run"}, {"--compact"}} {
		out, errOut, code := runCLI(t, append([]string{"maintain", dir}, args...)...)
		if code != 1 || !strings.Contains(errOut, temp) || !strings.Contains(errOut, "--dynamo-table") || out != "" {
			t.Errorf("maintain %v: exit %d, stdout %q, stderr %q; want exit 1 naming %s and --dynamo-table", args, code, out, errOut, temp)
		}
	}
	if !exists(t, filepath.Join(dir, filepath.FromSlash(temp))) || exists(t, filepath.Join(dir, "_delta_log", "00000000000000000011.checkpoint.parquet")) {
		t.Error("a refused maintain changed the table")
	}
}

// maintain's vacuum line says what the files it kept are: the live files of the version,
// and the removed files it keeps within the retention (a compaction's inputs), counted
// apart, not all as "referenced by" the version (which has one live file here).
func TestMaintainVacuumLineTellsLiveFromRemoved(t *testing.T) {
	dir := t.TempDir()
	writeIDTable(t, dir, 5) // versions 0..4, one file each
	if rep := maintainJSON(t, dir, "--compact"); rep.Compact == nil || rep.Compact.FilesRemoved != 5 || rep.Compact.FilesAdded != 1 {
		t.Fatalf("compaction: %+v", rep.Compact)
	}
	out, errOut, code := runCLI(t, "maintain", dir, "--vacuum", "--dry-run")
	want := "vacuum: would delete 0 files (0 bytes); kept 1 live file of version 5 and 5 removed files within the retention, 0 unreferenced files younger than the retention (retention 7 days)\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, %q %q; want the line %q", code, out, errOut, want)
	}
	v := maintainJSON(t, dir, "--vacuum", "--dry-run").Vacuum
	if v == nil || *v.Protected != 6 || v.Live == nil || *v.Live != 1 || v.Removed == nil || *v.Removed != 5 {
		t.Errorf("vacuum report: %+v, want protected 6: live 1, removed 5", v)
	}
}
