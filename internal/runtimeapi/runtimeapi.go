// Package runtimeapi runs Lambda handlers locally through aws-lambda-go's own runtime loop:
// a Server is a Lambda Runtime API (the HTTP interface the provided.al2023 runtime gives a
// function's bootstrap binary) on 127.0.0.1, and each registered handler runs under
// lambda.StartWithOptions, the call the functions' main packages make. So an invocation is
// decoded, run and encoded, and a failure reported, exactly as in Lambda: the error body
// is the one aws-lambda-go builds, {"errorMessage", "errorType"}, where errorType is the Go
// type name of the error value the handler returned (the name Step Functions matches;
// docs/handlers.md).
//
// aws-lambda-go's loop exits the process when its Runtime API goes away, so a Server is
// never closed: it lives as long as the process, as a Lambda execution environment does.
package runtimeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
)

// envRuntimeAPI is where aws-lambda-go finds the Runtime API (host:port, read once when a
// loop starts).
const envRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// DefaultTimeout is an invocation's deadline when Server.Timeout is zero: Lambda's
// longest function timeout.
const DefaultTimeout = 15 * time.Minute

// Server is a local Lambda Runtime API serving registered functions.
type Server struct {
	// Timeout is each invocation's deadline (the context the handler sees); DefaultTimeout
	// when zero.
	Timeout time.Duration

	addr string

	mu     sync.Mutex
	fns    map[string]*function
	nextID int64

	startMu sync.Mutex // loops start one at a time: envRuntimeAPI is process-wide
}

// function is one registered handler and its runtime loops.
type function struct {
	name    string
	handler any
	opts    []lambda.Option
	queue   chan *invocation

	// under Server.mu
	loops   int                   // loops started
	idle    int                   // loops waiting in /next
	queued  int                   // invocations not yet taken by a loop
	polled  map[int]chan struct{} // closed at each loop's first /next
	running map[string]*invocation
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan Result
}

// Result is what the handler's loop posted for one invocation: the response body, or the
// error aws-lambda-go reported (ErrorBody as it was sent, Error decoded).
type Result struct {
	Output    []byte
	Error     *messages.InvokeResponse_Error
	ErrorBody []byte
}

// New starts a Runtime API on a free port of 127.0.0.1.
func New() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime API: %w", err)
	}
	s := &Server{addr: ln.Addr().String(), fns: map[string]*function{}}
	mux := http.NewServeMux()
	const base = "/{fn}/{loop}/2018-06-01/runtime/invocation/"
	mux.HandleFunc("GET "+base+"next", s.next)
	mux.HandleFunc("POST "+base+"{id}/response", s.post(false))
	mux.HandleFunc("POST "+base+"{id}/error", s.post(true))
	go func() { _ = http.Serve(ln, mux) }()
	return s, nil
}

// Register makes handler (any signature lambda.Start takes) callable as name, with the
// options lambda.StartWithOptions takes (lambda.WithContext for a base context). Its loops
// start on demand, one per invocation running at once.
func (s *Server) Register(name string, handler any, opts ...lambda.Option) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fns[name]; ok {
		return fmt.Errorf("runtime API: function %q registered twice", name)
	}
	s.fns[name] = &function{name: name, handler: handler, opts: opts, queue: make(chan *invocation, 1024),
		polled: map[int]chan struct{}{}, running: map[string]*invocation{}}
	return nil
}

// Invoke runs function name on payload (a JSON document, as the Lambda Invoke API takes)
// and returns what its loop posted. The error is for the call itself (an unknown
// function, ctx done before the result), never the handler's: that is in Result.Error.
func (s *Server) Invoke(ctx context.Context, name string, payload []byte) (Result, error) {
	if !json.Valid(payload) {
		return Result{}, fmt.Errorf("the event is not a JSON document (Lambda's Invoke API refuses it too)")
	}
	s.mu.Lock()
	f, ok := s.fns[name]
	if !ok {
		s.mu.Unlock()
		return Result{}, fmt.Errorf("runtime API: no function %q", name)
	}
	s.nextID++
	timeout := s.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	inv := &invocation{id: fmt.Sprintf("%s-%d", name, s.nextID), payload: payload,
		deadline: time.Now().Add(timeout), done: make(chan Result, 1)}
	f.queued++
	grow := f.idle < f.queued
	s.mu.Unlock()
	if grow {
		s.startLoop(f)
	}
	f.queue <- inv
	select {
	case r := <-inv.done:
		return r, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// startLoop starts one more aws-lambda-go runtime loop for f and returns once it has asked
// for its first invocation (so it has read envRuntimeAPI, which then points elsewhere).
func (s *Server) startLoop(f *function) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	k := f.loops
	f.loops++
	polled := make(chan struct{})
	f.polled[k] = polled
	s.mu.Unlock()
	prev, had := os.LookupEnv(envRuntimeAPI)
	_ = os.Setenv(envRuntimeAPI, fmt.Sprintf("%s/%s/%d", s.addr, f.name, k))
	go lambda.StartWithOptions(f.handler, f.opts...)
	<-polled
	if had {
		_ = os.Setenv(envRuntimeAPI, prev)
	} else {
		_ = os.Unsetenv(envRuntimeAPI)
	}
}

// next is GET .../invocation/next: a loop waits for its next invocation.
func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.fns[r.PathValue("fn")]
	if !ok {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	k, _ := strconv.Atoi(r.PathValue("loop"))
	if ch, first := f.polled[k]; first {
		delete(f.polled, k)
		close(ch)
	}
	f.idle++
	s.mu.Unlock()
	inv := <-f.queue // a loop waits as long as it takes, as in Lambda
	s.mu.Lock()
	f.idle--
	f.queued--
	f.running[inv.id] = inv
	s.mu.Unlock()
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:local:000000000000:function:"+f.name)
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.payload)
}

// post is POST .../invocation/{id}/response or /error: a loop reports an outcome.
func (s *Server) post(failed bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		var inv *invocation
		if f, ok := s.fns[r.PathValue("fn")]; ok {
			inv = f.running[r.PathValue("id")]
			delete(f.running, r.PathValue("id"))
		}
		s.mu.Unlock()
		if inv == nil {
			http.Error(w, "no such invocation", http.StatusNotFound)
			return
		}
		res := Result{Output: body}
		if failed {
			res = Result{ErrorBody: body, Error: &messages.InvokeResponse_Error{}}
			if err := json.Unmarshal(body, res.Error); err != nil {
				res.Error = &messages.InvokeResponse_Error{Type: "Runtime.InvalidErrorBody", Message: string(body)}
			}
		}
		inv.done <- res
		w.WriteHeader(http.StatusAccepted)
	}
}
