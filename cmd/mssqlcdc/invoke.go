package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coreseed "github.com/mssqlcdc/mssqlcdc/core/seed"
	coresnapshot "github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	corestream "github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/functions/apply"
	backfillwave "github.com/mssqlcdc/mssqlcdc/functions/backfill-wave"
	"github.com/mssqlcdc/mssqlcdc/functions/maintain"
	"github.com/mssqlcdc/mssqlcdc/functions/reconcile"
	"github.com/mssqlcdc/mssqlcdc/functions/seed"
	"github.com/mssqlcdc/mssqlcdc/functions/snapshot"
	"github.com/mssqlcdc/mssqlcdc/functions/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi"
)

func init() {
	register(command{
		name:    "invoke",
		summary: "run one Lambda handler (snapshot, stream, seed, backfill-wave, maintain, apply, reconcile) on an event JSON from stdin, as Lambda runs it",
		run:     runInvoke,
	})
}

const invokeUsageText = `Usage: mssqlcdc invoke [--spec FILE] [--sim] snapshot|stream|seed|backfill-wave|maintain|apply|reconcile < event.json
       mssqlcdc invoke [--spec FILE] --serve [--sim [--sim-steps N]]

Runs the Lambda handlers of functions/snapshot, functions/stream, functions/seed,
functions/backfill-wave, functions/maintain, functions/apply and functions/reconcile
through aws-lambda-go's own runtime loop, as Lambda runs them (docs/handlers.md). The
first form reads one event from stdin (empty: {}) and prints the output, or {"errorMessage", "errorType"} and exits 1.
With --serve, each stdin line is a request {"id": n, "function": "snapshot"|"stream"|"seed"|"backfill-wave"|"maintain"|"apply"|"reconcile",
"event": {...}}, answered by one line {"id", "output"} or {"id", "errorType",
"errorMessage"}, concurrently, until stdin closes. Logs and metrics go to stderr.
`

// errInvokeFailed makes the command exit 1 after it printed the failure on stdout.
var errInvokeFailed = errors.New("handler failed")

func runInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("invoke", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), invokeUsageText)
		fs.PrintDefaults()
	}
	specPath := fs.String("spec", "", "table spec JSON file; default: the MSSQLCDC_SPEC environment variable, as in Lambda")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table) instead of source.dsn")
	serve := fs.Bool("serve", false, "serve many invocations: one JSON request per stdin line, {\"id\", \"function\", \"event\"}, one response line each")
	simSteps := fs.Int("sim-steps", 0, "with --sim --serve: workload transactions committed before each snapshot or seed step or backfill-wave call (writes landing during the snapshot or the seed)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	fn, known := handlerFunctions[fs.Arg(0)]
	if (*serve && fs.NArg() != 0) || (!*serve && (fs.NArg() != 1 || !known)) {
		return &usageError{msg: "usage: mssqlcdc invoke [--spec FILE] [--sim] snapshot|stream|seed|backfill-wave|maintain|apply|reconcile < event.json\n       mssqlcdc invoke [--spec FILE] --serve [--sim [--sim-steps N]]\n(mssqlcdc invoke -h says more)"}
	}
	var spec *config.Spec
	var err error
	switch {
	case *specPath != "":
		spec, err = connect.SpecFile(*specPath)
	case os.Getenv(connect.SpecEnv) == "":
		return &usageError{msg: "no table spec: give --spec FILE or set " + connect.SpecEnv + " to the spec's JSON, as Lambda has it (docs/spec.md)"}
	default:
		spec, err = connect.SpecFromEnv(os.Getenv)
	}
	if err != nil {
		return err
	}
	var src source.Source
	var ds *demoSource
	if *serve || *sim || !fn.sourceless {
		if src, ds, err = openSource(ctx, spec, *sim, stderr); err != nil {
			return err
		}
		defer src.Close()
	}
	inv, err := newInvoker(ctx, spec, src, ds, *simSteps, stderr)
	if err != nil {
		return err
	}
	// aws-lambda-go's loop log.Printf's every error reply: Lambda's log has it, but here
	// the reply is printed, and the line said it a second time.
	defer log.SetOutput(log.Writer())
	log.SetOutput(io.Discard)
	if *serve {
		return inv.serve(ctx, os.Stdin, stdout)
	}
	ev, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(ev)) == 0 {
		ev = []byte("{}") // no event: the spec's settings, as {} is for the Lambda
	}
	if !json.Valid(ev) {
		return &usageError{msg: "the event on stdin is not a JSON document"}
	}
	inv.log.hold()
	res, err := inv.invoke(ctx, fs.Arg(0), ev)
	if res.Error != nil {
		inv.log.release(res.Error.Message)
	} else {
		inv.log.release("")
	}
	if err != nil {
		return err
	}
	if res.Error != nil {
		fmt.Fprintln(stdout, string(res.ErrorBody))
		return errInvokeFailed
	}
	fmt.Fprintln(stdout, string(res.Output))
	return nil
}

