package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// PutJSON writes v as JSON at key (a plain Put: it replaces what is there). Steps keep
// their small state between invocations this way (a snapshot's open and plan, a seed's
// plan).
func PutJSON(ctx context.Context, st Store, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if err := st.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// GetJSON reads the JSON at key into v; ok is false (and v untouched) when key does not
// exist.
func GetJSON(ctx context.Context, st Store, key string, v any) (ok bool, err error) {
	rc, err := st.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}
