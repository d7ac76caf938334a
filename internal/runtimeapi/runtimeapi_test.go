package runtimeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	N int `json:"n"`
}

type output struct {
	Double int    `json:"double"`
	ARN    string `json:"arn"`
}

// TooBigError is a typed error, as the handlers return.
type TooBigError struct{ N int }

func (e *TooBigError) Error() string { return fmt.Sprintf("%d is too big", e.N) }

func double(ctx context.Context, ev event) (output, error) {
	if ev.N > 100 {
		return output{}, fmt.Errorf("wrapped: %w", &TooBigError{N: ev.N}) // reported as wrapError
	}
	if ev.N > 10 {
		return output{}, &TooBigError{N: ev.N}
	}
	lc, _ := lambdacontext.FromContext(ctx)
	if _, ok := ctx.Deadline(); !ok || lc == nil {
		return output{}, fmt.Errorf("no deadline or Lambda context")
	}
	return output{Double: 2 * ev.N, ARN: lc.InvokedFunctionArn}, nil
}

func newServer(t *testing.T) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A handler runs under aws-lambda-go's loop: its event decoded, its output encoded, and
// its error reported with aws-lambda-go's errorType (the returned value's type name).
func TestInvokeRunsTheHandlerAsLambdaDoes(t *testing.T) {
	s := newServer(t)
	if err := s.Register("double", double); err != nil {
		t.Fatal(err)
	}
	if err := s.Register("double", double); err == nil {
		t.Fatal("a second registration of a name must be refused")
	}
	ctx := context.Background()
	r, err := s.Invoke(ctx, "double", []byte(`{"n": 4}`))
	if err != nil || r.Error != nil || string(r.Output) != `{"double":8,"arn":"arn:aws:lambda:local:000000000000:function:double"}` {
		t.Fatalf("got %s %+v %v", r.Output, r.Error, err)
	}
	for _, c := range []struct{ event, errorType, message string }{
		{`{"n": 11}`, "TooBigError", "11 is too big"},
		{`{"n": 101}`, "wrapError", "wrapped: 101 is too big"},
		{`{"n": "x"}`, "UnmarshalTypeError", "json: cannot unmarshal"},
	} {
		r, err := s.Invoke(ctx, "double", []byte(c.event))
		if err != nil || r.Error == nil || r.Error.Type != c.errorType || !strings.Contains(r.Error.Message, c.message) || r.Output != nil {
			t.Errorf("%s: %s %+v %v, want errorType %s", c.event, r.Output, r.Error, err, c.errorType)
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(r.ErrorBody, &body); err != nil || body["errorType"] != c.errorType || body["errorMessage"] != r.Error.Message {
			t.Errorf("%s: error body %s", c.event, r.ErrorBody)
		}
	}
	if _, err := s.Invoke(ctx, "double", []byte(`{"n":`)); err == nil || !strings.Contains(err.Error(), "not a JSON document") {
		t.Errorf("invalid JSON: %v", err)
	}
	if _, err := s.Invoke(ctx, "nothing", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), `no function "nothing"`) {
		t.Errorf("unknown function: %v", err)
	}
}

// Invocations run at once, each in its own loop, as a Map's reads do in Lambda: n
// handlers that wait for each other all finish.
func TestInvocationsRunConcurrently(t *testing.T) {
	s := newServer(t)
	const n = 4
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	barrier := func(ctx context.Context, ev event) (int, error) {
		wg.Done()
		select {
		case <-all:
			return ev.N, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if err := s.Register("barrier", barrier); err != nil {
		t.Fatal(err)
	}
	// A deadlock guard, not a timing assertion: on a hang the test fails instead of stalling.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	results := make(chan string, n)
	for i := range n {
		go func() {
			r, err := s.Invoke(ctx, "barrier", []byte(fmt.Sprintf(`{"n": %d}`, i)))
			if err != nil {
				results <- "error: " + err.Error()
				return
			}
			results <- string(r.Output)
		}()
	}
	got := map[string]bool{}
	for range n {
		got[<-results] = true
	}
	for i := range n {
		if !got[fmt.Sprint(i)] {
			t.Errorf("results %v lack %d", got, i)
		}
	}
	s.mu.Lock()
	loops := s.fns["barrier"].loops
	s.mu.Unlock()
	if loops < n {
		t.Errorf("%d loops for %d concurrent invocations", loops, n)
	}
}