// handlerFunctions are the functions invoke runs, by the names of functions/<name>, and
// what each needs: a sourceless one never asks SQL Server anything, as its Lambda has no
// password, so invoking one alone opens no source (nor needs its password).
var handlerFunctions = map[string]struct{ sourceless bool }{
	"snapshot": {}, "stream": {}, "seed": {}, "backfill-wave": {}, "reconcile": {},
	"maintain": {sourceless: true}, "apply": {sourceless: true},
}

// invoker runs the real handlers against one opened source, as a warm Lambda execution
// environment does: each is registered once on a local Runtime API and runs under
// aws-lambda-go's loop, with an opener that hands it the CLI's source instead of dialing
// source.dsn.
type invoker struct {
	spec        *config.Spec
	ds          *demoSource // with --sim
	simSteps    int
	rt          *runtimeapi.Server
	mu          sync.Mutex // the workload generator is single-threaded
	verifies    int        // checks run, each reading the table once
	exportReads int        // the table reads of _export
	log         *replyLog  // the handlers' log
}

// replyLog is the handlers' slog handler. Between hold and release (one invoke whose reply
// is printed) it keeps their error records back, and release drops those whose err is the
// reply's errorMessage: a failed invoke says its error once, in the reply, not again in
// the handler's "... failed" line (Lambda's log has both, the reply being elsewhere). An
// error record the reply does not carry (maintain's second table) is written.
type replyLog struct {
	h    slog.Handler
	held *heldRecords // shared by the handlers WithAttrs makes
}

type heldRecords struct {
	mu   sync.Mutex
	on   bool
	recs []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

func (l *replyLog) hold() {
	l.held.mu.Lock()
	defer l.held.mu.Unlock()
	l.held.on = true
}

// release writes the records held back, but those whose err is reply, and stops holding.
func (l *replyLog) release(reply string) {
	l.held.mu.Lock()
	recs := l.held.recs
	l.held.on, l.held.recs = false, nil
	l.held.mu.Unlock()
	for _, hr := range recs {
		said := false
		hr.r.Attrs(func(a slog.Attr) bool {
			said = said || (reply != "" && a.Key == "err" && a.Value.String() == reply)
			return !said
		})
		if !said {
			_ = hr.h.Handle(context.Background(), hr.r)
		}
	}
}

func (l *replyLog) Enabled(ctx context.Context, lv slog.Level) bool { return l.h.Enabled(ctx, lv) }

func (l *replyLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		l.held.mu.Lock()
		if l.held.on {
			l.held.recs = append(l.held.recs, heldRecord{l.h, r.Clone()})
			l.held.mu.Unlock()
			return nil
		}
		l.held.mu.Unlock()
	}
	return l.h.Handle(ctx, r)
}

func (l *replyLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &replyLog{h: l.h.WithAttrs(as), held: l.held}
}

func (l *replyLog) WithGroup(name string) slog.Handler {
	return &replyLog{h: l.h.WithGroup(name), held: l.held}
}

