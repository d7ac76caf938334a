package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "invoke",
		summary: "run one Lambda handler (snapshot, stream) on an event JSON from stdin, as Step Functions would",
		run:     runInvoke,
	})
}

// invokeFailure is the Lambda runtime's error shape: errorType is the Go type name of
// the error value (what Step Functions' ErrorEquals matches), errorMessage its text.
type invokeFailure struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

// errInvokeFailed makes the command exit 1 after it printed the failure on stdout.
var errInvokeFailed = errors.New("handler failed")

func failureOf(err error) invokeFailure {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return invokeFailure{ErrorType: t.Name(), ErrorMessage: err.Error()}
}

func runInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("invoke", stderr)
	specPath := fs.String("spec", "", "table spec JSON file; default: the MSSQLCDC_SPEC environment variable, as in Lambda")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table) instead of source.dsn")
	serve := fs.Bool("serve", false, "serve many invocations: one JSON request per stdin line, {\"id\", \"function\", \"event\"}, one response line each")
	simSteps := fs.Int("sim-steps", 0, "with --sim --serve: workload transactions committed before each snapshot step (writes landing during the snapshot)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*serve && fs.NArg() != 0) || (!*serve && fs.NArg() != 1) {
		return &usageError{msg: "usage: mssqlcdc invoke [--spec FILE] [--sim] snapshot|stream < event.json\n       mssqlcdc invoke [--spec FILE] --serve [--sim [--sim-steps N]]"}
	}
	var spec *config.Spec
	var err error
	if *specPath != "" {
		spec, err = connect.SpecFile(*specPath)
	} else {
		spec, err = connect.SpecFromEnv(os.Getenv)
	}
	if err != nil {
		return err
	}
	src, ds, err := openSource(ctx, spec, *sim, stderr)
	if err != nil {
		return err
	}
	defer src.Close()
	inv := &invoker{spec: spec, src: src, ds: ds, simSteps: *simSteps}
	if *serve {
		return inv.serve(ctx, os.Stdin, stdout)
	}
	ev, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	out, err := inv.invoke(ctx, fs.Arg(0), ev)
	enc := json.NewEncoder(stdout)
	if err != nil {
		_ = enc.Encode(failureOf(err))
		return errInvokeFailed
	}
	return enc.Encode(out)
}

// invoker runs handlers against one opened source, as a warm Lambda container does.
type invoker struct {
	spec     *config.Spec
	src      source.Source
	ds       *demoSource // with --sim
	simSteps int
	mu       sync.Mutex // the workload generator is single-threaded
	verifies int        // checks run, each reading the table once
}

// invoke runs function on the raw event and returns its output or a named error.
func (inv *invoker) invoke(ctx context.Context, function string, raw []byte) (any, error) {
	if inv.ds != nil && inv.simSteps > 0 && function == "snapshot" {
		inv.mu.Lock()
		err := inv.ds.gen.Step(inv.simSteps)
		inv.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
	}
	switch function {
	case "snapshot":
		var ev snapshot.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, &snapshot.EventError{Reason: "not a snapshot event: " + err.Error()}
		}
		deps, err := connect.SnapshotDeps(ctx, inv.spec, inv.src)
		if err != nil {
			return nil, snapshot.Named(err)
		}
		return snapshot.Handle(ctx, deps, ev)
	case "stream":
		var ev struct {
			MaxSeconds *float64 `json:"max_seconds"`
			MaxBatches int      `json:"max_batches"`
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			raw = []byte("{}") // no event: the spec's settings, as {} is for the Lambda
		}
		if err := json.Unmarshal(raw, &ev); err != nil { // every field optional, as the Lambda's
			return nil, &config.ConfigError{Problems: []config.Problem{{Field: "(event)", Reason: "not a stream event: " + err.Error()}}}
		}
		spec := *inv.spec
		if ev.MaxSeconds != nil {
			spec.MaxSeconds = *ev.MaxSeconds
			if err := spec.Validate(); err != nil {
				return nil, stream.Named(err)
			}
		}
		deps, err := connect.StreamDeps(ctx, &spec, inv.src)
		if err != nil {
			return nil, stream.Named(err)
		}
		res, err := stream.Run(ctx, &spec, deps, stream.Options{MaxBatches: ev.MaxBatches, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		if err != nil {
			return nil, stream.Named(err)
		}
		return res, nil
	case "_verify":
		return inv.verify(ctx)
	}
	return nil, &usageError{msg: fmt.Sprintf("unknown function %q (snapshot, stream)", function)}
}

// verify (only with --sim) rebuilds bronze and compares it with the simulated table, as
// the demo's final check does.
func (inv *invoker) verify(ctx context.Context) (any, error) {
	if inv.ds == nil {
		return nil, &usageError{msg: "_verify needs --sim"}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	reads := inv.ds.db.Calls("ReadTable") - inv.verifies // the handlers' reads, not the checks'
	inv.verifies++
	sum, err := verifyDemo(ctx, inv.ds, inv.spec)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": len(sum.Diffs) == 0 && sum.Duplicates == 0, "diffs": sum.Diffs, "table_rows": sum.TableRows,
		"duplicates": sum.Duplicates, "table_reads": reads}, nil
}

type serveRequest struct {
	ID       int64           `json:"id"`
	Function string          `json:"function"`
	Event    json.RawMessage `json:"event"`
}

// serveResponse is one reply line. ID is null when a bad line's id could not be read;
// Line is the stdin line number of a bad request.
type serveResponse struct {
	ID     *int64 `json:"id"`
	Line   int    `json:"line,omitempty"`
	Output any    `json:"output,omitempty"`
	*invokeFailure
}

// RequestError is the reply to an --serve input line that is not a request: not JSON, or
// fields of the wrong type. The server answers it and goes on serving.
type RequestError struct {
	Line   int
	Reason string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("bad request line %d: %s (want {\"id\": n, \"function\": \"snapshot\"|\"stream\", \"event\": {...}})", e.Line, e.Reason)
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
			f := failureOf(&RequestError{Line: line, Reason: err.Error()})
			reply(serveResponse{ID: requestID(sc.Bytes()), Line: line, invokeFailure: &f})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := inv.invoke(ctx, req.Function, req.Event)
			resp := serveResponse{ID: &req.ID, Output: o}
			if err != nil {
				f := failureOf(err)
				resp = serveResponse{ID: &req.ID, invokeFailure: &f}
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
