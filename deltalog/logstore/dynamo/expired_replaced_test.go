package dynamo_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Was a hole (main 652655f): once the entries of the version a LogStore knew had expired
// (an observation with no entry forgets the tempPath), or when it first opened a table
// whose entries had expired, the log deleted and written again with as many versions or
// more was not told: nothing identified the version known but its entry, and the listing
// from it took the new file for the one known. The LogStore now also keeps the commit
// file's ETag, from its own commit's copy (storage.CopyIfAbsentTag) or from the listings
// it makes anyway (OpenLatest's, Latest's), and checks it there as condput does. Entries
// expiring alone are still no start over (Replaced 0), and the new table's entries, kept
// or expired, make no difference; nor does a Latest within KnownFor of an observation
// made with no entry (the new table's entries at or below the version known, made since,
// have Latest list rather than trust the Query).
func TestExpiredEntriesStartedOverTold(t *testing.T) {
	srv := emulators.StartS3(t)
	for _, first := range []string{"write", "latest", "open"} {
		for _, c := range []struct {
			newEntries string
			wait       time.Duration // from the start over to the Latest that must tell it
		}{{"kept", dynamo.DefaultKnownFor}, {"kept", 0}, {"expired", dynamo.DefaultKnownFor}} {
			for _, n := range []int64{2, 4, 6} { // the old table has 4 versions
				t.Run(fmt.Sprintf("%s/new-entries-%s/after-%s/started-over-with-%d", first, c.newEntries, c.wait, n), func(t *testing.T) {
					e := newEnv(t, srv)
					ctx := t.Context()
					now := time.Unix(1_700_000_000, 0)
					l := e.logStore(t, dynamo.Options{Now: func() time.Time { return now }})
					write := func(l *dynamo.LogStore, n int64, seed int) {
						t.Helper()
						for v := range n {
							if err := l.Write(ctx, v, logstoretest.Commit(seed, int(v))); err != nil {
								t.Fatalf("write %d: %v", v, err)
							}
						}
					}
					latest := func(step string, want int64, wantReplaced uint64) {
						t.Helper()
						if v, err := l.Latest(ctx); err != nil || v != want {
							t.Fatalf("%s: Latest = %d, %v; want %d", step, v, err, want)
						}
						if got := l.Replaced(); got != wantReplaced {
							t.Errorf("%s: Replaced = %d, want %d", step, got, wantReplaced)
						}
					}
					switch first {
					case "write": // a warm writer that made no listing before they expired
						write(l, 4, 0)
						now = now.Add(dynamo.DefaultTTL)
						deleteEntries(t, e, l.TablePathKey())
					case "latest": // a warm writer, which lists once more before they expire
						write(l, 4, 0)
						now = now.Add(dynamo.DefaultKnownFor)
						latest("after KnownFor", 3, 0)
						now = now.Add(dynamo.DefaultTTL)
						deleteEntries(t, e, l.TablePathKey())
						latest("entries expired", 3, 0)
					case "open": // a first open of a table whose entries expired
						write(e.logStore(t, dynamo.Options{}), 4, 0)
						deleteEntries(t, e, l.TablePathKey())
						if v, _ := openLatest(t, l, e.store); v != 3 {
							t.Fatalf("OpenLatest = %d, want 3", v)
						}
					}
					wipeStore(t, e)
					write(e.logStore(t, dynamo.Options{}), n, 1)
					if c.newEntries == "expired" {
						deleteEntries(t, e, l.TablePathKey())
					}
					now = now.Add(c.wait)
					latest("started over", n-1, 1)
				})
			}
		}
	}
}
