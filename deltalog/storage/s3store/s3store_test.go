package s3store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

func TestConformance(t *testing.T) {
	srv := emulators.StartS3(t)
	for _, prefix := range []string{"", "tables/orders"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			storagetest.Run(t, func(t *testing.T) storage.Store {
				return s3store.New(srv.Client(), srv.Bucket(t), prefix)
			})
		})
	}
}

func TestPrefixIsolation(t *testing.T) {
	srv := emulators.StartS3(t)
	bucket := srv.Bucket(t)
	a := s3store.New(srv.Client(), bucket, "/t/a/")
	ab := s3store.New(srv.Client(), bucket, "t/ab")
	ctx := t.Context()
	if err := ab.PutIfAbsent(ctx, "x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := a.PutIfAbsent(ctx, "x", []byte("2")); err != nil {
		t.Fatalf("keys of another prefix collided: %v", err)
	}
	n := 0
	for _, err := range a.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("list under t/a saw %d objects, want 1", n)
	}
	if a.URL() != "s3://"+bucket+"/t/a" {
		t.Fatalf("URL = %q", a.URL())
	}
}

func TestKeysNeedingEscapes(t *testing.T) {
	srv := emulators.StartS3(t)
	s := s3store.New(srv.Client(), srv.Bucket(t), "my table")
	ctx := t.Context()
	src, dst := "date=2024-01-01 00:00/a+b%c.parquet", "x/é ü.json"
	if err := s.Put(ctx, src, strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyIfAbsent(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyIfAbsent(ctx, src, dst); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second copy: %v", err)
	}
	b, err := s.GetRange(ctx, dst, 0, -1)
	if err != nil || !bytes.Equal(b, []byte("v")) {
		t.Fatalf("copied = %q, %v", b, err)
	}
}

func TestMissingBucketIsNotNotFound(t *testing.T) {
	srv := emulators.StartS3(t)
	s := s3store.New(srv.Client(), "no-such-bucket", "")
	_, err := s.Get(t.Context(), "x")
	if err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get on a missing bucket: err = %v, want an error that is not ErrNotFound", err)
	}
}

type pipeOnly struct{ r io.Reader }

func (p pipeOnly) Read(b []byte) (int, error) { return p.r.Read(b) }

// A reader that cannot seek and is larger than the in-memory spool goes through a file.
func TestPutLargeUnseekable(t *testing.T) {
	srv := emulators.StartS3(t)
	s := s3store.New(srv.Client(), srv.Bucket(t), "")
	data := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, (33<<20)/8)
	if err := s.Put(t.Context(), "big", pipeOnly{bytes.NewReader(data)}, -1); err != nil {
		t.Fatal(err)
	}
	info, err := s.Head(t.Context(), "big")
	if err != nil || info.Size != int64(len(data)) {
		t.Fatalf("Head = %+v, %v; want size %d", info, err, len(data))
	}
	tail, err := s.GetRange(t.Context(), "big", int64(len(data))-3, -1)
	if err != nil || !bytes.Equal(tail, []byte{6, 7, 8}) {
		t.Fatalf("tail = %v, %v", tail, err)
	}
}

// conflicting answers the first n conditional writes with S3's 409, then passes through.
type conflicting struct {
	s3store.Client
	n int
}

var errConflict = &smithy.GenericAPIError{Code: "ConditionalRequestConflict", Message: "A conflicting conditional operation is in progress"}

func (c *conflicting) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if in.IfNoneMatch != nil && c.n > 0 {
		c.n--
		return nil, errConflict
	}
	return c.Client.PutObject(ctx, in, o...)
}

func (c *conflicting) CopyObject(ctx context.Context, in *s3.CopyObjectInput, o ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	if in.IfNoneMatch != nil && c.n > 0 {
		c.n--
		return nil, errConflict
	}
	return c.Client.CopyObject(ctx, in, o...)
}

