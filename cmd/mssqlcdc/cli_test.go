package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// A flag the command does not know is a usage mistake: exit 2, and the flag package's
// message printed once (the command does not print it again).
func TestUnknownFlagExits2AndSaysItOnce(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := runCLI(t, name, "--no-such-flag")
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, errOut)
			}
			if n := strings.Count(errOut, "no-such-flag"); n != 1 {
				t.Errorf("stderr names the flag %d times, want once:\n%s", n, errOut)
			}
		})
	}
}

// Help asked for is the answer, not a mistake: -h, -help and --help on every command,
// version included, and "mssqlcdc help <command>", print the command's usage on stdout
// and exit 0 (it went to stderr, so `mssqlcdc stream -h | less` showed nothing): a
// "Usage: mssqlcdc <name> ..." line, and what the command does (the summary mssqlcdc
// --help lists) where the command has no usage text of its own; not the flag package's
// bare "Usage of mssqlcdc <name>:". A flag the command does not know stays a mistake
// (TestUnknownFlagExits2AndSaysItOnce), and so does help for a command that does not
// exist: the message and usage on stderr, exit 2.
func TestHelpFlagOnEveryCommand(t *testing.T) {
	ownUsage := map[string]bool{"inspect": true, "show": true, "maintain": true, "invoke": true}
	for name, c := range commands {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{{name, "-h"}, {name, "-help"}, {name, "--help"}, {"help", name}} {
				out, errOut, code := runCLI(t, args...)
				if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: mssqlcdc "+name) || strings.Contains(out, "Usage of") {
					t.Errorf("%q: exit %d, stdout %q, stderr %q: want exit 0 and the usage on stdout alone", args, code, out, errOut)
				}
				if !ownUsage[name] && !strings.Contains(out, "\n"+c.summary+"\n") {
					t.Errorf("%q does not say what the command does (%q):\n%s", args, c.summary, out)
				}
			}
		})
	}
	if _, errOut, code := runCLI(t, "version", "extra"); code != 2 {
		t.Errorf("version extra: exit %d, want 2 (%s)", code, errOut)
	}
	out, errOut, code := runCLI(t, "help", "no-such-command")
	if code != 2 || out != "" || !strings.Contains(errOut, `unknown command "no-such-command"`) || !strings.Contains(errOut, "Usage: mssqlcdc <command>") {
		t.Errorf("help no-such-command: exit %d, stdout %q, stderr %q: want exit 2, the mistake and the usage on stderr", code, out, errOut)
	}
}

// mssqlcdc with no arguments is a mistake: the usage on stderr, exit 2. help, -h and --help
// ask for it: stdout, exit 0.
func TestNoArgumentsExits2WithUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "Usage: mssqlcdc <command>") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q: want exit 2 and the usage on stderr", code, out.String(), errOut.String())
	}
	for _, h := range []string{"help", "-h", "-help", "--help"} {
		out.Reset()
		errOut.Reset()
		if code := run(context.Background(), []string{h}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Usage: mssqlcdc <command>") {
			t.Errorf("%s: exit %d, stdout %q: want exit 0 and the usage on stdout", h, code, out.String())
		}
	}
}

// A --sim run refused as rewound says what that means for a simulated database (each
// --sim run builds it afresh: docs/getting-started.md), not only the advice for a real
// one (check the DSN, re-snapshot); a run without --sim prints the error alone.
func TestSimRewoundSaysWhatToDo(t *testing.T) {
	commands["zz-rewound"] = command{name: "zz-rewound", run: func(context.Context, []string, io.Writer, io.Writer) error {
		return fmt.Errorf("stream: %w", &source.LSNRewoundError{Recorded: lsn.MustParse("0x00000005000000010001")})
	}}
	defer delete(commands, "zz-rewound")
	for args, want := range map[string]bool{"--sim": true, "-sim": true, "--sim=true": true, "--spec": false} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"zz-rewound", args}, &out, &errOut)
		if got := strings.Contains(errOut.String(), "delete the --sim tables and checkpoint"); code != 1 || got != want {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and the --sim hint %v", args, code, errOut.String(), want)
		}
		// A stream --sim that polled read workload no later run commits: a rerun of the
		// same command is refused too, so the hint names that case.
		if want && !strings.Contains(errOut.String(), "a stream --sim that polled (no --available-now) read changes no new run makes") {
			t.Errorf("%s: stderr %q does not name a polling stream --sim", args, errOut.String())
		}
	}
	// A stamp refused (a snapshot's, a seed's) is named as that stamp in the hint, not as
	// a checkpoint.
	commands["zz-rewound"] = command{name: "zz-rewound", run: func(context.Context, []string, io.Writer, io.Writer) error {
		return fmt.Errorf("seed: %w", &source.LSNRewoundError{Recorded: lsn.MustParse("0x00000005000000010001"), RecordedBy: source.RecordedBySeedStamp})
	}}
	_, errOut, code := runCLI(t, "zz-rewound", "--sim")
	if hint := errOut[strings.LastIndex(errOut, "mssqlcdc zz-rewound: with --sim"):]; code != 1 ||
		!strings.Contains(hint, "with --sim, this seed stamp was recorded on another simulated database") || strings.Contains(hint, "checkpoint was written") {
		t.Errorf("seed stamp: exit %d, stderr %q; want the --sim hint naming the seed stamp", code, errOut)
	}
}

