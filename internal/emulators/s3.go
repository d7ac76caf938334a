// Package emulators gives tests the emulated AWS services they run against: an in-process
// S3 (gofakes3's protocol over objectStore, an in-memory store of our own, on an httptest
// server on 127.0.0.1) and the
// DynamoDB emulator (dynalite, started by scripts/test.sh, found through
// MSSQLCDC_DYNAMODB_ENDPOINT). Clients are production's (deltalog/location/awsclient,
// the options location.Open uses) with the emulator's endpoint, static credentials and
// region us-east-1, so a benchmark on the emulators measures the client production runs.
package emulators

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
)

// Region is the region every emulator client uses.
const Region = "us-east-1"

// Credentials are the static credentials every emulator client uses.
var Credentials = credentials.NewStaticCredentialsProvider("AKIDEMULATOR", "emulator-secret", "")

// S3EndpointEnv names the environment variable that, when set, points StartS3 at an S3
// emulator already running in another process (internal/emulators/s3server), e.g.
// "http://127.0.0.1:<port>": a benchmark then meters its own process without the
// emulator's CPU and memory (core/stream BenchmarkBatchRequests -batchreq.s3-process).
const S3EndpointEnv = "MSSQLCDC_S3_ENDPOINT"

// S3Server is a running S3 emulator, in process or (S3EndpointEnv) in another one.
type S3Server struct {
	// URL is the endpoint, "http://127.0.0.1:<port>".
	URL     string
	buckets atomic.Int64
	// external: the server runs in another process, which other test processes may share.
	external bool
}

// StartS3 starts the S3 emulator (gofakes3 over objectStore) for the test and stops it at
// cleanup.
//
// gofakes3 v1.2.0 honours If-None-Match: * on PutObject atomically, but ignores it on
// CopyObject (it copies over the target). The server here therefore answers conditional
// copies itself: it reads the source from the backend and writes the target with the
// backend's atomic conditional put, so a conditional copy onto an existing key gets 412
// PreconditionFailed as from S3.
//
// With S3EndpointEnv set, no server is started: the one at that endpoint is used.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	if ep := os.Getenv(S3EndpointEnv); ep != "" {
		return &S3Server{URL: ep, external: true}
	}
	srv := httptest.NewServer(s3Handler(mustStore(time.Now, "")))
	t.Cleanup(srv.Close)
	return &S3Server{URL: srv.URL}
}

// mustStore is newObjectStore, which fails only on a body directory it cannot create.
func mustStore(now func() time.Time, dir string) *objectStore {
	s, err := newObjectStore(now, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// NewS3Handler returns a fresh S3 emulator as an http.Handler, the one StartS3 serves
// (gofakes3 with conditional copy, no automatic buckets), for programs that serve it
// themselves (internal/emulators/s3server). Bodies are kept in memory, or with dir set in
// one file each under dir (created if missing), so that a long benchmark's emulator holds
// only keys and metadata. Errors: dir cannot be created.
func NewS3Handler(dir string) (http.Handler, error) {
	s, err := newObjectStore(time.Now, dir)
	if err != nil {
		return nil, err
	}
	return s3Handler(s), nil
}

// StartS3Clock is StartS3 on a clock of the caller's: the objects the emulator writes get
// their modification time (LastModified in LIST, HEAD and GET) from now, for benchmarks
// that run in simulated time, whose retention, VACUUM and log clean-up read those times.
// The server runs in process whatever S3EndpointEnv says, and does not check a request's
// signing time against now (the SDK signs with the real time). now is called from the
// server's goroutines: it must be safe for concurrent use.
func StartS3Clock(t testing.TB, now func() time.Time) *S3Server {
	t.Helper()
	ts := clockSource(now)
	srv := httptest.NewServer(s3Handler(mustStore(now, ""), gofakes3.WithTimeSource(ts), gofakes3.WithTimeSkewLimit(0)))
	t.Cleanup(srv.Close)
	return &S3Server{URL: srv.URL}
}

// ClockPath is the control endpoint of an S3 emulator on a settable simulated clock
// (NewS3HandlerClock; s3server -clock; StartS3ProcessClock): a PUT there whose body is a
// time in RFC 3339 with nanoseconds sets the clock, and is answered 204 once every later
// request sees it; a body that is not such a time gets 400. "_" cannot begin a bucket
// name, so the path is no S3 request's.
const ClockPath = "/_emulator/clock"

// NewS3HandlerClock is NewS3Handler on a simulated clock that starts at start and moves
// only when set through ClockPath: objects get their modification times from it, and
// requests are not checked against it for skew (as StartS3Clock).
func NewS3HandlerClock(start time.Time, dir string) (http.Handler, error) {
	var ns atomic.Int64
	ns.Store(start.UnixNano())
	ts := clockSource(func() time.Time { return time.Unix(0, ns.Load()).UTC() })
	store, err := newObjectStore(ts.Now, dir)
	if err != nil {
		return nil, err
	}
	s3h := s3Handler(store, gofakes3.WithTimeSource(ts), gofakes3.WithTimeSkewLimit(0))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ClockPath {
			s3h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 100))
		t, perr := time.Parse(time.RFC3339Nano, string(body))
		switch {
		case r.Method != http.MethodPut:
			writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "PUT the time")
		case err != nil || perr != nil:
			writeError(w, http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("clock: want an RFC 3339 time, got %q", body))
		default:
			ns.Store(t.UnixNano())
			w.WriteHeader(http.StatusNoContent)
		}
	}), nil
}

