package emulators

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func put(t *testing.T, c *s3.Client, bucket, key, body string, ifNoneMatch bool) error {
	t.Helper()
	in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader([]byte(body))}
	if ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := c.PutObject(t.Context(), in)
	return err
}

func get(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// gofakes3 refuses a conditional PutObject onto an existing key with 412 on its own.
func TestConditionalPut(t *testing.T) {
	srv := StartS3(t)
	c, b := srv.Client(), srv.Bucket(t)
	if err := put(t, c, b, "k", "one", true); err != nil {
		t.Fatal(err)
	}
	if err := put(t, c, b, "k", "two", true); code(err) != "PreconditionFailed" {
		t.Fatalf("second conditional put: %v, want PreconditionFailed", err)
	}
	if got := get(t, c, b, "k"); got != "one" {
		t.Fatalf("content = %q", got)
	}
}

// The server answers a conditional CopyObject as S3 does: 412 when the target exists.
func TestConditionalCopy(t *testing.T) {
	srv := StartS3(t)
	c, b := srv.Client(), srv.Bucket(t)
	for _, k := range []string{"src a", "src b"} {
		if err := put(t, c, b, k, k, false); err != nil {
			t.Fatal(err)
		}
	}
	cp := func(src string) error {
		_, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{
			Bucket: &b, Key: aws.String("dst"), CopySource: aws.String(b + "/" + "src%20" + src[4:]),
			IfNoneMatch: aws.String("*"),
		})
		return err
	}
	if err := cp("src a"); err != nil {
		t.Fatal(err)
	}
	if err := cp("src b"); code(err) != "PreconditionFailed" {
		t.Fatalf("second conditional copy: %v, want PreconditionFailed", err)
	}
	if got := get(t, c, b, "dst"); got != "src a" {
		t.Fatalf("content = %q", got)
	}
	_, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{
		Bucket: &b, Key: aws.String("dst2"), CopySource: aws.String(b + "/missing"), IfNoneMatch: aws.String("*"),
	})
	if code(err) != "NoSuchKey" {
		t.Fatalf("conditional copy of a missing source: %v, want NoSuchKey", err)
	}
}

// Why conditionalCopy exists: gofakes3 v1.2.0 alone ignores If-None-Match on CopyObject
// and overwrites the target. When this test fails, gofakes3 has learned it and the wrapper
// can go.
func TestBareGofakes3IgnoresConditionalCopy(t *testing.T) {
	hs := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(hs.Close)
	srv := &S3Server{URL: hs.URL}
	c, b := srv.Client(), srv.Bucket(t)
	for _, k := range []string{"a", "b"} {
		if err := put(t, c, b, k, k, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range []string{"a", "b"} {
		if _, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{
			Bucket: &b, Key: aws.String("dst"), CopySource: aws.String(b + "/" + src), IfNoneMatch: aws.String("*"),
		}); err != nil {
			t.Fatalf("copy %s: %v", src, err)
		}
	}
	if got := get(t, c, b, "dst"); got != "b" {
		t.Fatalf("content = %q: gofakes3 now honours conditional copy", got)
	}
}
