package dynamo_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
)

// An idle table checked more often than KnownFor: every check (LatestWith's batch, or
// Latest's Query, alike) renews the observation of entry N, which itself ages from its
// completion; after the TTL DynamoDB deletes it, and the next check, its observation
// fresh, takes the entry's absence for a person's deletion (checkIdentity: "a complete
// entry lives for the TTL, well over KnownFor") and tells the unchanged log replaced: the
// Table reads it afresh and a transaction on a snapshot read before refuses
// (errLogReplaced). Not new with the batch (Latest renews the same way), but the
// started-over detection the batch keeps has this false positive.
func TestIdleEntryExpiredNotToldReplaced(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
	twin := f.open(f.factsStore, false) // Latest alone, the path before the batch
	if v, err := twin.Latest(t.Context()); err != nil || v != 2 {
		t.Fatalf("twin Latest = %d, %v", v, err)
	}
	for range 30 { // 25 hours of checks every 50 minutes
		f.now = f.now.Add(50 * time.Minute)
		f.latestWith("idle", f.bronze, f.facts, 2, 2, oneBatch)
		if v, err := twin.Latest(t.Context()); err != nil || v != 2 {
			t.Fatalf("twin Latest = %d, %v", v, err)
		}
	}
	// The TTL (DefaultTTL, a day after completion) deletes the entries.
	deleteEntries(t, f.e, f.bronze.TablePathKey())
	deleteEntries(t, f.e, f.facts.TablePathKey())
	f.now = f.now.Add(time.Minute)
	v, ov, ok, err := f.bronze.LatestWith(t.Context(), f.facts)
	if err != nil || v != 2 {
		t.Fatalf("LatestWith after the TTL = %d, %d, %v, %v; want 2", v, ov, ok, err)
	}
	if v, err := twin.Latest(t.Context()); err != nil || v != 2 {
		t.Fatalf("twin Latest after the TTL = %d, %v", v, err)
	}
	if f.bronze.Replaced() != 0 || twin.Replaced() != 0 {
		t.Errorf("entries expired by the TTL, log unchanged: Replaced = %d (LatestWith), %d (Latest); want 0, 0", f.bronze.Replaced(), twin.Replaced())
	}
}

// Its counterpart: the entries gone within KnownFor and the log written again with as
// many versions (the commit files replaced, no entry left): the commit file's ETag is no
// longer the one known, and the log is told replaced.
func TestEntriesGoneLogRewrittenToldReplaced(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
	deleteEntries(t, f.e, f.bronze.TablePathKey())
	for v := int64(0); v <= 2; v++ {
		b := logstoretest.Commit(9, int(v))
		if err := f.e.store.Put(t.Context(), logKey(v), bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	f.now = f.now.Add(time.Minute)
	if v, _, _, err := f.bronze.LatestWith(t.Context(), f.facts); err != nil || v != 2 {
		t.Fatalf("LatestWith after the log was written again = %d, %v; want 2", v, err)
	}
	if f.bronze.Replaced() != 1 {
		t.Errorf("commit files replaced, entries gone: Replaced = %d, want 1", f.bronze.Replaced())
	}
}
