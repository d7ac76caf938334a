package snapshot_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// A backfill call's parameters are refused by the spec's rules for the same fields, before
// anything is opened (Deps is empty): the 366-day bound included, which the call's own
// check once lacked, so max_seconds 1e12 (from `mssqlcdc backfill --max-seconds`)
// overflowed the call's deadline instead of being refused.
func TestBackfillParamsRefusedBySpecRules(t *testing.T) {
	for _, c := range []struct {
		p     snapshot.BackfillParams
		field string
		want  string
	}{
		{snapshot.BackfillParams{ChunkRows: 1, MaxSeconds: 1e12}, "max_seconds",
			"1000000000000: want seconds from 0 up to 366 days (31,622,400 s); 0 = bounded by the invocation's deadline only"},
		{snapshot.BackfillParams{ChunkRows: 1, TargetWaveSeconds: math.Inf(1)}, "target_wave_seconds",
			"+Inf: want seconds from 0 up to 366 days (31,622,400 s); 0 reads one round"},
		{snapshot.BackfillParams{ChunkRows: 1, MinHeadroomHours: 9000}, "min_headroom_hours",
			"9000: want hours from 0 up to 366 days (8,784 h)"},
		{snapshot.BackfillParams{ChunkRows: 1, MinHeadroomHours: -1}, "min_headroom_hours",
			"-1: want hours from 0 up to 366 days (8,784 h)"},
		{snapshot.BackfillParams{ChunkRows: 0}, "chunk_rows", "0: want an integer >= 1"},
		{snapshot.BackfillParams{ChunkRows: 1, MaxWaves: -1}, "max_waves", "-1: want >= 0 (0 = no bound)"},
	} {
		_, err := snapshot.Backfill(context.Background(), snapshot.Deps{}, c.p)
		var ce *config.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0] != (config.Problem{Field: c.field, Reason: c.want}) {
			t.Errorf("%+v: %v, want a ConfigError %s: %s", c.p, err, c.field, c.want)
		}
	}
}
