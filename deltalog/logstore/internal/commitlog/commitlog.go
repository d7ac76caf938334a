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
	"strconv"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Dir is the log directory's key prefix.
const Dir = "_delta_log/"

// Key is the key of version v's commit file: "_delta_log/<v:020>.json".
func Key(v int64) string { return fmt.Sprintf("%s%020d.json", Dir, v) }

// FileName is the base name of version v's commit file: "<v:020>.json".
func FileName(v int64) string { return fmt.Sprintf("%020d.json", v) }

// ParseFileName returns the version of a commit file's base name "<20 digits>.json".
func ParseFileName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	return v, err == nil
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

// Latest lists the log and returns the newest version whose commit file exists, or -1.
// hint is a version known to exist (or -1): listing starts at it, and falls back to the
// whole log when nothing is found from there; 0 lists the whole log at once. With no hint,
// _last_checkpoint (when present and valid) gives one, since its version's commit existed
// when it was written.
func Latest(ctx context.Context, s storage.Store, hint int64) (int64, error) {
	if hint < 0 {
		hint = lastCheckpoint(ctx, s)
	}
	if hint > 0 {
		v, err := newest(ctx, s, fmt.Sprintf("%s%020d", Dir, hint))
		if err != nil || v >= 0 {
			return v, err
		}
	}
	return newest(ctx, s, "")
}

func newest(ctx context.Context, s storage.Store, startAfter string) (int64, error) {
	latest := int64(-1)
	for info, err := range s.List(ctx, Dir, startAfter) {
		if err != nil {
			return 0, fmt.Errorf("list log: %w", err)
		}
		if v, ok := ParseKey(info.Key); ok && v > latest {
			latest = v
		}
	}
	return latest, nil
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
