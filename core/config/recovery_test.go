package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// on_data_loss, resnapshot_interval_days, schemaChangePolicy and columns: defaults, and
// every bad value a problem under its own field.
func TestRecoveryAndSchemaOptions(t *testing.T) {
	s, err := Parse([]byte(minimal()))
	if err != nil {
		t.Fatal(err)
	}
	if s.OnDataLoss != OnDataLossFail || s.Resnapshots() || s.ResnapshotInterval() != 7*24*time.Hour ||
		s.Options.SchemaChangePolicy != SchemaChangeClassify || s.FailsOnDDL() || s.Options.Columns != nil || s.SnapshotOnSwitch {
		t.Errorf("defaults: %+v", s)
	}
	s, err = Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"on_data_loss":"resnapshot","resnapshot_interval_days":0.5,"snapshot_on_switch":false,
		"options":{"schemaChangePolicy":"fail","columns":["id","Amount"]},"bronze"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Resnapshots() || s.ResnapshotInterval() != 12*time.Hour || !s.FailsOnDDL() || len(s.Options.Columns) != 2 || s.SnapshotOnSwitch {
		t.Errorf("set: %+v", s)
	}
	if s, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"snapshot_on_switch":true,"bronze"`, 1))); err != nil || !s.SnapshotOnSwitch {
		t.Errorf("snapshot_on_switch with full snapshots: %v, %v", s, err)
	}
	// Chunked: the stream opens a chunked switch snapshot the backfill reads.
	if s, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, `"snapshot_on_switch":true,"snapshot":"chunked","bronze"`, 1))); err != nil ||
		!s.SnapshotOnSwitch || s.Snapshot != SnapshotChunked {
		t.Errorf("snapshot_on_switch with chunked snapshots: %v, %v", s, err)
	}
	zero := `"resnapshot_interval_days":0,"bronze"`
	if s, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, zero, 1))); err != nil || s.ResnapshotInterval() != 0 {
		t.Errorf("interval 0: %v, %v", s, err)
	}
	for _, c := range []struct{ doc, field, says string }{
		{`"on_data_loss":"skip"`, "on_data_loss", `want "fail"`},
		{`"on_data_loss":"resnapshot","options":{"failOnDataLoss":false}`, "on_data_loss", "failOnDataLoss"},
		{`"resnapshot_interval_days":-1`, "resnapshot_interval_days", "days"},
		{`"resnapshot_interval_days":400`, "resnapshot_interval_days", "366"},
		{`"options":{"schemaChangePolicy":"ignore"}`, "options.schemaChangePolicy", `"classify"`},
		{`"options":{"columns":[]}`, "options.columns", "empty"},
		{`"options":{"columns":["id","ID"]}`, "options.columns[1]", "twice"},
		{`"options":{"columns":["a]b"]}`, "options.columns[0]", "']'"},
	} {
		_, err := Parse([]byte(strings.Replace(minimal(), `"bronze"`, c.doc+`,"bronze"`, 1)))
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Has(c.field) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want a problem at %s saying %q", c.doc, err, c.field, c.says)
		}
	}
}