func TestConflictIsRetried(t *testing.T) {
	srv := emulators.StartS3(t)
	c := &conflicting{Client: srv.Client(), n: 2}
	s := s3store.New(c, srv.Bucket(t), "")
	ctx := t.Context()
	if err := s.PutIfAbsent(ctx, "a", []byte("1")); err != nil {
		t.Fatalf("PutIfAbsent after two 409s: %v", err)
	}
	c.n = 2
	if err := s.CopyIfAbsent(ctx, "a", "b"); err != nil {
		t.Fatalf("CopyIfAbsent after two 409s: %v", err)
	}
	c.n = 1
	if err := s.PutIfAbsent(ctx, "a", []byte("2")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("409 then 412: %v, want ErrExists", err)
	}
	c.n = 100
	if err := s.PutIfAbsent(ctx, "c", []byte("3")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("409 every time: %v, want ErrExists", err)
	}
}

// A whole-object read through production's client checks S3's stored checksum
// (docs/decisions/0015: response validation "when supported"): a body whose bytes do not
// match its x-amz-checksum-crc32 is refused, which needs GetRange to read the body to its
// end, where the SDK checks it. The server here answers every GET with one object.
func TestGetRangeRefusesABodyNotMatchingItsChecksum(t *testing.T) {
	body := []byte(`{"commitInfo":{}}` + "\n")
	sum := crc32.ChecksumIEEE(body)
	good := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum))
	bad := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum+1))
	for _, c := range []struct {
		name, checksum string
		ok             bool
	}{{"matching", good, true}, {"not matching", bad, false}} {
		t.Run(c.name, func(t *testing.T) {
			var mode string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mode = r.Header.Get("X-Amz-Checksum-Mode")
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.Header().Set("X-Amz-Checksum-Crc32", c.checksum)
				w.Write(body)
			}))
			defer srv.Close()
			client, err := emulators.S3Client(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s3store.New(client, "bucket", "t").GetRange(t.Context(), "_delta_log/0.json", 0, -1)
			if mode != "ENABLED" {
				t.Fatalf("the GET asked for no checksum (x-amz-checksum-mode %q)", mode)
			}
			if c.ok != (err == nil) || (c.ok && !bytes.Equal(got, body)) {
				t.Fatalf("read %q, %v", got, err)
			}
		})
	}
}

// refusingKey is a client whose DeleteObjects deletes every key but one, which it reports
// in the answer's per-key Errors (as S3 does for a key it could not delete).
type refusingKey struct {
	s3store.Client
	key string
}

func (c *refusingKey) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, o ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	var keep []types.ObjectIdentifier
	for _, id := range in.Delete.Objects {
		if aws.ToString(id.Key) != c.key {
			keep = append(keep, id)
		}
	}
	in2 := *in
	in2.Delete = &types.Delete{Objects: keep, Quiet: in.Delete.Quiet}
	out, err := c.Client.DeleteObjects(ctx, &in2, o...)
	if err != nil {
		return out, err
	}
	out.Errors = append(out.Errors, types.Error{Key: aws.String(c.key), Code: aws.String("InternalError"), Message: aws.String("We encountered an internal error. Please try again.")})
	return out, nil
}

// A key DeleteObjects reports it could not delete makes DeleteKeys fail (naming it), though
// the request deleted the others: callers that need an order (checkpoint.Clean) stop there.
func TestDeleteKeysPerKeyErrorIsAFailure(t *testing.T) {
	srv := emulators.StartS3(t)
	s := s3store.New(&refusingKey{Client: srv.Client(), key: "k/1"}, srv.Bucket(t), "")
	ctx := t.Context()
	for _, k := range []string{"k/0", "k/1", "k/2"} {
		if err := s.PutIfAbsent(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	err := storage.DeleteKeys(ctx, s, []string{"k/0", "k/1", "k/2"})
	if err == nil || !strings.Contains(err.Error(), "k/1") {
		t.Fatalf("DeleteKeys with k/1 refused: %v, want an error naming k/1", err)
	}
	var left []string
	for info, err := range s.List(ctx, "k/", "") {
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, info.Key)
	}
	if len(left) != 1 || left[0] != "k/1" {
		t.Errorf("left %v, want [k/1]", left)
	}
}
