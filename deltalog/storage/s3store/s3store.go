// Package s3store is a storage.Store on Amazon S3 (or an S3-compatible endpoint), through
// aws-sdk-go-v2. A Store is rooted at a bucket and a key prefix.
//
// Conditional writes use S3's If-None-Match: * (PutObject and CopyObject, 2024–2025): the
// service refuses with 412 Precondition Failed when the key exists, or 409
// ConditionalRequestConflict when a conflicting write to the same key is in flight; both
// are storage.ErrExists. Every SDK error is mapped in mapErr.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Client is the part of *s3.Client the store uses, with the SDK's signatures.
type Client interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

var _ Client = (*s3.Client)(nil)

// Store is a storage.Store on one bucket and prefix. Safe for concurrent use.
type Store struct {
	client Client
	bucket string
	prefix string // "" or ending in "/"
}

var _ storage.Store = (*Store)(nil)

// New returns a Store for s3://bucket/prefix. prefix may be empty; it is cleaned by
// storage.CleanPrefix (empty segments and leading and trailing slashes dropped), so the
// object keys agree with the DynamoDB log store's tablePath and with Spark. It does no
// I/O.
func New(client Client, bucket, prefix string) *Store {
	if clean, err := storage.CleanPrefix(prefix); err == nil {
		prefix = clean
	} else {
		// A "." or ".." segment: location.Open refuses such URLs; a caller that built
		// the prefix itself gets it as given, trimmed.
		prefix = strings.Trim(prefix, "/")
	}
	if prefix != "" {
		prefix += "/"
	}
	return &Store{client: client, bucket: bucket, prefix: prefix}
}

// Client is the client the store was made with.
func (s *Store) Client() Client { return s.client }

// URL is "s3://bucket/prefix" without a trailing slash.
func (s *Store) URL() string {
	return strings.TrimSuffix("s3://"+s.bucket+"/"+s.prefix, "/")
}

func (s *Store) key(k string) string { return s.prefix + k }

// Get opens the object for reading.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	return out.Body, nil
}

var _ storage.TagGetter = (*Store)(nil)

// GetTag reads the whole object with one GetObject and returns it with the ETag that
// GetObject answered, without quotes, as List and Head give it (storage.TagGetter).
func (s *Store) GetTag(ctx context.Context, key string) ([]byte, string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if err != nil {
		return nil, "", mapErr("get", key, err)
	}
	defer out.Body.Close()
	b, err := readAll(out.Body, aws.ToInt64(out.ContentLength))
	if err != nil {
		return nil, "", fmt.Errorf("s3store: get %s: %w", key, err)
	}
	return b, etagOf(out.ETag), nil
}

// GetRange reads length bytes from offset (length < 0 to the end) with a Range request.
// A range past the end is cut at the end.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 {
		return nil, fmt.Errorf("s3store: get range %s: negative offset %d", key, offset)
	}
	if length == 0 {
		if _, err := s.Head(ctx, key); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	rng := fmt.Sprintf("bytes=%d-", offset)
	if length > 0 {
		rng = fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key)), Range: &rng})
	if err != nil {
		return nil, mapErr("get range", key, err)
	}
	defer out.Body.Close()
	b, err := readAll(out.Body, aws.ToInt64(out.ContentLength))
	if err != nil {
		return nil, fmt.Errorf("s3store: get range %s: %w", key, err)
	}
	return b, nil
}

// maxPresized is the largest body readAll allocates at once from its announced size; a
// larger one grows as io.ReadAll grows it.
const maxPresized = 64 << 20

// readAll is io.ReadAll starting from the body's announced size (the response's
// Content-Length): one allocation of the body's size where io.ReadAll, starting at 512
// bytes and growing, allocates about twice a 50 KB body in eight steps and copies it as
// often. The one spare byte lets the read that meets the end of the body come without
// growing: that read is where the SDK checks the body's checksum (full GETs, response
// checksum validation), so the body is always read to io.EOF. A body longer or shorter
// than announced is read as io.ReadAll reads it.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > maxPresized {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// Head describes the object. The ETag is returned without quotes.
func (s *Store) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if err != nil {
		return storage.ObjectInfo{}, mapErr("head", key, err)
	}
	return storage.ObjectInfo{
		Key:     key,
		Size:    aws.ToInt64(out.ContentLength),
		ModTime: aws.ToTime(out.LastModified),
		ETag:    etagOf(out.ETag),
	}, nil
}

// Put writes the object with one PutObject (S3 makes it atomic; at most 5 GiB). With a known
// size and a reader that can seek (a file, a bytes.Reader) the body streams. Other readers
// are spooled first, since the SDK must rewind the body to sign it: in memory up to
// spoolInMemory bytes, beyond that to a temporary file.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	body, n, cleanup, err := seekable(r, size)
	if err != nil {
		return fmt.Errorf("s3store: put %s: %w", key, err)
	}
	defer cleanup()
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.key(key)), Body: body, ContentLength: &n,
	})
	if err != nil {
		return mapErr("put", key, err)
	}
	return nil
}

// spoolInMemory is how much of an unseekable body Put holds in memory before it spools the
// body to a temporary file instead.
const spoolInMemory = 32 << 20

