package cdcsim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// MaxInstancesPerTable is SQL Server's limit of capture instances per source table.
const MaxInstancesPerTable = 2

// instance is one capture instance and its change table.
type instance struct {
	name    string
	tbl     *table
	cols    []source.Column // captured columns (Ordinal, ColumnID, type as captured)
	index   []string
	start   lsn.LSN
	min     lsn.LSN // zero until capture passes start
	created time.Time
	// cmdOffset shifts __$command_id: two instances of one table number the same change
	// differently (docs/reference/sqlserver-cdc.md §3.3).
	cmdOffset int32
	changes   []change // in (start_lsn, command_id, seqval, operation) order
	// noCommandID: the change table has no __$command_id column.
	noCommandID bool
	// present[j] is whether the table still has cols[j] (by column_id); refreshed on DDL.
	present []bool
	ddl     []source.DDLEvent
	dropped bool
}

// change is one row of cdc.[<ci>_CT].
type change struct {
	start lsn.LSN
	seq   lsn.LSN
	op    int8
	cmd   int32
	vals  []any // by index of instance.cols
}

// image is the change-row values of r for the instance's columns in a row of operation
// op: NULL for a column the table no longer has (DROP COLUMN) and for computed columns,
// and the large-object rules of Microsoft's page of cdc.<capture_instance>_CT
// (docs/reference/sqlserver-cdc.md §3.6): text, ntext and image are NULL in operations 1
// and 3; varchar(max), nvarchar(max) and varbinary(max) are NULL in operation 3 unless the
// update set them (set holds the column_ids it set).
func (ci *instance) image(r *row, op int8, set []int) []any {
	out := make([]any, len(ci.cols))
	for j, c := range ci.cols {
		if c.Computed || !ci.present[j] {
			continue
		}
		switch c.DataType {
		case "text", "ntext", "image":
			if op == 1 || op == 3 {
				continue
			}
		case "varchar", "nvarchar", "varbinary":
			if c.MaxLength < 0 && op == 3 && !slices.Contains(set, c.ColumnID) {
				continue
			}
		}
		out[j] = r.value(c.ColumnID)
	}
	return out
}

// refresh recomputes which captured columns the table still has.
func (ci *instance) refresh() {
	ci.present = make([]bool, len(ci.cols))
	for j, c := range ci.cols {
		_, ci.present[j] = ci.tbl.colByID(c.ColumnID)
	}
}

func (ci *instance) capturesAny(ids []int) bool {
	for _, c := range ci.cols {
		for _, id := range ids {
			if c.ColumnID == id {
				return true
			}
		}
	}
	return false
}

// CaptureOptions are the arguments of sys.sp_cdc_enable_table the simulator models.
type CaptureOptions struct {
	// Name is @capture_instance; "<schema>_<table>" when empty.
	Name string
	// Columns is @captured_column_list; every column when empty. Key columns are always
	// captured.
	Columns []string
	// WithoutCommandID makes a change table without __$command_id, as an instance created
	// before KB3030352 whose upgrade step did not run (docs/reference/sqlserver-cdc.md
	// §13.5).
	WithoutCommandID bool
}

// CaptureError is an enable or disable SQL Server refuses: a third instance, a name in use,
// a table with an open transaction that wrote it, an unknown instance.
type CaptureError struct {
	Name   string
	Reason string
}

func (e *CaptureError) Error() string { return "capture instance " + e.Name + ": " + e.Reason }

