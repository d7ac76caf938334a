package seed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// The rules of a seed (docs/seed.md § Rules; docs/reference/original-library.md §12), in
// the order they are checked: the mode lock; L from as_of; a seed already at L is a rerun
// (nothing is written); another snapshot of the table in bronze refuses the seed unless it
// is a reseed over an older one; L must not be above max_lsn; CDC must still hold the
// changes right after L.

// decision is what the rules decided.
type decision struct {
	// Found is true when bronze already holds the seed (or another whole snapshot) at L:
	// a rerun, which writes nothing but the bootstrap row if it is missing.
	Found bool
	// Seed is L with its commit time.
	Seed lsn.Offset
	// CI is the configured capture instance; Instances every instance of its table, oldest
	// first.
	CI        source.CaptureInstance
	Instances []source.CaptureInstance
}

// instances resolves the configured capture instance and lists its table's instances.
func (d Deps) instances(ctx context.Context) (source.CaptureInstance, []source.CaptureInstance, error) {
	list, err := d.Source.CaptureInstances(ctx)
	if err != nil {
		return source.CaptureInstance{}, nil, fmt.Errorf("list capture instances: %w", err)
	}
	ci, err := source.Resolve(list, d.Spec.Source.CaptureInstance)
	if err != nil {
		return source.CaptureInstance{}, nil, err
	}
	return ci, source.InstancesOf(list, ci.SourceSchema, ci.SourceTable), nil
}

// decide applies the rules to as_of (docs/seed.md § Rules).
func (d Deps) decide(ctx context.Context, asOf AsOf, reseed bool) (decision, error) {
	ci, insts, err := d.instances(ctx)
	if err != nil {
		return decision{}, err
	}
	if err := d.modeLock(ctx, ci); err != nil {
		return decision{}, err
	}
	dec := decision{CI: ci, Instances: insts}
	held, err := snapshot.InBronze(ctx, d.Source, d.Bronze, ci.Name)
	if err != nil {
		return decision{}, err
	}
	if err := d.checkNotFuture(ctx, asOf); err != nil {
		return decision{}, err
	}
	l, ok, err := d.lsnOf(ctx, asOf)
	if err != nil {
		return decision{}, err
	}
	if !ok {
		// Cleanup removed the mapping rows around as_of. A rerun after it finds its seed as
		// the newest whole snapshot at or before as_of; anything else is too old to seed.
		if w, found := newestAtOrBefore(held.Whole, asOf.Time); found && !reseed {
			dec.Found = true
			dec.Seed, err = d.offset(ctx, w)
			return dec, err
		}
		return decision{}, &DataLossError{AsOf: asOf.String()}
	}
	for _, w := range held.Whole {
		if w.LSN == l {
			dec.Found = true
			dec.Seed, err = d.offset(ctx, w)
			return dec, err
		}
	}
	if err := checkOthers(held, l, reseed, d.Spec.Bronze); err != nil {
		return decision{}, err
	}
	max, err := d.Source.MaxLSN(ctx)
	if err != nil {
		return decision{}, fmt.Errorf("read max_lsn: %w", err)
	}
	if max.Less(l) {
		return decision{}, configErr("as_of", fmt.Sprintf("%s is above the source's max_lsn %s: an as_of LSN must be recorded on this server before the copy started "+
			"(SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1))", l, max))
	}
	if err := d.checkRetention(ctx, insts, l, asOf, false); err != nil {
		return decision{}, err
	}
	if reseed {
		if err := d.checkReseed(ctx, l); err != nil {
			return decision{}, err
		}
	}
	dec.Seed, err = d.offset(ctx, snapshot.WholeSnapshot{LSN: l})
	return dec, err
}

// newestAtOrBefore is the newest whole snapshot whose rows' commit time is at or before t.
func newestAtOrBefore(whole []snapshot.WholeSnapshot, t time.Time) (snapshot.WholeSnapshot, bool) {
	var best snapshot.WholeSnapshot
	found := false
	for _, w := range whole {
		if t.IsZero() || w.CommitTS == nil || w.CommitTS.After(t) {
			continue
		}
		if !found || best.LSN.Less(w.LSN) {
			best, found = w, true
		}
	}
	return best, found
}

// checkOthers refuses a seed at l when bronze holds another snapshot of the table, unless
// reseed and every one of them is older than l.
func checkOthers(held snapshot.BronzeSnapshots, l lsn.LSN, reseed bool, bronzeURL string) error {
	var newest lsn.LSN
	chunked, any := false, false
	consider := func(s lsn.LSN, c bool) {
		if !any || newest.Less(s) {
			newest, chunked, any = s, c, true
		}
	}
	for _, w := range held.Whole {
		consider(w.LSN, false)
	}
	for _, s := range held.Chunked {
		consider(s, true)
	}
	if !any || (reseed && newest.Less(l)) {
		return nil
	}
	return &SnapshotExistsError{Bronze: bronzeURL, Existing: newest, Chunked: chunked, Seed: l, Reseed: reseed}
}

