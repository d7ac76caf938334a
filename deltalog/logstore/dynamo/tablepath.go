package dynamo

import (
	"fmt"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// DefaultScheme is the scheme of the tablePath key when Options.Scheme is empty. Spark
// keys entries with the scheme its job used ("s3a" for OSS Spark with hadoop-aws, often
// "s3" on EMR), and "s3://b/t" and "s3a://b/t" are different keys with no mutual exclusion
// between them: set Options.Scheme to what the Spark writers of the table use.
const DefaultScheme = "s3"

// TablePath builds the tablePath key the way Spark's S3DynamoDBLogStore does (Hadoop
// Path.toString of the commit path's grandparent, after stripping user-info): the given
// scheme, the bucket, then the key prefix cleaned by storage.CleanPrefix (the rule
// s3store's keys follow: empty segments dropped, no trailing slash; "." and ".." refused),
// not percent-escaped. A table at the root of a bucket is "<scheme>://<bucket>/",
// as Hadoop renders a root path.
//
// storeURL is an unescaped "s3://bucket/prefix" (any scheme; user-info is dropped), as
// s3store.Store.URL returns it.
func TablePath(storeURL, scheme string) (string, error) {
	if scheme == "" {
		scheme = DefaultScheme
	}
	_, rest, ok := strings.Cut(storeURL, "://")
	if !ok {
		return "", fmt.Errorf("dynamo: table path of %q: not a URL", storeURL)
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if authority == "" {
		return "", fmt.Errorf("dynamo: table path of %q: no bucket", storeURL)
	}
	prefix, err := storage.CleanPrefix(path)
	if err != nil {
		return "", fmt.Errorf("dynamo: table path of %q: %w", storeURL, err)
	}
	return scheme + "://" + authority + "/" + prefix, nil
}
