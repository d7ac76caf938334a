package storage

import (
	"fmt"
	"strings"
)

// CleanPrefix is the one rule for the key prefix of a table given as an s3:// (or s3a://)
// URL's path, applied when the URL is parsed (deltalog/location, core/config) and by
// everything that derives a name from it (s3store's keys, the DynamoDB log store's
// tablePath): empty segments and leading or trailing slashes are dropped, so
// "s3://b/lake//orders/" is the table "lake/orders", as Hadoop's Path (and so Spark)
// reads it. A "." or ".." segment is a *BadPrefixError: S3 keeps it as a literal key
// while Hadoop resolves it, so the two would name different objects. "" is the bucket's
// root.
func CleanPrefix(p string) (string, error) {
	segs := make([]string, 0, strings.Count(p, "/")+1)
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "":
			continue
		case ".", "..":
			return "", &BadPrefixError{Prefix: p, Segment: s}
		}
		segs = append(segs, s)
	}
	return strings.Join(segs, "/"), nil
}

// BadPrefixError is a table prefix CleanPrefix refuses.
type BadPrefixError struct {
	Prefix, Segment string
}

func (e *BadPrefixError) Error() string {
	return fmt.Sprintf("storage: prefix %q has a %q segment: S3 keeps it literally while Spark resolves it; write the path without it", e.Prefix, e.Segment)
}
