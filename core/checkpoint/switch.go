package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Switch snapshots (snapshot_on_switch: docs/stream.md "Schema changes"). The batch that
// first reads a newer capture instance records, under its generation's checkpoint,
//
//	switches/<S>/switch.json      a whole snapshot is wanted after the switch at S (PutIfAbsent)
//	switches/<S>/claims/<k>.json  the recover execution taking it (Claim)
//	switches/<S>/stamp.json       its stamp L, chosen once before anything is read (PutIfAbsent)
//	switches/<S>/done.json        the snapshot and its facts row are committed (PutIfAbsent)
//
// where S is the newer instance's start LSN. A switch snapshot is pending while its
// switch.json exists and its done.json does not. Every file is written once, so a rerun
// of any step reads what the first run decided.
const SwitchesDir = "switches/"

// Switch is switches/<S>/switch.json: the stream switched from capture instance From to
// To, whose start LSN is S, in batch Batch.
type Switch struct {
	S     lsn.LSN `json:"s"`
	From  string  `json:"from"`
	To    string  `json:"to"`
	Batch int64   `json:"batch"`
}

// SwitchStamp is switches/<S>/stamp.json: the LSN the switch snapshot reads the table at.
type SwitchStamp struct {
	Snapshot lsn.LSN   `json:"snapshot"`
	At       time.Time `json:"at"`
}

// SwitchDone is switches/<S>/done.json.
type SwitchDone struct {
	Snapshot lsn.Offset `json:"snapshot"`
	At       time.Time  `json:"at"`
}

func switchDir(s lsn.LSN) string       { return SwitchesDir + s.String() + "/" }
func switchKey(s lsn.LSN) string       { return switchDir(s) + "switch.json" }
func switchStampKey(s lsn.LSN) string  { return switchDir(s) + "stamp.json" }
func switchDoneKey(s lsn.LSN) string   { return switchDir(s) + "done.json" }
func switchClaimsDir(s lsn.LSN) string { return switchDir(s) + "claims/" }
func switchWhat(s lsn.LSN) string      { return "the switch snapshot at " + s.String() }

// RecordSwitch records that a whole snapshot is wanted after the switch sw. Recording the
// same switch again is a no-op (a replayed batch).
func (c *Checkpoint) RecordSwitch(ctx context.Context, sw Switch) error {
	err := c.putOnce(ctx, switchKey(sw.S), sw)
	var cs *ConcurrentStreamError
	if errors.As(err, &cs) {
		var have Switch
		if c.getJSON(ctx, switchKey(sw.S), &have) == nil && have.To == sw.To {
			return nil // the same switch, recorded by an earlier run of another batch
		}
	}
	return err
}

// PendingSwitch is the oldest switch whose snapshot is not committed yet, or nil: one List
// of switches/.
func (c *Checkpoint) PendingSwitch(ctx context.Context) (*Switch, error) {
	recorded, done := map[string]bool{}, map[string]bool{}
	var order []string
	for info, err := range c.store.List(ctx, SwitchesDir, "") {
		if err != nil {
			return nil, fmt.Errorf("read switches: %w", err)
		}
		s, name, ok := strings.Cut(strings.TrimPrefix(info.Key, SwitchesDir), "/")
		if !ok {
			continue
		}
		switch name {
		case "switch.json":
			recorded[s] = true
			order = append(order, s)
		case "done.json":
			done[s] = true
		}
	}
	var oldest *lsn.LSN
	for _, s := range order {
		l, err := lsn.Parse(s)
		if err != nil || done[s] {
			continue
		}
		if oldest == nil || l.Less(*oldest) {
			oldest = &l
		}
	}
	if oldest == nil {
		return nil, nil
	}
	var sw Switch
	if err := c.getJSON(ctx, switchKey(*oldest), &sw); err != nil {
		return nil, err
	}
	return &sw, nil
}

// SwitchClaimHolder is the execution holding the switch snapshot at s ("" when none).
func (c *Checkpoint) SwitchClaimHolder(ctx context.Context, s lsn.LSN) (Claim, error) {
	cl, _, err := c.claimHolder(ctx, switchClaimsDir(s))
	return cl, err
}

// ClaimSwitch claims the switch snapshot at s for execution, as ClaimAttempt claims an
// attempt.
func (c *Checkpoint) ClaimSwitch(ctx context.Context, s lsn.LSN, execution string, takeover bool, now time.Time) (Claim, bool, error) {
	return c.claim(ctx, switchClaimsDir(s), switchWhat(s), execution, takeover, now)
}

// SwitchStampOf is the stamp chosen for the switch snapshot at s; ok false before one is.
func (c *Checkpoint) SwitchStampOf(ctx context.Context, s lsn.LSN) (SwitchStamp, bool, error) {
	var st SwitchStamp
	ok, err := c.exists(ctx, switchStampKey(s))
	if err != nil || !ok {
		return st, false, err
	}
	return st, true, c.getJSON(ctx, switchStampKey(s), &st)
}

// StampSwitch records stamp as the switch snapshot's at s, unless one is recorded already:
// the recorded one is returned either way.
func (c *Checkpoint) StampSwitch(ctx context.Context, s lsn.LSN, stamp SwitchStamp) (SwitchStamp, error) {
	err := c.putOnce(ctx, switchStampKey(s), stamp)
	var cs *ConcurrentStreamError
	if err != nil && !errors.As(err, &cs) {
		return SwitchStamp{}, err
	}
	var have SwitchStamp
	if err := c.getJSON(ctx, switchStampKey(s), &have); err != nil {
		return SwitchStamp{}, err
	}
	return have, nil
}

// CommitSwitch writes switches/<S>/done.json: the switch snapshot at s is committed. A
// second write keeps the first.
func (c *Checkpoint) CommitSwitch(ctx context.Context, s lsn.LSN, d SwitchDone) error {
	err := c.putOnce(ctx, switchDoneKey(s), d)
	var cs *ConcurrentStreamError
	if errors.As(err, &cs) {
		return nil
	}
	return err
}
