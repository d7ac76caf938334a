// Package location opens a table URL as the storage.Store and logstore.LogStore under it:
//
//	/data/lake/orders, ./orders, file:///data/lake/orders,
//	file:/data/lake/orders (Hadoop's form)                  → local disk (localstore + localfs)
//	s3://bucket/prefix (or s3a://)                          → S3 (s3store), committing through
//	                                                          DynamoDB (logstore/dynamo) when
//	                                                          Config.DynamoTable is set, else by
//	                                                          S3 conditional put (logstore/condput)
//
// AWS clients are built by awsclient (the one place of their options, shared with the
// emulator clients of the tests) from the default credential chain (environment, shared
// config, instance or task role) unless Config.Credentials is set. Open does no network
// I/O; a local location is only checked not to be a file (NotADirectoryError).
package location

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
)

// DefaultRegion is used when neither Config.Region nor the environment names one. It is
// also Spark's default region for the DynamoDB log table (ddb.region).
const DefaultRegion = awsclient.DefaultRegion

// Config tells Open how to reach S3 and DynamoDB. The zero Config uses AWS defaults and
// commits on S3 by conditional put.
type Config struct {
	// Region of the bucket; empty: from the environment / shared config, else DefaultRegion.
	Region string
	// Endpoint overrides the S3 endpoint ("http://127.0.0.1:9000" for an emulator).
	Endpoint string
	// PathStyle addresses buckets as <endpoint>/<bucket> (emulators need it).
	PathStyle bool
	// DynamoTable is the DynamoDB log table (e.g. dynamo.DefaultTable, "delta_log");
	// empty commits by S3 conditional put instead.
	DynamoTable string
	// DynamoRegion is the log table's region; empty: Region. Spark defaults it to
	// us-east-1 whatever the bucket's region: every writer must use the same one.
	DynamoRegion string
	// DynamoEndpoint overrides the DynamoDB endpoint (an emulator).
	DynamoEndpoint string
	// TablePathScheme is the scheme of the DynamoDB tablePath key; it must match the Spark
	// writers' ("s3a" for OSS Spark). Empty: the URL's own scheme ("s3" for s3://).
	TablePathScheme string
	// Credentials overrides the default credential chain (static keys in tests).
	Credentials aws.CredentialsProvider
}

// UnsupportedSchemeError is returned by Open for a URL whose scheme it cannot open.
type UnsupportedSchemeError struct {
	URL    string
	Scheme string
}

func (e *UnsupportedSchemeError) Error() string {
	return fmt.Sprintf("location: %s: unsupported scheme %q (want a path, file://, s3:// or s3a://)", e.URL, e.Scheme)
}

// Open returns the Store rooted at the table and the LogStore that commits it.
func Open(ctx context.Context, rawURL string, cfg Config) (storage.Store, logstore.LogStore, error) {
	scheme, _, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme {
		if rest, ok := strings.CutPrefix(rawURL, "file:"); ok {
			// Hadoop's form of a local path, as Spark prints table locations:
			// file:/abs/path. Anything else after "file:" is not absolute.
			if !strings.HasPrefix(rest, "/") {
				return nil, nil, fmt.Errorf("location: %s: want file:///absolute/path or file:/absolute/path", rawURL)
			}
			u, err := url.Parse(rawURL)
			if err != nil {
				return nil, nil, fmt.Errorf("location: parse %s: %w", rawURL, err)
			}
			return openLocal(filepath.FromSlash(u.Path))
		}
		return openLocal(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("location: parse %s: %w", rawURL, err)
	}
	switch strings.ToLower(scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, nil, fmt.Errorf("location: %s: file URLs on another host are not supported", rawURL)
		}
		return openLocal(filepath.FromSlash(u.Path))
	case "s3", "s3a":
		return openS3(ctx, rawURL, u, cfg)
	}
	return nil, nil, &UnsupportedSchemeError{URL: rawURL, Scheme: scheme}
}

// NotADirectoryError is returned by Open for a local location that is a file or lies under
// one: a table's location is a directory (made by the first write when missing).
type NotADirectoryError struct {
	URL  string // the location as given
	File string // the file in its path
}

func (e *NotADirectoryError) Error() string {
	if e.File == filepath.Clean(e.URL) {
		return fmt.Sprintf("location: %s is a file, not a directory: a location (a table, a checkpoint, an export) is a directory, made when missing; point it at a directory", e.File)
	}
	return fmt.Sprintf("location: %s: %s is a file, not a directory: a location (a table, a checkpoint, an export) is a directory, made when missing; point it at a directory", e.URL, e.File)
}

// fileInPath returns the nearest existing ancestor of dir (dir included) when it is a file,
// else "". Errors other than a missing path are left to the first read or write.
func fileInPath(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if st.IsDir() {
				return ""
			}
			return d
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func openLocal(dir string) (storage.Store, logstore.LogStore, error) {
	if dir == "" {
		return nil, nil, fmt.Errorf("location: empty path")
	}
	if f := fileInPath(dir); f != "" {
		return nil, nil, &NotADirectoryError{URL: dir, File: f}
	}
	l, err := localfs.New(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("location: %w", err)
	}
	return l.Store(), l, nil
}

func openS3(ctx context.Context, rawURL string, u *url.URL, cfg Config) (storage.Store, logstore.LogStore, error) {
	if u.Host == "" {
		return nil, nil, fmt.Errorf("location: %s: no bucket", rawURL)
	}
	awsCfg, err := loadAWS(ctx, cfg.Region, cfg.Credentials)
	if err != nil {
		return nil, nil, err
	}
	// The clients' options are awsclient's, which the emulator clients of the tests and
	// benchmarks share.
	client := awsclient.NewS3(awsCfg, cfg.Endpoint, cfg.PathStyle)
	// The key prefix as Hadoop reads it: the URL path, un-escaped, cleaned by the one rule
	// the DynamoDB tablePath follows too ("lake//orders/" is "lake/orders").
	prefix, err := storage.CleanPrefix(u.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("location: %s: %w", rawURL, err)
	}
	store := s3store.New(client, u.Host, prefix)
	if cfg.DynamoTable == "" {
		return store, condput.New(store), nil
	}
	ddbCfg := awsCfg
	if cfg.DynamoRegion != "" && cfg.DynamoRegion != awsCfg.Region {
		if ddbCfg, err = loadAWS(ctx, cfg.DynamoRegion, cfg.Credentials); err != nil {
			return nil, nil, err
		}
	}
	ddb := awsclient.NewDynamoDB(ddbCfg, cfg.DynamoEndpoint)
	tableScheme := cfg.TablePathScheme
	if tableScheme == "" {
		tableScheme = strings.ToLower(u.Scheme)
	}
	logs, err := dynamo.New(ddb, store, dynamo.Options{Table: cfg.DynamoTable, Scheme: tableScheme})
	if err != nil {
		return nil, nil, fmt.Errorf("location: %w", err)
	}
	return store, logs, nil
}

func loadAWS(ctx context.Context, region string, creds aws.CredentialsProvider) (aws.Config, error) {
	awsCfg, err := awsclient.LoadConfig(ctx, region, creds)
	if err != nil {
		return aws.Config{}, fmt.Errorf("location: %w", err)
	}
	return awsCfg, nil
}