func seekable(r io.Reader, size int64) (io.ReadSeeker, int64, func(), error) {
	nop := func() {}
	if rs, ok := r.(io.ReadSeeker); ok && size >= 0 {
		return rs, size, nop, nil
	}
	var buf bytes.Buffer
	if size > 0 && size <= spoolInMemory {
		buf.Grow(int(size))
	}
	n, err := io.CopyN(&buf, r, spoolInMemory+1)
	if errors.Is(err, io.EOF) {
		return bytes.NewReader(buf.Bytes()), n, nop, nil
	}
	if err != nil {
		return nil, 0, nop, err
	}
	f, err := os.CreateTemp("", "s3store-spool-*")
	if err != nil {
		return nil, 0, nop, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	total, err := io.Copy(f, io.MultiReader(&buf, r))
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, 0, nop, err
	}
	return f, total, cleanup, nil
}

// PutIfAbsent is PutObject with If-None-Match: *. A 409 ConditionalRequestConflict (a
// concurrent write to the key was in flight) is retried, as S3 advises, so that the answer
// is 412 (storage.ErrExists) or success; after conflictRetries it is storage.ErrExists.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

var _ storage.TagPutter = (*Store)(nil)

// PutIfAbsentTag is PutIfAbsent returning the ETag PutObject answered, without quotes, as
// List and Head give it (storage.TagPutter).
func (s *Store) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	n := int64(len(data))
	var tag string
	err := retryConflict(ctx, func() error {
		out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: &s.bucket, Key: aws.String(s.key(key)), Body: bytes.NewReader(data),
			ContentLength: &n, IfNoneMatch: aws.String("*"),
		})
		if err == nil {
			tag = etagOf(out.ETag)
		}
		return err
	})
	if err != nil {
		return "", mapErr("put if absent", key, err)
	}
	return tag, nil
}

// copySource is the x-amz-copy-source value: bucket/key, URL-escaped.
func (s *Store) copySource(key string) *string {
	return aws.String(url.PathEscape(s.bucket) + "/" + escapeKey(s.key(key)))
}

func escapeKey(k string) string {
	segs := strings.Split(k, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

// Copy is a server-side CopyObject (objects up to 5 GiB).
func (s *Store) Copy(ctx context.Context, src, dst string) error {
	_, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.key(dst)), CopySource: s.copySource(src),
	})
	if err != nil {
		return mapErr("copy", src+" to "+dst, err)
	}
	return nil
}

// CopyIfAbsent is CopyObject with If-None-Match: * (supported by S3 since 2025); 409s are
// retried as in PutIfAbsent.
func (s *Store) CopyIfAbsent(ctx context.Context, src, dst string) error {
	_, err := s.CopyIfAbsentTag(ctx, src, dst)
	return err
}

var _ storage.TagCopier = (*Store)(nil)

// CopyIfAbsentTag is CopyIfAbsent returning the ETag CopyObject answered, without quotes,
// as List and Head give it (storage.TagCopier).
func (s *Store) CopyIfAbsentTag(ctx context.Context, src, dst string) (string, error) {
	var tag string
	err := retryConflict(ctx, func() error {
		out, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket: &s.bucket, Key: aws.String(s.key(dst)), CopySource: s.copySource(src),
			IfNoneMatch: aws.String("*"),
		})
		if err == nil && out.CopyObjectResult != nil {
			tag = etagOf(out.CopyObjectResult.ETag)
		}
		return err
	})
	if err != nil {
		return "", mapErr("copy if absent", src+" to "+dst, err)
	}
	return tag, nil
}

// List pages through ListObjectsV2 (1000 keys a request).
func (s *Store) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.key(prefix))}
		if startAfter != "" {
			in.StartAfter = aws.String(s.key(startAfter))
		}
		for {
			out, err := s.client.ListObjectsV2(ctx, in)
			if err != nil {
				yield(storage.ObjectInfo{}, mapErr("list", prefix, err))
				return
			}
			for _, o := range out.Contents {
				k := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
				if k <= startAfter {
					continue
				}
				info := storage.ObjectInfo{
					Key:     k,
					Size:    aws.ToInt64(o.Size),
					ModTime: aws.ToTime(o.LastModified),
					ETag:    etagOf(o.ETag),
				}
				if !yield(info, nil) {
					return
				}
			}
			if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
				return
			}
			in.ContinuationToken = out.NextContinuationToken
		}
	}
}

// Delete removes the object; S3 answers success for a missing key.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if err != nil {
		return mapErr("delete", key, err)
	}
	return nil
}

// deleteBatch is the most keys one DeleteObjects request takes.
const deleteBatch = 1000

// DeleteKeys removes the objects with one DeleteObjects request per 1,000 keys (missing
// keys are not an error; storage.KeysDeleter). The first key S3 could not delete is
// reported.
func (s *Store) DeleteKeys(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), deleteBatch)
		objs := make([]types.ObjectIdentifier, n)
		for i, k := range keys[:n] {
			objs[i] = types.ObjectIdentifier{Key: aws.String(s.key(k))}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.bucket,
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return mapErr("delete", keys[0], err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		keys = keys[n:]
	}
	return nil
}

// conflictRetries is how many times a conditional write answered 409 is tried again.
const conflictRetries = 3

// retryConflict runs a conditional write, again after a 409 ConditionalRequestConflict.
func retryConflict(ctx context.Context, call func() error) error {
	err := call()
	for i := 0; i < conflictRetries && isConflict(err); i++ {
		t := time.NewTimer(time.Duration(10<<i) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = call()
	}
	return err
}

// etagOf is an S3 answer's ETag without its quotes, as every Store method reports it
// (ObjectInfo.ETag, TagPutter, TagGetter, TagCopier).
func etagOf(quoted *string) string { return strings.Trim(aws.ToString(quoted), `"`) }
