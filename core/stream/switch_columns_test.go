package stream

import (
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A newer capture instance that leaves out a column the older one captured: the switch
// goes on, its capture_instance_switched row names the column no longer captured (read as
// NULL from S), bronze keeps the column, and changes from S on hold NULL in it
// (docs/stream.md "Schema changes").
func TestSwitchNamesColumnsNoLongerCaptured(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 51})
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 1, "amount": 1, "note": "before"})
		return err
	})
	e.mustDrain(Options{})
	ci, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v2", Columns: []string{"id", "amount"}})
	if err != nil {
		t.Fatal(err)
	}
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 2, "amount": 2, "note": "after"})
		return err
	})
	e.mustDrain(Options{})
	var sw []facts.Row
	for _, r := range e.factsRows() {
		if r.Event == facts.EventCaptureInstanceSwitched {
			sw = append(sw, r)
		}
	}
	if len(sw) != 1 || sw[0].MinLSN != ci.StartLSN.String() ||
		!strings.Contains(sw[0].Detail, "not captured by dbo_orders_v2, read as NULL from "+ci.StartLSN.String()+": note") {
		t.Fatalf("capture_instance_switched rows %+v, want one naming note", sw)
	}
	if !strings.Contains(e.logs.String(), `"not_captured":"note"`) {
		t.Errorf("the switch warning does not name note: %s", e.logs.String())
	}
	st, _ := e.bronzeState()
	ni := columnIndex(st.Columns, "note")
	if ni < 0 || st.Rows["1"][ni] != "before" || st.Rows["2"] == nil || st.Rows["2"][ni] != "NULL" {
		t.Errorf("bronze columns %v rows %v: want note kept, NULL for the row from S on", st.Columns, st.Rows)
	}
}