// SetClock sets the simulated clock of an emulator served by NewS3HandlerClock
// (StartS3ProcessClock) to t, and returns once the emulator has it. Errors: the request's,
// or the emulator's answer when not 204 (one without a clock answers as S3 to an unknown
// bucket).
func (s *S3Server) SetClock(ctx context.Context, t time.Time) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.URL+ClockPath, strings.NewReader(t.UTC().Format(time.RFC3339Nano)))
	if err != nil {
		return err
	}
	resp, err := clockClient.Do(req)
	if err != nil {
		return fmt.Errorf("set the S3 emulator's clock: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("set the S3 emulator's clock: %s: %s", resp.Status, msg)
	}
	return nil
}

// clockClient sends SetClock's requests, on connections of its own.
var clockClient = &http.Client{Transport: &http.Transport{}}

// clockSource is a gofakes3.TimeSource reading a caller's clock.
type clockSource func() time.Time

func (c clockSource) Now() time.Time                  { return c() }
func (c clockSource) Since(t time.Time) time.Duration { return c().Sub(t) }

func s3Handler(backend *objectStore, opts ...gofakes3.Option) http.Handler {
	faker := gofakes3.New(backend, append([]gofakes3.Option{gofakes3.WithAutoBucket(false)}, opts...)...)
	return conditionalCopy(backend, rangeWithoutChecksum(faker.Server()))
}

// rangeWithoutChecksum drops the x-amz-checksum-* headers from the answer to a ranged
// GET. gofakes3 v1.2.0 sends the whole object's stored checksum with a part of it, which
// the AWS SDK (response checksum validation "when supported", the default of a client
// from config.LoadDefaultConfig) checks against the part and refuses. S3 sends no
// whole-object checksum with a range (MinIO changed to match it: minio/minio#17105).
func rangeWithoutChecksum(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get("Range") == "" {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&checksumDropper{ResponseWriter: w}, r)
	})
}

// checksumDropper removes checksum headers before the status line is written.
type checksumDropper struct {
	http.ResponseWriter
	wrote bool
}

func (d *checksumDropper) WriteHeader(status int) {
	if !d.wrote {
		d.wrote = true
		h := d.Header()
		for k := range h {
			if strings.HasPrefix(k, "X-Amz-Checksum-") {
				h.Del(k)
			}
		}
	}
	d.ResponseWriter.WriteHeader(status)
}

func (d *checksumDropper) Write(b []byte) (int, error) {
	if !d.wrote {
		d.WriteHeader(http.StatusOK)
	}
	return d.ResponseWriter.Write(b)
}

// Client returns an S3 client for the emulator: production's client (awsclient.NewS3,
// the options location.Open uses) with the emulator's endpoint, path-style addressing,
// Region and Credentials. It panics if the AWS configuration cannot be loaded (a
// malformed shared config file in the environment).
func (s *S3Server) Client() *s3.Client {
	c, err := S3Client(s.URL)
	if err != nil {
		panic(err)
	}
	return c
}