// EnableCapture creates a capture instance on a table (sys.sp_cdc_enable_table). Its
// start_lsn is a fresh LSN above every commit, so until capture writes a later entry it is
// above MaxLSN and MinLSN reports the instance as not found. Commits from then on reach it.
// A third instance of a table is refused, and so is a table an open transaction wrote (SQL
// Server would wait for that transaction; commit or roll it back first).
func (db *DB) EnableCapture(tableName string, opt CaptureOptions) (source.CaptureInstance, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(tableName)
	if err != nil {
		return source.CaptureInstance{}, err
	}
	name := opt.Name
	if name == "" {
		name = t.schema + "_" + t.name
	}
	if err := source.CheckCaptureInstance(name); err != nil {
		// A name the T-SQL Source would refuse (']', control characters, over 100).
		return source.CaptureInstance{}, &CaptureError{Name: name, Reason: err.Error()}
	}
	n := 0
	for _, ci := range db.instances {
		if strings.EqualFold(ci.name, name) {
			return source.CaptureInstance{}, &CaptureError{Name: name, Reason: "already exists"}
		}
		if ci.tbl == t {
			n++
		}
	}
	if n >= MaxInstancesPerTable {
		return source.CaptureInstance{}, &CaptureError{Name: name, Reason: fmt.Sprintf("table %s already has %d capture instances", t.qualified(), n)}
	}
	for tx := range db.open {
		if len(tx.overlay[t]) > 0 {
			return source.CaptureInstance{}, &CaptureError{Name: name, Reason: "an open transaction wrote " + t.qualified()}
		}
	}
	ci := &instance{name: name, tbl: t, created: db.now, cmdOffset: int32(db.created) * 1000, noCommandID: opt.WithoutCommandID}
	db.created++
	want := map[string]bool{}
	for _, c := range opt.Columns {
		if _, ok := t.colByName(c); !ok {
			return source.CaptureInstance{}, &CaptureError{Name: name, Reason: "no column " + c}
		}
		want[strings.ToLower(c)] = true
	}
	for _, i := range t.key {
		want[strings.ToLower(t.cols[i].Name)] = true
		ci.index = append(ci.index, t.cols[i].Name)
	}
	for _, c := range t.cols {
		if len(opt.Columns) > 0 && !want[strings.ToLower(c.Name)] {
			continue
		}
		c.Ordinal = len(ci.cols) + 1
		ci.cols = append(ci.cols, c)
	}
	ci.refresh()
	// Pending commits were logged before the enable, so capture finishes them first.
	db.captureLocked()
	ci.start = db.allocLSN()
	db.instances = append(db.instances, ci)
	return ci.info(), nil
}

func (ci *instance) info() source.CaptureInstance {
	return source.CaptureInstance{
		Name: ci.name, SourceSchema: ci.tbl.schema, SourceTable: ci.tbl.name,
		StartLSN: ci.start, CreateDate: ci.created, IndexColumns: append([]string(nil), ci.index...),
	}
}

// DisableCapture drops a capture instance at once (sys.sp_cdc_disable_table): its change
// table and DDL history are gone and MinLSN reports it as not found.
func (db *DB) DisableCapture(name string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	for i, ci := range db.instances {
		if ci.name == name {
			ci.dropped = true
			ci.changes = nil
			ci.ddl = nil
			db.instances = append(db.instances[:i:i], db.instances[i+1:]...)
			return nil
		}
	}
	return &CaptureError{Name: name, Reason: "does not exist"}
}

func (db *DB) instanceLocked(name string) (*instance, error) {
	if err := source.CheckCaptureInstance(name); err != nil {
		return nil, err // as the T-SQL Source refuses it before asking the server
	}
	for _, ci := range db.instances {
		if ci.name == name {
			return ci, nil
		}
	}
	var match []*instance
	for _, ci := range db.instances {
		if strings.EqualFold(ci.name, name) {
			match = append(match, ci)
		}
	}
	if len(match) == 1 {
		return match[0], nil
	}
	return nil, &source.CaptureInstanceNotFoundError{Name: name}
}

// Cleanup is sys.sp_cdc_cleanup_change_table: it moves the instance's min LSN to the low
// water mark and then deletes its change rows below it, and the mapping rows below every
// instance's min LSN. Like SQL Server, the new min LSN may land below the requested mark: at
// the first mapping entry that shares the tran_end_time of the last entry at or before it
// (lab t10). The mark must be a mapping entry's LSN and not above MaxLSN (else a
// *source.InvalidArgumentError, as SQL Server refuses it); a mark at or below the
// current min LSN changes nothing.
func (db *DB) Cleanup(captureInstance string, lowWater lsn.LSN) error {
	if err := db.MoveMinLSN(captureInstance, lowWater); err != nil {
		return err
	}
	return db.PurgeBelowMin(captureInstance)
}

