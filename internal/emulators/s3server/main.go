// Command s3server serves the in-process S3 emulator of internal/emulators (gofakes3 in
// memory, with conditional copy) on 127.0.0.1, for tests outside Go that need S3: the
// state machine tests start it as a child process.
//
//	s3server [-addr 127.0.0.1:0] [-bucket NAME]... [-create-dynamo-table URL,NAME] [-clock RFC3339] [-dir DIR] [-exit-on-stdin-eof]
//
// It creates the buckets named, and with -create-dynamo-table the S3DynamoDBLogStore log
// table NAME on the DynamoDB endpoint URL (dynalite; TTL left off, as dynalite has none),
// then prints one line, the S3 endpoint "http://127.0.0.1:<port>", and serves until
// SIGINT or SIGTERM (or, with -exit-on-stdin-eof, until stdin closes, so it cannot
// outlive a parent that dies). Clients address buckets path-style and may use any static
// credentials in region us-east-1; the emulator checks no signature. Everything is held in
// memory and lost when it stops; with -dir, object bodies are kept in files under DIR
// instead (the heap holds keys and metadata), for a benchmark that stores more than
// memory should hold. With -clock the emulator runs on a simulated clock that
// starts at that time and moves only when set through emulators.ClockPath
// (emulators.NewS3HandlerClock): objects get their modification times from it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// buckets is the repeatable -bucket flag.
type buckets []string

func (b *buckets) String() string { return strings.Join(*b, ",") }

func (b *buckets) Set(v string) error {
	if v == "" {
		return errors.New("empty bucket name")
	}
	*b = append(*b, v)
	return nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "s3server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("s3server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address; port 0 picks a free port")
	var bs buckets
	fs.Var(&bs, "bucket", "create this bucket before serving (repeatable)")
	dynamoTable := fs.String("create-dynamo-table", "", "URL,NAME: create the Delta log table NAME on the DynamoDB endpoint URL before serving")
	clock := fs.String("clock", "", "RFC 3339 time: run on a simulated clock starting there, set by a PUT to "+emulators.ClockPath)
	dir := fs.String("dir", "", "keep object bodies in files under this directory instead of in memory")
	stdinEOF := fs.Bool("exit-on-stdin-eof", false, "stop when stdin closes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	handler, err := emulators.NewS3Handler(*dir)
	if *clock != "" {
		start, perr := time.Parse(time.RFC3339Nano, *clock)
		if perr != nil {
			return fmt.Errorf("-clock: %w", perr)
		}
		handler, err = emulators.NewS3HandlerClock(start, *dir)
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *dynamoTable != "" {
		endpoint, name, ok := strings.Cut(*dynamoTable, ",")
		if !ok || endpoint == "" || name == "" {
			return fmt.Errorf("-create-dynamo-table %q: want URL,NAME", *dynamoTable)
		}
		if err := createLogTable(ctx, endpoint, name); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	endpoint := "http://" + ln.Addr().String()

	if err := createBuckets(ctx, endpoint, bs); err != nil {
		_ = srv.Close()
		return err
	}
	if _, err := fmt.Fprintln(stdout, endpoint); err != nil {
		_ = srv.Close()
		return err
	}

	if *stdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			stop()
		}()
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// createBuckets creates each bucket through the S3 API of the server at endpoint.
func createBuckets(ctx context.Context, endpoint string, names []string) error {
	c, err := emulators.S3Client(endpoint)
	if err != nil {
		return err
	}
	for _, b := range names {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	return nil
}

// createLogTable creates the S3DynamoDBLogStore table name on the DynamoDB endpoint
// (dynamo.CreateTable; an existing table is not an error).
func createLogTable(ctx context.Context, endpoint, name string) error {
	c, err := emulators.DynamoDBClient(endpoint)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return dynamo.CreateTable(ctx, c, name, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond})
}