// S3Client is S3Server.Client for an emulator at endpoint, for programs (s3server).
func S3Client(endpoint string) (*s3.Client, error) {
	cfg, err := awsConfig()
	if err != nil {
		return nil, err
	}
	return awsclient.NewS3(cfg, endpoint, true), nil
}

// awsConfig is production's AWS configuration (awsclient.LoadConfig: the default chain, so
// that environment settings such as AWS_RETRY_MODE apply as in production) in Region
// with Credentials, loaded once.
var awsConfig = sync.OnceValues(func() (aws.Config, error) {
	return awsclient.LoadConfig(context.Background(), Region, Credentials)
})

// Bucket creates a bucket with a fresh name ("bucket-<n>") and returns the name.
func (s *S3Server) Bucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("bucket-%d", s.buckets.Add(1))
	if s.external {
		name = UniqueName("bucket-") // the server may serve other processes' tests
	}
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// conditionalCopy answers PUT requests that carry both x-amz-copy-source and
// If-None-Match: *, and passes everything else to next.
func conditionalCopy(backend gofakes3.Backend, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := r.Header.Get("X-Amz-Copy-Source")
		if r.Method != http.MethodPut || src == "" || r.Header.Get("If-None-Match") != "*" {
			next.ServeHTTP(w, r)
			return
		}
		dstBucket, dstKey, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		srcPath, err := url.PathUnescape(strings.SplitN(src, "?", 2)[0])
		srcBucket, srcKey, ok2 := strings.Cut(strings.TrimPrefix(srcPath, "/"), "/")
		if !ok || !ok2 || err != nil {
			writeError(w, http.StatusBadRequest, "InvalidArgument", "bad copy request")
			return
		}
		obj, err := backend.GetObject(srcBucket, srcKey, nil)
		if err != nil {
			writeBackendError(w, err)
			return
		}
		defer obj.Contents.Close()
		cond := &gofakes3.PutConditions{IfNoneMatch: aws.String("*")}
		if _, err := backend.PutObject(dstBucket, dstKey, obj.Metadata, obj.Contents, obj.Size, cond); err != nil {
			writeBackendError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		xml.NewEncoder(w).Encode(gofakes3.CopyObjectResult{
			ETag:         `"` + hex.EncodeToString(obj.Hash) + `"`,
			LastModified: gofakes3.NewContentTime(time.Now()),
		})
	})
}

func writeBackendError(w http.ResponseWriter, err error) {
	var coded interface{ ErrorCode() gofakes3.ErrorCode }
	if !errors.As(err, &coded) {
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeError(w, coded.ErrorCode().Status(), string(coded.ErrorCode()), err.Error())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code, Message: msg})
}

// StartS3Process builds internal/emulators/s3server and starts it in a child process
// (stopped at tb's cleanup, and by itself if this process dies), and returns it as an
// external S3Server: a benchmark then meters its own process without the emulator's CPU
// and memory (AWS's work in production). Needs the go command.
func StartS3Process(tb testing.TB) *S3Server {
	tb.Helper()
	return startS3Process(tb)
}

// StartS3ProcessClock is StartS3Process on a simulated clock (s3server -clock,
// NewS3HandlerClock) that starts at start and moves only when the caller sets it
// (S3Server.SetClock): StartS3Clock for a benchmark that runs in simulated time and
// meters its own process only.
//
// The emulator keeps object bodies in files under a temporary directory of tb's (s3server
// -dir), not in its heap: a simulated month of a hundred tables stores tens of GB.
func StartS3ProcessClock(tb testing.TB, start time.Time) *S3Server {
	tb.Helper()
	return startS3Process(tb, "-clock", start.UTC().Format(time.RFC3339Nano), "-dir", tb.TempDir())
}

func startS3Process(tb testing.TB, args ...string) *S3Server {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "s3server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mssqlcdc/mssqlcdc/internal/emulators/s3server").CombinedOutput(); err != nil {
		tb.Fatalf("build s3server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"-exit-on-stdin-eof"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("s3server: no endpoint: %v", err)
	}
	return &S3Server{URL: strings.TrimSpace(line), external: true}
}
