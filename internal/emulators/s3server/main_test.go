package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// start runs the server with args and returns its endpoint, a function that closes its
// stdin, and the channel run's result arrives on.
func start(t *testing.T, ctx context.Context, args ...string) (string, func(), <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, inR, outW, io.Discard)
		outW.CloseWithError(io.EOF)
		done <- err
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no endpoint line: %v (run: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	return strings.TrimSpace(line), func() { inW.Close() }, done
}

func wait(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}

// The server prints its endpoint after creating the buckets; objects put there read back;
// it stops when its context ends.
func TestServesBucketsUntilStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ep, _, done := start(t, ctx, "-bucket", "lake", "-bucket", "other")
	if !strings.HasPrefix(ep, "http://127.0.0.1:") {
		t.Fatalf("endpoint %q", ep)
	}
	c := s3.New(s3.Options{Region: emulators.Region, Credentials: emulators.Credentials, BaseEndpoint: aws.String(ep), UsePathStyle: true})
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("a/b"), Body: bytes.NewReader([]byte("x"))}); err != nil {
		t.Fatal(err)
	}
	// A conditional put onto the key is refused, as by S3.
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("a/b"), Body: bytes.NewReader([]byte("y")), IfNoneMatch: aws.String("*")})
	if err == nil || !strings.Contains(err.Error(), "PreconditionFailed") {
		t.Fatalf("conditional put onto an existing key: %v", err)
	}
	out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(out.Buckets) != 2 {
		t.Fatalf("buckets %+v %v", out, err)
	}
	// No automatic buckets: a bucket nobody created does not exist.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("nope"), Key: aws.String("k"), Body: bytes.NewReader(nil)}); err == nil {
		t.Fatal("put into a bucket that was not created succeeded")
	}
	cancel()
	wait(t, done)
}

func TestExitsOnStdinEOF(t *testing.T) {
	_, closeIn, done := start(t, t.Context(), "-exit-on-stdin-eof")
	closeIn()
	wait(t, done)
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"extra"}, {"-create-dynamo-table", "http://x"}, {"-bucket", ""}, {"-addr", "256.0.0.1:0"}, {"-clock", "today"}} {
		if err := run(t.Context(), args, strings.NewReader(""), io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// -create-dynamo-table creates the log table on dynalite, and again without error.
func TestCreatesDynamoTable(t *testing.T) {
	ep := emulators.DynamoDBEndpoint(t)
	name := emulators.UniqueName("s3server_")
	for range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		_, _, done := start(t, ctx, "-create-dynamo-table", ep+","+name)
		cancel()
		wait(t, done)
	}
	out, err := emulators.DynamoDB(t).DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Table.KeySchema) != 2 || *out.Table.KeySchema[0].AttributeName != "tablePath" || *out.Table.KeySchema[1].AttributeName != "fileName" {
		t.Fatalf("key schema %+v", out.Table.KeySchema)
	}
}

// With -clock the server runs on the simulated clock, set through emulators.ClockPath.
func TestClock(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ep, _, done := start(t, ctx, "-bucket", "lake", "-clock", t0.Format(time.RFC3339))
	srv := &emulators.S3Server{URL: ep}
	c := srv.Client()
	later := t0.Add(48 * time.Hour)
	for _, at := range []time.Time{t0, later} {
		if err := srv.SetClock(ctx, at); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("k"), Body: bytes.NewReader([]byte("x"))}); err != nil {
			t.Fatal(err)
		}
		out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("k")})
		if err != nil {
			t.Fatal(err)
		}
		if !out.LastModified.Equal(at) {
			t.Fatalf("modified %v, want %v", out.LastModified, at)
		}
	}
	cancel()
	wait(t, done)
}
