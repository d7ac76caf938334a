package silver

import (
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// snapshot_on_switch with chunked snapshots, downstream (docs/bronze.md "The current
// table"): a column added before the newer capture instance exists, and set on every row
// then, reaches silver only through the chunked switch snapshot the stream opens when it
// switches. Silver applied wave by wave under a live workload holds NULL in it for rows
// unchanged since before S until the switch snapshot's waves bring them, and equals the
// source table, new column included, once its last wave is in.
func TestChunkedSwitchSnapshotFillsNewColumnInSilver(t *testing.T) {
	e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 71}, workload.Orders(), 60)
	e.chunked(20)
	e.spec.SnapshotOnSwitch = true
	e.drain()
	for !e.wave(nil, nil) {
		e.step(5)
		e.drain()
	}
	e.step(10)
	e.drain()
	e.apply()
	e.assertSilverEqualsSource("after the chunked bootstrap")

	if _, err := e.db.AddColumn("orders", source.Column{Name: "region", DataType: "varchar", MaxLength: 10, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	ids := e.orderIDs()
	if _, err := e.db.Exec(func(tx *cdcsim.Txn) error {
		for _, id := range ids {
			if err := tx.Update("orders", []any{int32(id)}, cdcsim.Row{"region": "r"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v2"}); err != nil {
		t.Fatal(err)
	}
	e.step(10)
	e.drain() // switches, and opens the chunked switch snapshot
	e.apply()
	// Until the switch snapshot's waves reach them, silver's rows unchanged since before S
	// differ from the table in region alone (NULL), and fewer after every wave.
	stale := func(when string) int {
		t.Helper()
		d := rebuild.Diff(e.sourceState(), e.silverState(), 0)
		for _, l := range d {
			if !strings.Contains(l, ": region = "+rebuild.Null+", want r") {
				t.Fatalf("%s: silver differs from the table in more than the new column of unchanged rows: %s", when, l)
			}
		}
		return len(d)
	}
	prev := stale("before the switch snapshot's waves")
	if prev == 0 {
		t.Fatal("silver equals the table before the switch snapshot's waves: nothing shows the new column needs the snapshot")
	}
	waves := 0
	for done := false; !done; waves++ {
		e.step(5)
		e.drain()
		done = e.wave(nil, nil)
		e.apply()
		n := stale("a wave of the switch snapshot")
		if n > prev || (done && n != 0) {
			t.Fatalf("after wave %d (done %v) silver has %d rows with a NULL region, %d before", waves+1, done, n, prev)
		}
		prev = n
	}
	if waves < 2 {
		t.Errorf("the switch snapshot took %d waves, want several", waves)
	}
	e.step(5)
	e.drain()
	e.apply()
	e.assertSilverEqualsSource("the switch snapshot whole")
}
