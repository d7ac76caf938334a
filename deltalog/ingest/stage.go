package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Stage records files as the manifest at key in the staging store (a plain put, JSON
// Files): one step's part of a later commit, e.g. snapshots/<L>/ranges/<i>.json. A rerun of
// the step stages again under the same key and replaces its earlier attempt, whose files
// become orphans for VACUUM. Keep the staging store apart from the table (the checkpoint
// prefix): a manifest is not data.
func Stage(ctx context.Context, st storage.Store, key string, files Files) error {
	if files.Adds == nil {
		files.Adds = []deltalog.Add{}
	}
	b, err := json.Marshal(files)
	if err != nil {
		return fmt.Errorf("stage %s: %w", key, err)
	}
	if err := st.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("stage %s: %w", key, err)
	}
	return nil
}

// NotStagedError: Gather found no manifest at Keys[Index]: that step has not finished (or
// the staging store is another one). Run the step again before the commit.
type NotStagedError struct {
	Key   string
	Index int
}

func (e *NotStagedError) Error() string {
	return fmt.Sprintf("no staged files at %s: the step that writes them has not finished", e.Key)
}

// Gather reads the manifests at keys, in order, and returns all their files as one Files,
// for the one Append that commits them. A missing manifest is a *NotStagedError.
func Gather(ctx context.Context, st storage.Store, keys []string) (Files, error) {
	all := Files{Adds: []deltalog.Add{}}
	for i, key := range keys {
		rc, err := st.Get(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			return Files{}, &NotStagedError{Key: key, Index: i}
		}
		if err != nil {
			return Files{}, fmt.Errorf("read staged files %s: %w", key, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return Files{}, fmt.Errorf("read staged files %s: %w", key, err)
		}
		var f Files
		if err := json.Unmarshal(b, &f); err != nil {
			return Files{}, fmt.Errorf("decode staged files %s: %w", key, err)
		}
		all.Add(f)
	}
	return all, nil
}
