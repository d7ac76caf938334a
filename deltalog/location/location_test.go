package location_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// roundTrip commits version 0 through the log store and reads it through the store.
func roundTrip(t *testing.T, s storage.Store, l logstore.LogStore) {
	t.Helper()
	ctx := t.Context()
	if err := l.Write(ctx, 0, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetRange(ctx, "_delta_log/00000000000000000000.json", 0, -1)
	if err != nil || string(b) != "{}\n" {
		t.Fatalf("commit file = %q, %v", b, err)
	}
}

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{filepath.Join(dir, "a"), "file://" + filepath.ToSlash(filepath.Join(dir, "b c")), "file://localhost" + filepath.ToSlash(filepath.Join(dir, "d"))} {
		s, l, err := location.Open(t.Context(), u, location.Config{})
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, ok := l.(*localfs.LogStore); !ok {
			t.Fatalf("Open(%q) log store is %T", u, l)
		}
		roundTrip(t, s, l)
	}
	if _, err := os.Stat(filepath.Join(dir, "b c", "_delta_log")); err != nil {
		t.Fatalf("file URL path not unescaped: %v", err)
	}
}

func TestRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	s, _, err := location.Open(t.Context(), "lake/orders", location.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "file:///") || !strings.HasSuffix(s.URL(), "/lake/orders") {
		t.Fatalf("URL = %q", s.URL())
	}
}

func TestUnsupported(t *testing.T) {
	for _, u := range []string{"gs://bucket/t", "abfss://c@a.dfs.core.windows.net/t", "http://x/y"} {
		_, _, err := location.Open(t.Context(), u, location.Config{})
		var use *location.UnsupportedSchemeError
		if !errors.As(err, &use) {
			t.Errorf("Open(%q): err = %v, want *UnsupportedSchemeError", u, err)
		}
	}
	for _, u := range []string{"file://otherhost/x", "s3:///prefix", "file:relative"} {
		if _, _, err := location.Open(t.Context(), u, location.Config{}); err == nil {
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

func TestS3ConditionalPut(t *testing.T) {
	srv := emulators.StartS3(t)
	bucket := srv.Bucket(t)
	cfg := location.Config{Endpoint: srv.URL, PathStyle: true, Credentials: emulators.Credentials}
	s, l, err := location.Open(t.Context(), "s3://"+bucket+"/lake/my%20orders/", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.(*condput.LogStore); !ok {
		t.Fatalf("log store is %T, want condput", l)
	}
	if s.URL() != "s3://"+bucket+"/lake/my orders" {
		t.Fatalf("URL = %q", s.URL())
	}
	roundTrip(t, s, l)
	// Production's client still sends If-None-Match: the taken version is refused and
	// keeps its content.
	if err := l.Write(t.Context(), 0, []byte("{\"other\":1}\n")); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("second write of version 0: %v, want ErrVersionExists", err)
	}
	if b, err := s.GetRange(t.Context(), "_delta_log/00000000000000000000.json", 0, -1); err != nil || string(b) != "{}\n" {
		t.Fatalf("version 0 = %q, %v", b, err)
	}
}

func TestS3DynamoDB(t *testing.T) {
	srv := emulators.StartS3(t)
	ddbEndpoint := emulators.DynamoDBEndpoint(t)
	table := emulators.UniqueName("delta_log_")
	ctx := t.Context()
	if err := dynamo.CreateTable(ctx, emulators.DynamoDB(t), table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	bucket := srv.Bucket(t)
	cfg := location.Config{
		Endpoint: srv.URL, PathStyle: true, Credentials: emulators.Credentials,
		DynamoTable: table, DynamoEndpoint: ddbEndpoint, DynamoRegion: emulators.Region,
	}
	for _, tc := range []struct{ url, scheme, want string }{
		{"s3://" + bucket + "/t1", "", "s3://" + bucket + "/t1"},
		{"s3://" + bucket + "/t2", "s3a", "s3a://" + bucket + "/t2"},
		{"s3a://" + bucket + "/t3", "", "s3a://" + bucket + "/t3"},
	} {
		cfg.TablePathScheme = tc.scheme
		s, l, err := location.Open(ctx, tc.url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := l.(*dynamo.LogStore)
		if !ok {
			t.Fatalf("log store is %T, want dynamo", l)
		}
		if d.TablePathKey() != tc.want {
			t.Fatalf("tablePath = %q, want %q", d.TablePathKey(), tc.want)
		}
		roundTrip(t, s, l)
	}
}

// A double slash (or a trailing one) names the same table everywhere: the S3 keys and the
// DynamoDB tablePath both follow storage.CleanPrefix, so "lake//orders" and "lake/orders"
// are one table, not two tables sharing log entries. A "." or ".." segment is refused.
func TestS3PathsNormalizedOneWay(t *testing.T) {
	srv := emulators.StartS3(t)
	bucket := srv.Bucket(t)
	cfg := location.Config{Endpoint: srv.URL, PathStyle: true, Credentials: emulators.Credentials}
	a, la, err := location.Open(t.Context(), "s3://"+bucket+"/lake//orders/", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := location.Open(t.Context(), "s3a://"+bucket+"/lake/orders", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.URL() != "s3://"+bucket+"/lake/orders" || b.URL() != a.URL() {
		t.Fatalf("URLs %q and %q, want both s3://%s/lake/orders", a.URL(), b.URL(), bucket)
	}
	// A commit through one is the other's commit: the same object.
	roundTrip(t, b, la)

	// The DynamoDB log store keys the table by the same prefix (no I/O until used).
	cfg.DynamoTable, cfg.DynamoEndpoint = "delta_log", "http://127.0.0.1:1"
	for _, u := range []string{"s3://" + bucket + "/lake//orders/", "s3://" + bucket + "/lake/orders"} {
		s, l, err := location.Open(t.Context(), u, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.(*dynamo.LogStore).TablePathKey(); got != "s3://"+bucket+"/lake/orders" || s.URL() != "s3://"+bucket+"/lake/orders" {
			t.Errorf("%s: tablePath %q, store %q; want both s3://%s/lake/orders", u, got, s.URL(), bucket)
		}
	}
	for _, u := range []string{"s3://" + bucket + "/lake/../orders", "s3://" + bucket + "/./orders"} {
		var be *storage.BadPrefixError
		if _, _, err := location.Open(t.Context(), u, cfg); !errors.As(err, &be) {
			t.Errorf("%s: %v, want *storage.BadPrefixError", u, err)
		}
	}
}

// A local location that is a file, or lies under one, is refused by Open with a
// NotADirectoryError naming the file, not later by the first read or write with the
// operating system's "not a directory" on a key inside it.
func TestLocalFileIsNoTableLocation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "orders.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{file, filepath.Join(file, "bronze", "orders"), "file://" + filepath.ToSlash(file)} {
		_, _, err := location.Open(t.Context(), u, location.Config{})
		var nd *location.NotADirectoryError
		if !errors.As(err, &nd) || nd.File != file {
			t.Fatalf("Open(%q) = %v; want a NotADirectoryError naming %s", u, err, file)
		}
		if msg := err.Error(); !strings.Contains(msg, file+" is a file") || !strings.Contains(msg, "a directory") {
			t.Errorf("Open(%q): %q does not say the path is a file and a directory is wanted", u, msg)
		}
	}
	// A missing directory is fine: the first write makes it.
	if _, _, err := location.Open(t.Context(), filepath.Join(dir, "new", "table"), location.Config{}); err != nil {
		t.Errorf("missing directory: %v", err)
	}
}
