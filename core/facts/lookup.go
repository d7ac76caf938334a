package facts

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// OpenSnapshot is a snapshot_open row that no completion row closed yet.
type OpenSnapshot struct {
	// S is the snapshot's LSN (the row's max_lsn).
	S lsn.LSN
	// Mode is "full" or "chunked" (a missing or unknown mode reads as chunked,
	// docs/reference/original-library.md §6.5).
	Mode string
	// Detail is the parsed detail; Row the row itself.
	Detail OpenDetail
	Row    Row
}

// OpenSnapshots returns the snapshots of appID that are open among rows, oldest S first
// (docs/reference/original-library.md §6.6): a snapshot_open row stays open until a
// bootstrap or resnapshot row of the same app_id has max_lsn >= S. A full one stops
// counting once cleanup passed its S (minLSN > S; pass the zero LSN to skip that rule). A
// chunked one superseded by a newer open chunked one is abandoned and left out, and so is a
// full one a later chunked open of its generation took over. app_id is
// compared exactly: pass the generation's id (<app_id>.g<n>) for generation n.
func OpenSnapshots(rows []Row, appID string, minLSN lsn.LSN) []OpenSnapshot {
	var closed lsn.LSN
	closedAny := false
	var opens []OpenSnapshot
	for _, r := range rows {
		if r.AppID != appID {
			continue
		}
		switch r.Event {
		case EventBootstrap, EventResnapshot:
			if l, err := lsn.Parse(r.MaxLSN); err == nil && (!closedAny || closed.Less(l)) {
				closed, closedAny = l, true
			}
		case EventSnapshotOpen:
			s, err := lsn.Parse(r.MaxLSN)
			if err != nil {
				continue
			}
			var d OpenDetail
			_ = json.Unmarshal([]byte(r.Detail), &d)
			mode := d.Mode
			if mode != ModeFull {
				mode = ModeChunked
			}
			opens = append(opens, OpenSnapshot{S: s, Mode: mode, Detail: d, Row: r})
		}
	}
	sort.SliceStable(opens, func(i, j int) bool { return opens[i].S.Less(opens[j].S) })
	var out []OpenSnapshot
	seen := map[lsn.LSN]bool{}
	for i, o := range opens {
		if seen[o.S] {
			continue // a full snapshot's open row per attempt: one snapshot
		}
		seen[o.S] = true
		if closedAny && o.S.Compare(closed) <= 0 {
			continue
		}
		if o.Mode == ModeFull && !minLSN.IsZero() && o.S.Less(minLSN) {
			continue
		}
		if o.Mode == ModeFull && slices.ContainsFunc(opens[i+1:], func(n OpenSnapshot) bool {
			return n.Mode == ModeChunked && n.Detail.Generation == o.Detail.Generation && o.S.Less(n.S)
		}) {
			continue // a chunked open of its generation took it over (docs/snapshots.md "One mode per run")
		}
		if o.Mode == ModeChunked {
			superseded := false
			for _, n := range opens[i+1:] {
				if n.Mode == ModeChunked && o.S.Less(n.S) {
					superseded = true
					break
				}
			}
			if superseded {
				continue
			}
		}
		out = append(out, o)
	}
	return out
}

// LastBatch returns appID's micro-batch row (event NULL) with the largest batch_id.
func LastBatch(rows []Row, appID string) (Row, bool) {
	var best Row
	found := false
	for _, r := range rows {
		if r.AppID != appID || r.Event != "" || r.BatchID == nil {
			continue
		}
		if !found || *r.BatchID > *best.BatchID {
			best, found = r, true
		}
	}
	return best, found
}

// LatestSnapshotLSN is the greatest max_lsn over appID's bootstrap and resnapshot rows (one
// of the two inputs of the newest rebuild point, docs/reference/original-library.md §7.6).
func LatestSnapshotLSN(rows []Row, appID string) (lsn.LSN, bool) {
	var best lsn.LSN
	found := false
	for _, r := range rows {
		if r.AppID != appID || (r.Event != EventBootstrap && r.Event != EventResnapshot) {
			continue
		}
		if l, err := lsn.Parse(r.MaxLSN); err == nil && (!found || best.Less(l)) {
			best, found = l, true
		}
	}
	return best, found
}
