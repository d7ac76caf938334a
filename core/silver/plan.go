package silver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// statValue is the raw statistics value of column name (matched ignoring case) in m.
func statValue(m map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

func statString(m map[string]json.RawMessage, name string) (string, bool) {
	raw, ok := statValue(m, name)
	if !ok {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func statInt(m map[string]json.RawMessage, name string) (int64, bool) {
	raw, ok := statValue(m, name)
	if !ok {
		return 0, false
	}
	var n int64
	return n, json.Unmarshal(raw, &n) == nil
}

// newestWholeSnapshot is the newest whole snapshot among files (bronze adds): the largest
// coalesce(_snapshot, _start_lsn) of their operation-0 rows without a _chunk
// (docs/bronze.md § The current table), "" when they hold none. Statistics answer for
// files of change rows only (their _operation minimum is above 0) and for snapshot files
// whose _snapshot and _chunk statistics decide; other files have those columns read.
func newestWholeSnapshot(ctx context.Context, bsnap *deltalog.Snapshot, files []deltalog.Add) (string, error) {
	newest := ""
	var read []deltalog.Add
	for _, a := range files {
		st, ok, err := deltalog.ParseStats(a.Stats)
		if err != nil || !ok {
			read = append(read, a)
			continue
		}
		if opMin, ok := statInt(st.MinValues, bronze.ColOperation); ok && opMin > 0 && st.NumRecords > 0 {
			continue // change rows only
		}
		if st.NumRecords == 0 {
			continue
		}
		opMax, ok1 := statInt(st.MaxValues, bronze.ColOperation)
		chunkNulls, ok2 := statInt(st.NullCount, bronze.ColChunk)
		snapMin, ok3 := statString(st.MinValues, bronze.ColSnapshot)
		snapMax, ok4 := statString(st.MaxValues, bronze.ColSnapshot)
		snapNulls, ok5 := statInt(st.NullCount, bronze.ColSnapshot)
		if ok1 && opMax == 0 && ok2 && chunkNulls == st.NumRecords && ok3 && ok4 && snapMin == snapMax && ok5 && snapNulls == 0 {
			newest = max(newest, snapMax)
			continue
		}
		if ok2 && chunkNulls == 0 {
			continue // every row is a chunk row
		}
		read = append(read, a)
	}
	if len(read) == 0 {
		return newest, nil
	}
	sc, err := bsnap.ArrowSchema()
	if err != nil {
		return "", err
	}
	cols := []string{bronze.ColStartLSN, bronze.ColOperation}
	for _, c := range []string{bronze.ColSnapshot, bronze.ColChunk} {
		if fieldIndexFold(sc, c) >= 0 {
			cols = append(cols, c)
		}
	}
	it, err := bsnap.Scan(ctx, deltalog.ScanOptions{Files: read, Columns: cols})
	if err != nil {
		return "", fmt.Errorf("read bronze: %w", err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return newest, nil
		}
		if err != nil {
			return "", fmt.Errorf("read bronze: %w", err)
		}
		lsnA, _ := rec.Column(0).(*array.String)
		opA, _ := rec.Column(1).(*array.Int32)
		var snapA *array.String
		var chunkValid func(int) bool
		if len(cols) > 2 {
			snapA, _ = rec.Column(2).(*array.String)
		}
		if len(cols) > 3 {
			c := rec.Column(3)
			chunkValid = c.IsValid
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if opA == nil || lsnA == nil || opA.IsNull(i) || opA.Value(i) != bronze.OpSnapshot || (chunkValid != nil && chunkValid(i)) {
				continue
			}
			l := lsnA.Value(i)
			if snapA != nil && snapA.IsValid(i) {
				l = snapA.Value(i)
			}
			newest = max(newest, l)
		}
		rec.Release()
	}
}

// filesSince are bronze's live files that may hold rows with _start_lsn >= since (by
// their statistics): what a rebuild from the snapshot at since reads.
func filesSince(bsnap *deltalog.Snapshot, since string) []deltalog.Add {
	var out []deltalog.Add
	for _, a := range bsnap.Files() {
		st, ok, err := deltalog.ParseStats(a.Stats)
		if err == nil && ok {
			if st.NumRecords == 0 {
				continue
			}
			if mx, ok := statString(st.MaxValues, bronze.ColStartLSN); ok && mx < since {
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// Sizing a run (docs/silver.md § Memory): a row held in Arrow takes about inMemoryFactor
// times its share of the Parquet file, and a key range holds its rows up to three times
// over (the images, their gathering, the sorted copy written).
const (
	inMemoryFactor = 4
	copies         = 3
	minRowBytes    = 64
	sampleKeys     = 16 << 10
)

// planBounds cuts a run over files into key ranges whose rows fit opts.MemoryBytes: none
// when they all fit (one range), else the keys at the quantiles of a sample of the
// files' keys (read from their key columns alone).
func planBounds(ctx context.Context, bsnap *deltalog.Snapshot, files []deltalog.Add, kc keyColumnsInfo, opts *Options) ([]string, error) {
	var rows, size int64
	for _, a := range files {
		n, ok := a.NumRecords()
		if !ok {
			n = max(a.Size/minRowBytes, 1)
		}
		rows += n
		size += a.Size
	}
	if rows == 0 {
		return nil, nil
	}
	rowBytes := max(inMemoryFactor*size/rows, minRowBytes)
	budget := max(opts.memoryBytes()/(rowBytes*copies), 1)
	if rows <= budget {
		return nil, nil
	}
	ranges := int((rows + budget - 1) / budget)
	sample, err := sampleKeysOf(ctx, bsnap, files, kc)
	if err != nil {
		return nil, err
	}
	if len(sample) < 2 {
		return nil, nil
	}
	slices.SortFunc(sample, bytes.Compare)
	var bounds []string
	var last []byte
	for i := 1; i < ranges; i++ {
		k := sample[i*len(sample)/ranges]
		if last != nil && bytes.Equal(k, last) {
			continue
		}
		bounds = append(bounds, keyHex(k))
		last = k
	}
	opts.logger().Info("silver run cut into key ranges", "rows", rows, "ranges", len(bounds)+1)
	return bounds, nil
}

// sampleKeysOf is a uniform sample of at most sampleKeys keys of the files' rows
// (reservoir sampling over their key columns).
func sampleKeysOf(ctx context.Context, bsnap *deltalog.Snapshot, files []deltalog.Add, kc keyColumnsInfo) ([][]byte, error) {
	it, err := bsnap.Scan(ctx, deltalog.ScanOptions{Files: files, Columns: kc.names})
	if err != nil {
		return nil, fmt.Errorf("read bronze keys: %w", err)
	}
	defer it.Close()
	rng := rand.New(rand.NewPCG(1, 2)) // deterministic: a rerun cuts the same ranges
	var sample [][]byte
	var seen int64
	var kb []byte
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return sample, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read bronze keys: %w", err)
		}
		keys := keyColumns(rec, kc.names)
		for i := 0; i < int(rec.NumRows()); i++ {
			seen++
			if len(sample) < sampleKeys {
				sample = append(sample, encodeKey(nil, keys, i))
				continue
			}
			if j := rng.Int64N(seen); j < sampleKeys {
				kb = encodeKey(kb[:0], keys, i)
				sample[j] = append(sample[j][:0], kb...)
			}
		}
		rec.Release()
	}
}