// MoveMinLSN is the first half of Cleanup: the min LSN moves, the rows stay until
// PurgeBelowMin. Between the two a reader sees rows below min LSN, as during a real cleanup.
func (db *DB) MoveMinLSN(captureInstance string, lowWater lsn.LSN) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	ci, err := db.instanceLocked(captureInstance)
	if err != nil {
		return err
	}
	if lowWater.Compare(db.maxLSNLocked()) > 0 {
		return &source.InvalidArgumentError{Arg: "low water mark", Reason: fmt.Sprintf("%s is above max LSN %s", lowWater, db.maxLSNLocked())}
	}
	m := db.timeline[db.purged:]
	i := searchEntries(m, lowWater) // first entry > lowWater
	if i == 0 || m[i-1].lsn != lowWater {
		// SQL Server refuses it: the new low endpoint must be the start_lsn of a current entry in
		// cdc.lsn_time_mapping (docs/reference/sqlserver-cdc.md §5.3).
		return &source.InvalidArgumentError{Arg: "low water mark", Reason: fmt.Sprintf("%s is not the start_lsn of an entry in cdc.lsn_time_mapping", lowWater)}
	}
	at := m[i-1].local
	j := i - 1
	for j > 0 && m[j-1].local.Equal(at) {
		j--
	}
	newMin := m[j].lsn
	if newMin.Compare(ci.min) > 0 {
		ci.min = newMin
	}
	return nil
}

// PurgeBelowMin is the second half of Cleanup: it deletes the instance's change rows below
// its min LSN and the mapping rows below the lowest min LSN of all instances.
func (db *DB) PurgeBelowMin(captureInstance string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	ci, err := db.instanceLocked(captureInstance)
	if err != nil {
		return err
	}
	k := 0
	for k < len(ci.changes) && ci.changes[k].start.Compare(ci.min) < 0 {
		k++
	}
	// A new slice, so that readers holding the old one are not disturbed.
	ci.changes = append([]change(nil), ci.changes[k:]...)
	low := lsn.Max
	for _, o := range db.instances {
		if o.min.IsZero() {
			continue
		}
		if o.min.Compare(low) < 0 {
			low = o.min
		}
	}
	for db.purged < len(db.timeline)-1 && db.timeline[db.purged].lsn.Compare(low) < 0 {
		db.purged++
	}
	return nil
}

// CleanupOlderThan runs Cleanup on every instance with the low water mark of the last
// commit at least retention older than the clock, as the cleanup job does.
func (db *DB) CleanupOlderThan(retention time.Duration) error {
	db.mu.Lock()
	cut := db.now.Add(-retention)
	var mark lsn.LSN
	for _, e := range db.timeline[db.purged:] {
		if e.utc.After(cut) {
			break
		}
		mark = e.lsn
	}
	var names []string
	for _, ci := range db.instances {
		names = append(names, ci.name)
	}
	db.mu.Unlock()
	if mark.IsZero() {
		return nil
	}
	for _, n := range names {
		if err := db.Cleanup(n, mark); err != nil {
			return err
		}
	}
	return nil
}

// ForgetCommitTime deletes the cdc.lsn_time_mapping row of the commit at l and keeps its
// change rows: what a reader meets when the mapping was cleaned up on a schedule of its own
// (docs/reference/sqlserver-cdc.md §3.7). A change read then returns those rows with a NULL
// commit time. The newest entry is refused (max_lsn would move back), as is an LSN that is
// no entry's start_lsn (InvalidArgumentError).
func (db *DB) ForgetCommitTime(l lsn.LSN) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	m := db.timeline[db.purged:]
	i := searchEntries(m, l) - 1
	if i < 0 || m[i].lsn != l {
		return &source.InvalidArgumentError{Arg: "lsn", Reason: fmt.Sprintf("%s is not the start_lsn of an entry in cdc.lsn_time_mapping", l)}
	}
	if i == len(m)-1 {
		return &source.InvalidArgumentError{Arg: "lsn", Reason: fmt.Sprintf("%s is the newest entry: max_lsn would move back", l)}
	}
	// A new slice, so that readers holding the old one are not disturbed.
	k := db.purged + i
	db.timeline = slices.Concat(db.timeline[:k], db.timeline[k+1:])
	return nil
}