// offset is w's LSN with its commit time: its rows' newest _commit_ts, else the source's
// commit time of the LSN ("" when it is no commit's).
func (d Deps) offset(ctx context.Context, w snapshot.WholeSnapshot) (lsn.Offset, error) {
	if w.CommitTS != nil {
		return lsn.At(w.LSN, *w.CommitTS), nil
	}
	t, ok, err := d.Source.CommitTime(ctx, w.LSN)
	if err != nil {
		return lsn.Offset{}, fmt.Errorf("read commit time of %s: %w", w.LSN, err)
	}
	if !ok {
		t = time.Time{}
	}
	return lsn.At(w.LSN, t), nil
}

// modeLock refuses a seed while a snapshot of the stream is open, in either mode
// (docs/design.md §5 invariant 7; docs/reference/original-library.md §9.5). A full
// snapshot stops holding the mode once CDC cleanup has passed its LSN (it can never
// complete), so the capture instance's min_lsn is passed to the look-up.
func (d Deps) modeLock(ctx context.Context, ci source.CaptureInstance) error {
	if d.Facts == nil {
		return nil
	}
	rows, err := facts.SnapshotEvents(ctx, d.Facts, d.Spec.AppID)
	if err != nil {
		return fmt.Errorf("read open snapshots: %w", err)
	}
	min, err := d.Source.MinLSN(ctx, ci.Name)
	var nf *source.CaptureInstanceNotFoundError
	if errors.As(err, &nf) {
		min = lsn.Zero // capture has not processed the instance: cleanup has not run either
	} else if err != nil {
		return fmt.Errorf("read min_lsn: %w", err)
	}
	if open := facts.OpenSnapshots(rows, d.Spec.AppID, min); len(open) > 0 {
		o := open[len(open)-1]
		return &snapshot.ModeLockError{AppID: d.Spec.AppID, Snapshot: o.S, Mode: o.Mode, Generation: o.Detail.Generation}
	}
	return nil
}

// checkRetention refuses l when CDC no longer holds the changes right after it
// (docs/reference/original-library.md §7.1): the instance that holds next(l) (the
// oldest, or the newest whose start LSN is at or below it) has a min_lsn above next(l).
func (d Deps) checkRetention(ctx context.Context, insts []source.CaptureInstance, l lsn.LSN, asOf AsOf, duringConvert bool) error {
	next := l.Next()
	inst := insts[0]
	for _, c := range insts[1:] {
		if !c.StartLSN.IsZero() && c.StartLSN.Compare(next) <= 0 {
			inst = c
		}
	}
	min, err := d.Source.MinLSN(ctx, inst.Name)
	if err != nil {
		return fmt.Errorf("read min_lsn of %s: %w", inst.Name, err)
	}
	if next.Less(min) {
		return &DataLossError{AsOf: asOf.String(), L: l, CaptureInstance: inst.Name, MinLSN: min, DuringConvert: duringConvert}
	}
	return nil
}

// checkReseed refuses a reseed whose spec still names the stream it replaces: a
// checkpoint with offsets, or a bootstrap or resnapshot facts row of the app_id at another
// LSN (the new seed's row would be skipped as written).
func (d Deps) checkReseed(ctx context.Context, l lsn.LSN) error {
	st, err := checkpoint.New(d.Staging, d.Spec.AppID).Resume(ctx)
	var mismatch *checkpoint.AppIDMismatchError
	switch {
	case errors.As(err, &mismatch):
		return &ReseedError{AppID: d.Spec.AppID, Reason: "the checkpoint belongs to another app_id"}
	case err != nil:
		return fmt.Errorf("read checkpoint: %w", err)
	case !st.Fresh():
		return &ReseedError{AppID: d.Spec.AppID, Reason: "the checkpoint already has offsets"}
	}
	if d.Facts == nil {
		return nil
	}
	rows, err := facts.SnapshotEvents(ctx, d.Facts, d.Spec.AppID)
	if err != nil {
		return fmt.Errorf("read snapshot facts: %w", err)
	}
	if s, ok := facts.LatestSnapshotLSN(rows, d.Spec.AppID); ok && s != l {
		return &ReseedError{AppID: d.Spec.AppID, Reason: fmt.Sprintf("its facts already hold a snapshot at %s", s)}
	}
	return nil
}
