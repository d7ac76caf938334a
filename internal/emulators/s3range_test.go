package emulators

import (
	"bytes"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A ranged GET through a client from config.LoadDefaultConfig (as deltalog/location
// builds it: checksums computed on put and validated on get "when supported") reads the
// part. gofakes3 alone sends the whole object's checksum with the part, which that client
// refuses as a mismatch.
func TestRangeReadWithDefaultChecksums(t *testing.T) {
	srv := StartS3(t)
	b := srv.Bucket(t)
	cfg, err := config.LoadDefaultConfig(t.Context(), config.WithRegion(Region), config.WithCredentialsProvider(Credentials))
	if err != nil {
		t.Fatal(err)
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(srv.URL); o.UsePathStyle = true })
	data := bytes.Repeat([]byte("0123456789"), 100)
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rng, want string }{{"bytes=3-7", "34567"}, {"bytes=995-", "56789"}} {
		out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), Range: aws.String(tc.rng)})
		if err != nil {
			t.Fatalf("%s: %v", tc.rng, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || string(got) != tc.want {
			t.Fatalf("%s: %q, %v; want %q", tc.rng, got, err, tc.want)
		}
	}
	// The whole object still comes with its checksum, and validates.
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), ChecksumMode: "ENABLED"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, data) || aws.ToString(out.ChecksumCRC32) == "" {
		t.Fatalf("whole object: %d bytes, crc32 %q, %v", len(got), aws.ToString(out.ChecksumCRC32), err)
	}
}
