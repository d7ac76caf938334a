// Package commitlog holds what every log store shares: the commit file names of Delta
// docs/reference/delta-protocol.md §2.1 (_delta_log/<v:020>.json) and finding the newest
// commit by listing.
package commitlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/internal/logname"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Dir is the log directory's key prefix.
const Dir = "_delta_log/"

// Key is the key of version v's commit file: "_delta_log/<v:020>.json".
func Key(v int64) string { return fmt.Sprintf("%s%020d.json", Dir, v) }

// FileName is the base name of version v's commit file: "<v:020>.json".
func FileName(v int64) string { return fmt.Sprintf("%020d.json", v) }

// ParseFileName returns the version of a commit file's base name "<20 digits>.json"
// (exactly 20 ASCII digits: logname.ParseVersion).
func ParseFileName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return 0, false
	}
	return logname.ParseVersion(digits)
}

// ParseKey returns the version of a commit file's key "_delta_log/<20 digits>.json".
func ParseKey(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, Dir)
	if !ok {
		return 0, false
	}
	return ParseFileName(name)
}

// Read returns the bytes of version v's commit file (storage.ErrNotFound when absent).
func Read(ctx context.Context, s storage.Store, v int64) ([]byte, error) {
	rc, err := s.Get(ctx, Key(v))
	if err != nil {
		return nil, fmt.Errorf("read version %d: %w", v, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read version %d: %w", v, err)
	}
	return b, nil
}

// ReadTag is Read that also returns the commit file's ETag, from the same request
// (storage.GetTag; "" when the store does not say).
func ReadTag(ctx context.Context, s storage.Store, v int64) ([]byte, string, error) {
	b, tag, err := storage.GetTag(ctx, s, Key(v))
	if err != nil {
		return nil, "", fmt.Errorf("read version %d: %w", v, err)
	}
	return b, tag, nil
}

// Latest lists the log and returns the newest version whose commit file exists, or -1.
// hint is a version known to exist (or -1): listing starts at it, and falls back to the
// whole log when nothing is found from there; 0 lists the whole log at once. With no hint,
// _last_checkpoint (when present and valid) gives one, since its version's commit existed
// when it was written.
func Latest(ctx context.Context, s storage.Store, hint int64) (int64, error) {
	l, err := Newest(ctx, s, hint)
	return l.Version, err
}

// Listed is what a listing of the log found: its newest commit file, and whether the
// commit file of the version the lister knew was still the one it knew (LatestFrom).
type Listed struct {
	// Version is the newest commit's version, -1 when the log has none.
	Version int64
	// ETag is the newest commit file's ETag, as the listing showed it.
	ETag string
	// Replaced is true when the known version's commit file was missing from the listing,
	// or had another ETag than the one known: the log was deleted (and perhaps written
	// again) since. Version and ETag are then the new log's.
	Replaced bool
}

// Newest is Latest with the newest commit file's ETag.
func Newest(ctx context.Context, s storage.Store, hint int64) (Listed, error) {
	if hint < 0 {
		hint = lastCheckpoint(ctx, s)
	}
	if hint > 0 {
		l, _, err := newest(ctx, s, hint)
		if err != nil || l.Version >= 0 {
			return l, err
		}
	}
	l, _, err := newest(ctx, s, 0)
	return l, err
}

// LatestFrom lists the log from version known, a version whose commit file the caller
// wrote or saw, with ETag tag ("" when unknown), and returns the newest commit. The
// listing starts after the key "_delta_log/<known:020>", which sorts just before that
// version's own commit file, so it shows that file with its ETag: no request more than
// listing from the next version. When the file is missing, or has another ETag than tag,
// the log was deleted since (and perhaps written again: its commit files, carrying a
// random txnId and a timestamp, never have the old ETags): Replaced, and the result is
// the new log's newest commit (the whole log is listed when nothing was found from
// known). docs/decisions/0016-own-write-identity.md § Tables started over.
func LatestFrom(ctx context.Context, s storage.Store, known int64, tag string) (Listed, error) {
	l, seen, err := newest(ctx, s, known)
	if err != nil {
		return Listed{}, err
	}
	if seen.found && (tag == "" || seen.etag == tag) {
		return l, nil
	}
	if l.Version < 0 && known > 0 {
		if l, _, err = newest(ctx, s, 0); err != nil {
			return Listed{}, err
		}
	}
	l.Replaced = true
	return l, nil
}

// seenFile is what a listing showed of one commit file.
type seenFile struct {
	found bool
	etag  string
}

// newest lists the log from version from (its commit file included; 0: the whole log)
// and returns the newest commit file and what it showed of version from's.
func newest(ctx context.Context, s storage.Store, from int64) (Listed, seenFile, error) {
	startAfter := ""
	if from > 0 {
		startAfter = fmt.Sprintf("%s%020d", Dir, from)
	}
	l := Listed{Version: -1}
	var seen seenFile
	for info, err := range s.List(ctx, Dir, startAfter) {
		if err != nil {
			return Listed{}, seenFile{}, fmt.Errorf("list log: %w", err)
		}
		v, ok := ParseKey(info.Key)
		if !ok {
			continue
		}
		if v > l.Version {
			l.Version, l.ETag = v, info.ETag
		}
		if v == from {
			seen = seenFile{found: true, etag: info.ETag}
		}
	}
	return l, seen, nil
}

// lastCheckpoint reads _delta_log/_last_checkpoint's version, or -1 when it is missing or
// unreadable (it is only a hint: docs/reference/delta-protocol.md §8).
func lastCheckpoint(ctx context.Context, s storage.Store) int64 {
	b, err := s.GetRange(ctx, Dir+"_last_checkpoint", 0, -1)
	if err != nil {
		return -1
	}
	var lc struct {
		Version *int64 `json:"version"`
	}
	if json.Unmarshal(b, &lc) != nil || lc.Version == nil || *lc.Version < 0 {
		return -1
	}
	return *lc.Version
}

// IsNotFound reports whether err is storage.ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
