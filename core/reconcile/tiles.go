package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// keyTiles is tier 2's ranges for a key that is not one integer or date column when the
// table holds more than o.BucketRows rows on the larger side (docs/reconcile.md, step 5):
// the key space cut by the server's NTILE (Source.KeyTiles, in SQL Server's key order) into
// tiles of about o.BucketRows rows, of which every one is returned when every is true (the
// table's counts differ) and otherwise a seeded o.Sample fraction. n is how many tiles the
// key space was cut into. With no tile to read (a sample of 0) the server is not asked.
func keyTiles(ctx context.Context, src source.Source, o Options, whole bucket, every bool, rng *rand.Rand) (tiles []bucket, n int, err error) {
	if !every && o.Sample <= 0 {
		return nil, 0, nil
	}
	rows := max64(whole.src, whole.dst)
	want := int((rows + o.BucketRows - 1) / o.BucketRows)
	bounds, err := src.KeyTiles(ctx, o.Table, o.Keys, want)
	if err != nil {
		return nil, 0, fmt.Errorf("reconcile: cut the key into tiles: %w", err)
	}
	n = len(bounds) + 1
	for i := range n {
		t := bucket{tile: true, every: every}
		if i > 0 {
			t.keyLo = bounds[i-1]
		}
		if i < len(bounds) {
			t.keyHi = bounds[i]
		}
		if every || rng.Float64() < o.Sample {
			tiles = append(tiles, t)
		}
	}
	if len(tiles) == n {
		for i := range tiles {
			tiles[i].every = true // the sample drew every tile: they cover the key space
		}
	}
	return tiles, n, nil
}

// tileBound is a tile bound as the report holds it: a JSON list of the key values ("" open).
func tileBound(k source.Key) string {
	if k == nil {
		return ""
	}
	b, err := json.Marshal([]any(k))
	if err != nil {
		return fmt.Sprint([]any(k))
	}
	return string(b)
}

// tileRows are the report rows of the tiles tier 2 read: per tile the source's rows and
// silver's rows of the same keys, MISMATCH when a key of the tile differs and no change in
// flight explains it, IN_FLIGHT when only such changes do, else MATCH. tileOf maps a
// source key to its tile; a key silver alone holds is in no tile (placing it needs the
// server's collation order) and is reported as a key only.
func tileRows(tiles []bucket, tileOf map[string]int, dstKeys map[string]digest, keys []Row, keyText func([]string) string) []Row {
	out := make([]Row, len(tiles))
	for i, t := range tiles {
		out[i] = Row{Kind: Match, Scope: "tile", Lo: tileBound(t.keyLo), Hi: tileBound(t.keyHi)}
	}
	for k, i := range tileOf {
		out[i].SourceRows++
		if _, ok := dstKeys[k]; ok {
			out[i].TargetRows++
		}
	}
	for _, r := range keys {
		i, ok := tileOf[keyText(r.Key)]
		if !ok {
			continue
		}
		switch {
		case r.Kind != InFlight:
			out[i].Kind = Mismatch
		case out[i].Kind == Match:
			out[i].Kind = InFlight
		}
	}
	return out
}