// newInvoker registers the handlers for spec around src; logs receives their log and
// metric lines. The handlers' base context is ctx.
func newInvoker(ctx context.Context, spec *config.Spec, src source.Source, ds *demoSource, simSteps int, logs io.Writer) (*invoker, error) {
	rt, err := runtimeapi.New()
	if err != nil {
		return nil, err
	}
	rl := &replyLog{h: slog.NewJSONHandler(logs, nil), held: &heldRecords{}}
	log := slog.New(rl)
	st := stream.New(spec, func(ctx context.Context, s *config.Spec) (corestream.Deps, func(), error) {
		deps, err := connect.StreamDeps(ctx, s, src)
		return deps, func() {}, err
	}, log, logs)
	sn := snapshot.New(spec, func(ctx context.Context, s *config.Spec) (coresnapshot.Deps, func(), error) {
		deps, err := connect.SnapshotDeps(ctx, s, src)
		return deps, func() {}, err
	}, log)
	if err := rt.Register("stream", st.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	bw := backfillwave.New(spec, func(ctx context.Context, s *config.Spec) (coresnapshot.Deps, func(), error) {
		deps, err := connect.SnapshotDeps(ctx, s, src)
		return deps, func() {}, err
	}, log)
	if err := rt.Register("backfill-wave", bw.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	if err := rt.Register("snapshot", sn.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	mt := maintain.New(spec, maintain.OpenTables, log)
	if err := rt.Register("maintain", mt.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	ap := apply.New(spec, apply.OpenTables, log)
	if err := rt.Register("apply", ap.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	rc := reconcile.New(spec, func(ctx context.Context, s *config.Spec) (reconcile.Tables, error) {
		t, err := reconcile.OpenLake(ctx, s)
		t.Source = src
		return t, err
	}, log)
	rc.Metrics = logs
	if err := rt.Register("reconcile", rc.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	sd := seed.New(spec, func(ctx context.Context, s *config.Spec, _ string) (coreseed.Deps, func(), error) {
		deps, err := connect.SeedDeps(ctx, s, src)
		return deps, func() {}, err
	}, log)
	if err := rt.Register("seed", sd.Handle, lambda.WithContext(ctx)); err != nil {
		return nil, err
	}
	return &invoker{spec: spec, ds: ds, simSteps: simSteps, rt: rt, log: rl}, nil
}

// SimulatorError is the reply when the --sim database's workload, an _export or a _verify
// check failed: not a handler's error, and the simulation cannot go on meaningfully.
type SimulatorError struct{ Err error }

func (e *SimulatorError) Error() string { return "simulated database: " + e.Err.Error() }

// invoke runs function ("snapshot", "stream", "seed", "maintain", or with --sim "_verify",
// "_purge" or "_export") on the raw event (a JSON document) and returns what the handler's
// runtime loop posted. The error is the CLI's own, a *RequestError or a *SimulatorError,
// never the handler's (that is in Result.Error).
func (inv *invoker) invoke(ctx context.Context, function string, raw []byte) (runtimeapi.Result, error) {
	if sim := simFunctions[function]; sim != nil {
		out, err := sim(inv, ctx, raw)
		if err != nil {
			return runtimeapi.Result{}, err
		}
		b, err := json.Marshal(out)
		return runtimeapi.Result{Output: b}, err
	}
	if _, known := handlerFunctions[function]; !known {
		return runtimeapi.Result{}, &RequestError{Reason: fmt.Sprintf("unknown function %q (snapshot, stream, seed, backfill-wave, maintain, apply, reconcile)", function)}
	}
	if inv.ds != nil && inv.simSteps > 0 && (function == "snapshot" || function == "seed" || function == "backfill-wave") {
		inv.mu.Lock()
		err := inv.ds.gen.Step(inv.simSteps)
		inv.mu.Unlock()
		if err != nil {
			return runtimeapi.Result{}, &SimulatorError{Err: fmt.Errorf("workload: %w", err)}
		}
	}
	res, err := inv.rt.Invoke(ctx, function, raw)
	if err != nil { // not run, or no result before ctx ended: nothing the handler returned
		return res, &RequestError{Reason: fmt.Sprintf("%s not run to the end: %v", function, err)}
	}
	return res, nil
}

// simFunctions are the test functions of the --sim database, not handlers: _verify checks
// the tables against it, _purge makes the stream fall behind CDC cleanup, _export writes a
// copy of the table for a seed (its event says where).
var simFunctions = map[string]func(inv *invoker, ctx context.Context, event []byte) (any, error){
	"_verify": func(inv *invoker, ctx context.Context, _ []byte) (any, error) { return inv.verify(ctx) },
	"_purge":  func(inv *invoker, ctx context.Context, _ []byte) (any, error) { return inv.purge(ctx) },
	"_export": (*invoker).export,
}

// verify (only with --sim) rebuilds bronze and compares it with the simulated table, as
// the demo's final check does: ok, diffs, table_rows, duplicates, table_reads (the
// handlers' reads of the whole table so far), generation (the stream's live generation,
// docs/stream.md "Generations") and resnapshots (resnapshot facts rows of its
// generations).
func (inv *invoker) verify(ctx context.Context) (any, error) {
	if inv.ds == nil {
		return nil, &RequestError{Reason: "_verify needs --sim"}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	reads := inv.ds.db.Calls("ReadTable") - inv.verifies - inv.exportReads // the handlers' reads, not the checks' or exports'
	inv.verifies++
	deps, err := connect.StreamDeps(ctx, inv.spec, inv.ds.db)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	gens, err := deps.Checkpoint.Generations(ctx)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	inv.ds.generation = gens.Live.Generation
	sum, err := verifyDemo(ctx, inv.ds, inv.spec)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	return map[string]any{"ok": len(sum.Diffs) == 0 && sum.Duplicates == 0, "diffs": sum.Diffs, "table_rows": sum.TableRows,
		"duplicates": sum.Duplicates, "table_reads": reads, "generation": sum.Generation, "resnapshots": sum.Resnapshots}, nil
}

// purge (only with --sim) commits some workload transactions, then runs CDC cleanup up to
// max_lsn, as demo --data-loss does: every change the stream has not read is gone. It
// returns {"max_lsn"}.
func (inv *invoker) purge(ctx context.Context) (any, error) {
	if inv.ds == nil {
		return nil, &RequestError{Reason: "_purge needs --sim"}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if err := demoPurge(ctx, inv.ds, false, io.Discard); err != nil {
		return nil, &SimulatorError{Err: err}
	}
	max, err := inv.ds.db.MaxLSN(ctx)
	if err != nil {
		return nil, &SimulatorError{Err: err}
	}
	return map[string]any{"max_lsn": max}, nil
}

type serveRequest struct {
	ID       int64           `json:"id"`
	Function string          `json:"function"`
	Event    json.RawMessage `json:"event"`
}

// serveResponse is one reply line: the handler's output, or its error as aws-lambda-go
// reported it (errorType, errorMessage). ID is null when a bad line's id could not be read;
// Line is the stdin line number of a bad request.
type serveResponse struct {
	ID     *int64          `json:"id"`
	Line   int             `json:"line,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	*messages.InvokeResponse_Error
}

// RequestError is the reply to an --serve input line that is not a request (not JSON,
// fields of the wrong type, an unknown function). The server answers it and goes on
// serving.
type RequestError struct {
	Line   int
	Reason string
}

func (e *RequestError) Error() string {
	if e.Line == 0 {
		return "bad request: " + e.Reason
	}
	return fmt.Sprintf("bad request line %d: %s (want {\"id\": n, \"function\": name, \"event\": {...}}, the functions of mssqlcdc invoke -h)", e.Line, e.Reason)
}

// localFailure is the reply of an error the CLI itself returned (invoke returns only these
// two types): SimulatorError for a *SimulatorError, else RequestError.
func localFailure(err error) *messages.InvokeResponse_Error {
	var se *SimulatorError
	if errors.As(err, &se) {
		return &messages.InvokeResponse_Error{Type: "SimulatorError", Message: err.Error()}
	}
	return &messages.InvokeResponse_Error{Type: "RequestError", Message: err.Error()}
}

// serve answers one request per line, concurrently (a Map runs its reads at once), one
// response line each, until stdin closes. A bad line is answered with a RequestError
// reply (with its id when one can be read) and the others are served as usual.
func (inv *invoker) serve(ctx context.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var wmu sync.Mutex
	enc := json.NewEncoder(out)
	reply := func(resp serveResponse) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = enc.Encode(resp)
	}
	var wg sync.WaitGroup
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var req serveRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			reply(serveResponse{ID: requestID(sc.Bytes()), Line: line, InvokeResponse_Error: localFailure(&RequestError{Line: line, Reason: err.Error()})})
			continue
		}
		if len(bytes.TrimSpace(req.Event)) == 0 {
			req.Event = json.RawMessage("{}") // no event: {}, as for a single invoke
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := inv.invoke(ctx, req.Function, req.Event)
			resp := serveResponse{ID: &req.ID, Output: res.Output, InvokeResponse_Error: res.Error}
			if err != nil {
				if re, ok := err.(*RequestError); ok {
					re.Line = line
				}
				resp = serveResponse{ID: &req.ID, InvokeResponse_Error: localFailure(err)}
			}
			reply(resp)
		}()
	}
	wg.Wait()
	return sc.Err()
}

// requestID is the id of a request line whose other fields are wrong, or nil.
func requestID(line []byte) *int64 {
	var probe struct {
		ID *int64 `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return nil
	}
	return probe.ID
}