// The bootstrap command's summary says what it does: the stream runs until caught up.
func TestBootstrapSummarySaysUntilCaughtUp(t *testing.T) {
	s := commands["bootstrap"].summary
	if !strings.Contains(s, "until caught up") || strings.Contains(s, "once") {
		t.Errorf("summary %q", s)
	}
}

// inspect names its two checkpoint lines so that time travel reads unambiguously: the
// checkpoint the snapshot was read from (none at version 0) and the _last_checkpoint file.
func TestInspectCheckpointLabels(t *testing.T) {
	dir := t.TempDir()
	writeInspectTable(t, dir, location.Config{})
	out, errOut, code := runCLI(t, "inspect", dir, "--version", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := squash(out)
	for _, want := range []string{
		"read from checkpoint: none at or below version 0 (commits replayed)\n",
		"_last_checkpoint file: version 10, 14 actions, 10 add files, ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(got, "last checkpoint:") {
		t.Errorf("the ambiguous label is still there:\n%s", out)
	}
}

// A --resnapshot whose stamp equals the snapshot bronze already holds (the source did not
// move) commits nothing, and says so.
func TestResnapshotAtTheSameLSNSaysItExists(t *testing.T) {
	spec := writeSimSpec(t)
	out1, errOut, code := runCLI(t, "snapshot", "--spec", spec, "--sim")
	if code != 0 || strings.Contains(errOut, "already") {
		t.Fatalf("first snapshot: exit %d, stderr %q", code, errOut)
	}
	out2, errOut, code := runCLI(t, "snapshot", "--spec", spec, "--sim", "--resnapshot")
	var o, o2 struct{ LSN string }
	_ = json.Unmarshal([]byte(out1), &o)
	_ = json.Unmarshal([]byte(out2), &o2)
	if code != 0 || o.LSN == "" || o2.LSN != o.LSN {
		t.Fatalf("resnapshot: exit %d, stdout %q, want the same LSN as %q", code, out2, out1)
	}
	if !strings.Contains(errOut, "bronze already holds the snapshot at "+o.LSN) || !strings.Contains(errOut, "nothing committed") {
		t.Errorf("stderr %q: want it to say the snapshot at %s already exists", errOut, o.LSN)
	}
}

// stream --sim without --available-now keeps the workload writing, as its help says; and
// --max-seconds left out is the spec's max_seconds (its help said "0: no bound", while 0
// took the spec's).
func TestStreamSimHelpIsTrue(t *testing.T) {
	help, _, _ := runCLI(t, "stream", "-h")
	if !strings.Contains(help, "writes") {
		t.Errorf("stream -h does not say the workload writes:\n%s", help)
	}
	if !strings.Contains(help, "(default: the spec's max_seconds; 0: no bound)") {
		t.Errorf("stream -h does not say --max-seconds defaults to the spec's:\n%s", help)
	}
}

// stream --max-seconds 0 is no bound even when the spec sets max_seconds (it was taken as
// "not given", so the spec's bound held): a spec bounding each run to a microsecond reads
// one batch of the simulator's 500 transactions and stops; with --max-seconds 0 the run
// reads until caught up.
func TestStreamMaxSecondsZeroIsNoBound(t *testing.T) {
	spec := writeSimSpec(t)
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), `"bootstrap":true,`, `"bootstrap":true,"max_seconds":0.000001,`, 1)
	doc = strings.Replace(doc, `"numPartitions":3`, `"numPartitions":3,"maxCommitsPerBatch":50`, 1)
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI(t, "bootstrap", "--spec", spec, "--sim", "--no-stream"); code != 0 {
		t.Fatalf("bootstrap: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := runCLI(t, "stream", "--spec", spec, "--sim", "--available-now", "--max-seconds", "0")
	if code != 0 || !strings.Contains(out, "caught up: true") {
		t.Fatalf("stream --max-seconds 0: exit %d, want a run to caught up\n%s%s", code, out, errOut)
	}
}

// Idle polls print one line when the stream catches up, not one per poll.
func TestStreamLoopIdleIsQuiet(t *testing.T) {
	ctx := context.Background()
	spec := loadSpec(t, writeSimSpec(t))
	spec.Bootstrap, spec.Options.StartingLsn = false, config.StartEarliest
	ds, err := setupDemoSource(demoOptions{Rows: 100, Seed: 1}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	deps, err := connect.StreamDeps(ctx, spec, ds.db)
	if err != nil {
		t.Fatal(err)
	}
	// The loop's waits are counted, not timed: the run ends after a fixed number of polls
	// however slow the machine is.
	pollsThenStop := func(n int) (context.Context, func(context.Context, time.Duration)) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		polls := 0
		return ctx, func(context.Context, time.Duration) {
			if polls++; polls == n {
				cancel()
			}
		}
	}
	var out bytes.Buffer
	ctx1, wait := pollsThenStop(40)
	// Stopped by its context, the loop says so (the run was cut short).
	err = streamLoop(ctx1, spec, deps, quietStreamOptions(&out), loopOptions{poll: time.Hour, wait: wait}, &out)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := strings.Count(out.String(), "invocation:"); n != 1 {
		t.Errorf("%d invocation lines over 40 idle polls, want 1:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "caught up; polling every"); n != 1 {
		t.Errorf("%d caught-up lines, want 1:\n%s", n, out.String())
	}

	// With the workload writing before each poll, the later polls commit batches.
	out.Reset()
	ctx2, wait := pollsThenStop(5)
	lo := loopOptions{poll: time.Hour, wait: wait, beforePoll: func() error { return ds.gen.Step(5) }}
	if err := streamLoop(ctx2, spec, deps, quietStreamOptions(&out), lo, &out); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := strings.Count(out.String(), "batch "); n < 4 {
		t.Errorf("%d batches over 4 polls with the workload writing, want one a poll:\n%s", n, out.String())
	}
}

func loadSpec(t *testing.T, path string) *config.Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// A bad line on invoke --serve is answered with an error reply; the requests before and
// after it are answered too, and the server keeps serving to the end of stdin.
func TestServeAnswersABadLineAndGoesOn(t *testing.T) {
	spec := loadSpec(t, writeSimSpec(t))
	src, ds, err := openSource(context.Background(), spec, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	inv, err := newInvoker(context.Background(), spec, src, ds, 0, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader(`{"id":1,"function":"snapshot","event":{"step":"open"}}` + "\n" +
		`{"id":2,"function":` + "\n" +
		`{"id":3,"function":7}` + "\n" +
		"\n" + // a blank line is no request
		`{"id":4,"function":"_verify"}` + "\n" +
		`{"id":5,"function":"explode","event":{}}` + "\n")
	var out bytes.Buffer
	if err := inv.serve(context.Background(), in, &out); err != nil {
		t.Fatalf("serve: %v", err)
	}
	replies := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		id, _ := json.Marshal(r["id"])
		replies[string(id)] = r
	}
	if len(replies) != 5 {
		t.Fatalf("%d replies, want 5:\n%s", len(replies), out.String())
	}
	for _, id := range []string{"1", "4"} {
		if replies[id]["errorType"] != nil || replies[id]["output"] == nil {
			t.Errorf("request %s: %v, want an output", id, replies[id])
		}
	}
	bad := replies["null"] // line 2 is no JSON: its id is unknown
	if bad == nil || bad["errorType"] != "RequestError" || bad["line"] != 2.0 || !strings.Contains(bad["errorMessage"].(string), "line 2") {
		t.Errorf("line 2: %v, want a RequestError reply naming the line", bad)
	}
	if r := replies["3"]; r == nil || r["errorType"] != "RequestError" || r["line"] != 3.0 {
		t.Errorf("line 3: %v, want a RequestError reply with its id", r)
	}
	if r := replies["5"]; r == nil || r["errorType"] != "RequestError" || !strings.Contains(r["errorMessage"].(string), `unknown function "explode"`) {
		t.Errorf("line 6: %v, want a RequestError reply naming the function", r)
	}
	// The shape a reply asks for names no subset of the functions (it once said
	// "snapshot"|"stream" only, though seven are served).
	if r := replies["5"]; r == nil || strings.Contains(r["errorMessage"].(string), `"snapshot"|"stream"`) {
		t.Errorf("line 6: %v, want the request shape without a partial list of functions", r)
	}
}

// Duration flags are bounded like the spec's durations: a --max-seconds that would
// overflow a duration (or is NaN, or negative) is a usage mistake naming the flag and its
// range (it was a ConfigError saying "invalid table spec: max_seconds: ... 0 = bounded
// by the invocation's deadline only", blaming a spec that was fine), and --seconds
// outside 0..86400 is one too; nothing runs.
func TestDurationFlagsAreBounded(t *testing.T) {
	spec := writeSimSpec(t)
	for _, cmd := range []string{"stream", "apply", "backfill"} {
		for _, v := range []string{"1e10", "NaN", "+Inf", "-1"} {
			_, errOut, code := runCLI(t, cmd, "--spec", spec, "--max-seconds", v)
			if code != 2 || !strings.Contains(errOut, "mssqlcdc "+cmd+": --max-seconds ") || !strings.Contains(errOut, "want seconds from 0 up to 366 days (31,622,400 s)") ||
				strings.Contains(errOut, "invalid table spec") {
				t.Errorf("%s --max-seconds %s: exit %d, stderr %q: want exit 2 naming --max-seconds and its range", cmd, v, code, errOut)
			}
		}
	}
	// The demo's bounds are its own (a day, 10,000 batches), and the message names the
	// flag at fault and its range (it printed the usage line alone).
	for _, c := range []struct{ flag, v, says string }{
		{"--seconds", "1e10", "--seconds 10000000000: want seconds from 0 up to 86,400 (a day)"},
		{"--seconds", "NaN", "--seconds NaN: want seconds from 0 up to 86,400 (a day)"},
		{"--seconds", "-1", "--seconds -1: want seconds from 0 up to 86,400 (a day)"},
		{"--rows", "-5", "--rows -5: want 0 or more"},
		{"--min-batches", "20000", "--min-batches 20000: want from 0 up to 10,000"},
		{"--bootstrap", "fast", `--bootstrap "fast": want full, chunked or seed`},
	} {
		_, errOut, code := runCLI(t, "demo", "--lake", t.TempDir(), c.flag, c.v)
		if code != 2 || !strings.HasPrefix(errOut, "mssqlcdc demo: "+c.says+"\nusage: mssqlcdc demo ") {
			t.Errorf("demo %s %s: exit %d, stderr %q; want 2 and %q, then the usage", c.flag, c.v, code, errOut, c.says)
		}
	}
}

// The usage lines give ranges as words, like the messages (they said "(0..31622400)",
// "(0..1)"): no "N..M" in any usage printed for a mistake.
func TestUsageRangesReadPlainly(t *testing.T) {
	rangeDots := regexp.MustCompile(`[0-9]\.\.[0-9]`)
	for _, args := range [][]string{
		{"stream"}, {"apply"}, {"backfill"}, {"reconcile"},
		{"demo", "--lake", t.TempDir(), "--rows", "-5"},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "usage: mssqlcdc "+args[0]) || rangeDots.MatchString(errOut) {
			t.Errorf("%v: exit %d, stderr %q: want exit 2 and a usage without N..M ranges", args, code, errOut)
		}
	}
	help, _, _ := runCLI(t, "reconcile", "-h")
	if rangeDots.MatchString(help) {
		t.Errorf("reconcile -h gives a range as N..M:\n%s", help)
	}
}

// invoke with neither --spec nor MSSQLCDC_SPEC is a usage mistake naming both ways to give
// the spec, not "invalid table spec" of a spec never given.
func TestInvokeWithoutSpecSaysHowToGiveIt(t *testing.T) {
	t.Setenv("MSSQLCDC_SPEC", "")
	_, errOut, code := runCLI(t, "invoke", "stream")
	if code != 2 || !strings.Contains(errOut, "give --spec FILE or set MSSQLCDC_SPEC") || strings.Contains(errOut, "invalid table spec") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming --spec and MSSQLCDC_SPEC", code, errOut)
	}
}
