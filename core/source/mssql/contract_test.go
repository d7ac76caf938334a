package mssql_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
)

// The contract suite against a real SQL Server (localstack/run-contract.sh brings one up).
//
//	MSSQL_TEST_DSN         sqlserver:// URL of a login that may create tables and enable
//	                       CDC on them (db_owner) in a CDC-enabled database, Agent running.
//	MSSQL_TEST_READER_DSN  optional: the least-privilege login the Source under test uses
//	                       (default MSSQL_TEST_DSN). It needs the grants of docs/permissions.md;
//	                       the harness grants them on each table it creates.
//	MSSQL_TEST_REQUIRED    when set, a missing MSSQL_TEST_DSN fails instead of skipping.
//	MSSQL_TEST_BACKUP_DIR  when set, a directory on the server's file system: the restore
//	                       contract test backs the test database up there and restores it
//	                       (RESTORE ... WITH KEEP_CDC, which ends every other session of
//	                       the database). Unset, that test skips.
func TestContractSQLServer(t *testing.T) {
	dsn := os.Getenv("MSSQL_TEST_DSN")
	if dsn == "" {
		if os.Getenv("MSSQL_TEST_REQUIRED") != "" {
			t.Fatal("MSSQL_TEST_REQUIRED is set but MSSQL_TEST_DSN is empty")
		}
		t.Skip("MSSQL_TEST_DSN is not set: no SQL Server here. The same contract suite runs against cdcsim in core/source/sourcetest; run localstack/run-contract.sh to run it against SQL Server 2022")
	}
	admin, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	readerDSN := os.Getenv("MSSQL_TEST_READER_DSN")
	if readerDSN == "" {
		readerDSN = dsn
	}
	h := &sqlHarness{admin: admin, adminDSN: dsn, readerDSN: readerDSN, backupDir: os.Getenv("MSSQL_TEST_BACKUP_DIR")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.ensureMarker(ctx); err != nil {
		t.Fatalf("marker table: %v", err)
	}
	sourcetest.Run(t, h)
}

// markerTable is a CDC-tracked table the harness writes a token to; once the token is in
// its change table, capture has processed every earlier commit (LSN order is commit order).
const markerTable = "mssqlcdc_marker"

type sqlHarness struct {
	admin     *sql.DB
	adminDSN  string
	backupDir string
	readerDSN string
	seq       atomic.Int64
	reader    string // the reader's database user, for GRANTs
}

func (h *sqlHarness) ensureMarker(ctx context.Context) error {
	_, err := h.admin.ExecContext(ctx, `IF OBJECT_ID(N'dbo.`+markerTable+`') IS NULL
BEGIN
  CREATE TABLE dbo.`+markerTable+` (token nvarchar(40) NOT NULL PRIMARY KEY);
  EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'`+markerTable+`', @role_name = NULL, @capture_instance = N'dbo_`+markerTable+`';
END`)
	if err != nil {
		return err
	}
	if h.readerDSN == "" {
		return nil
	}
	rdb, err := sql.Open("sqlserver", h.readerDSN)
	if err != nil {
		return err
	}
	defer rdb.Close()
	return rdb.QueryRowContext(ctx, "SELECT USER_NAME()").Scan(&h.reader)
}

func (h *sqlHarness) Open(t *testing.T) sourcetest.Env {
	if h.backupDir != "" {
		return &sqlRestoreEnv{h.open(t)}
	}
	return h.open(t)
}

func (h *sqlHarness) open(t *testing.T) *sqlEnv {
	src, err := mssql.Open(mssql.Options{DSN: h.readerDSN, Development: true, Retry: mssql.Retry{Base: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	e := &sqlEnv{h: h, src: src, prefix: fmt.Sprintf("ct%d%d_", time.Now().Unix()%100000, h.seq.Add(1)), tables: map[string]sourcetest.Table{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for name := range e.tables {
			if _, err := h.admin.ExecContext(ctx, "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = @p1, @capture_instance = N'all'", name); err != nil {
				t.Logf("disable cdc on %s: %v", name, err)
			}
			if _, err := h.admin.ExecContext(ctx, "DROP TABLE dbo.["+name+"]"); err != nil {
				t.Logf("drop %s: %v", name, err)
			}
		}
		src.Close()
	})
	return e
}

type sqlEnv struct {
	h      *sqlHarness
	src    *mssql.DB
	prefix string
	tables map[string]sourcetest.Table // physical name → spec
}

func (e *sqlEnv) Source() source.Source { return e.src }

func (e *sqlEnv) Name(logical string) string { return e.prefix + logical }

func (e *sqlEnv) CreateTable(ctx context.Context, spec sourcetest.Table) error {
	name := e.Name(spec.Name)
	var defs []string
	for _, c := range spec.Columns {
		if _, err := sourcetest.ParseColumn(c[0], c[1], true); err != nil {
			return err
		}
		null := " NULL"
		for _, k := range spec.Key {
			if k == c[0] {
				null = " NOT NULL"
			}
		}
		defs = append(defs, "["+c[0]+"] "+c[1]+null)
	}
	for _, c := range spec.Computed {
		defs = append(defs, "["+c[0]+"] AS ("+c[1]+")")
	}
	keys := make([]string, len(spec.Key))
	for i, k := range spec.Key {
		keys[i] = "[" + k + "]"
	}
	ddl := "CREATE TABLE dbo.[" + name + "] (" + strings.Join(defs, ", ") + ", CONSTRAINT [pk_" + name + "] PRIMARY KEY (" + strings.Join(keys, ", ") + "))"
	if _, err := e.h.admin.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	s := spec
	s.Name = name
	e.tables[name] = s
	if e.h.reader != "" && e.h.reader != "dbo" {
		if _, err := e.h.admin.ExecContext(ctx, "GRANT SELECT ON dbo.["+name+"] TO ["+e.h.reader+"]"); err != nil {
			return fmt.Errorf("grant on %s: %w", name, err)
		}
	}
	return e.EnableCapture(ctx, spec.Name, spec.Instance)
}

func (e *sqlEnv) EnableCapture(ctx context.Context, table, instance string) error {
	name, ci := e.Name(table), e.Name(instance)
	if _, err := e.h.admin.ExecContext(ctx, "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = @p1, @role_name = NULL, @capture_instance = @p2", name, ci); err != nil {
		return fmt.Errorf("enable cdc on %s as %s: %w", name, ci, err)
	}
	if e.h.reader != "" && e.h.reader != "dbo" {
		if _, err := e.h.admin.ExecContext(ctx, "GRANT SELECT ON cdc.["+ci+"_CT] TO ["+e.h.reader+"]"); err != nil {
			return fmt.Errorf("grant on the change table of %s: %w", ci, err)
		}
	}
	return nil
}

type sqlTx struct {
	e  *sqlEnv
	tx *sql.Tx
}

func (e *sqlEnv) Begin(ctx context.Context) (sourcetest.Tx, error) {
	tx, err := e.h.admin.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &sqlTx{e: e, tx: tx}, nil
}

func (x *sqlTx) Exec(ctx context.Context, stmts ...sourcetest.Stmt) error {
	for _, s := range stmts {
		q, args, err := x.e.render(s)
		if err != nil {
			return err
		}
		if _, err := x.tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func (x *sqlTx) Commit(context.Context) error { return x.tx.Commit() }

// render turns a statement into T-SQL with parameters.
func (e *sqlEnv) render(s sourcetest.Stmt) (string, []any, error) {
	name := e.Name(s.Table)
	spec, ok := e.tables[name]
	if !ok {
		return "", nil, fmt.Errorf("unknown table %s", s.Table)
	}
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("@p%d", len(args)) }
	where := func() string {
		keys := s.Keys
		if keys == nil {
			keys = [][]any{s.Key}
		}
		var or []string
		for _, key := range keys {
			var w []string
			for i, k := range spec.Key {
				w = append(w, "["+k+"] = "+arg(key[i]))
			}
			or = append(or, "("+strings.Join(w, " AND ")+")")
		}
		return " WHERE " + strings.Join(or, " OR ")
	}
	switch {
	case s.Rows != nil:
		var cols []string
		for c := range s.Rows[0] {
			cols = append(cols, c)
		}
		slices.Sort(cols)
		var tuples []string
		for _, r := range s.Rows {
			var vals []string
			for _, c := range cols {
				vals = append(vals, arg(r[c]))
			}
			tuples = append(tuples, "("+strings.Join(vals, ", ")+")")
		}
		return "INSERT INTO dbo.[" + name + "] ([" + strings.Join(cols, "], [") + "]) VALUES " + strings.Join(tuples, ", "), args, nil
	case s.Insert != nil:
		var cols, vals []string
		for c, v := range s.Insert {
			cols = append(cols, "["+c+"]")
			vals = append(vals, arg(v))
		}
		return "INSERT INTO dbo.[" + name + "] (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(vals, ", ") + ")", args, nil
	case s.Delete:
		return "DELETE FROM dbo.[" + name + "]" + where(), args, nil
	default:
		var set []string
		for c, v := range s.Update {
			set = append(set, "["+c+"] = "+arg(v))
		}
		q := "UPDATE dbo.[" + name + "] SET " + strings.Join(set, ", ")
		return q + where(), args, nil
	}
}

func (e *sqlEnv) Exec(ctx context.Context, stmts ...sourcetest.Stmt) error {
	tx, err := e.Begin(ctx)
	if err != nil {
		return err
	}
	if err := tx.Exec(ctx, stmts...); err != nil {
		tx.(*sqlTx).tx.Rollback()
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	return e.WaitCaptured(ctx)
}

// WaitCaptured commits a marker token and waits until capture has written it.
func (e *sqlEnv) WaitCaptured(ctx context.Context) error {
	token := fmt.Sprintf("%s%d", e.prefix, time.Now().UnixNano())
	if _, err := e.h.admin.ExecContext(ctx, "INSERT INTO dbo."+markerTable+" (token) VALUES (@p1)", token); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	for {
		var n int
		if err := e.h.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM cdc.[dbo_"+markerTable+"_CT] WHERE token = @p1", token).Scan(&n); err != nil {
			return fmt.Errorf("read marker: %w", err)
		}
		if n > 0 {
			return nil
		}
		if err := e.Sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// Idle waits until max LSN moves without a commit of ours: capture's idle entry (about
// every five minutes on SQL Server 2022).
func (e *sqlEnv) Idle(ctx context.Context) error {
	m0, err := e.src.MaxLSN(ctx)
	if err != nil {
		return err
	}
	for {
		if err := e.Sleep(ctx, 2*time.Second); err != nil {
			return fmt.Errorf("wait for an idle entry: %w", err)
		}
		m, err := e.src.MaxLSN(ctx)
		if err != nil {
			return err
		}
		if m0.Less(m) {
			return nil
		}
	}
}

func (e *sqlEnv) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (e *sqlEnv) Cleanup(ctx context.Context, instance string, low lsn.LSN) error {
	_, err := e.h.admin.ExecContext(ctx, "DECLARE @lw binary(10) = CONVERT(binary(10), @p2, 1); "+
		"EXEC sys.sp_cdc_cleanup_change_table @capture_instance = @p1, @low_water_mark = @lw, @threshold = 5000;", instance, low.String())
	return err
}

// sqlRestoreEnv is a sqlEnv that can back up and restore the test database
// (MSSQL_TEST_BACKUP_DIR set).
type sqlRestoreEnv struct{ *sqlEnv }

var _ sourcetest.Restorer = sqlRestoreEnv{}

// Backup is BACKUP DATABASE ... COPY_ONLY into MSSQL_TEST_BACKUP_DIR; it returns the file.
func (e sqlRestoreEnv) Backup(ctx context.Context) (any, error) {
	var db string
	if err := e.h.admin.QueryRowContext(ctx, "SELECT DB_NAME()").Scan(&db); err != nil {
		return nil, err
	}
	file := strings.TrimRight(e.h.backupDir, "/") + "/" + e.prefix + "rewind.bak"
	if _, err := e.h.admin.ExecContext(ctx, "BACKUP DATABASE ["+db+"] TO DISK = @p1 WITH INIT, COPY_ONLY", file); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return [2]string{db, file}, nil
}

// Restore restores the backup over the database from master, keeping CDC (its capture
// job goes on), then waits until capture writes again.
func (e sqlRestoreEnv) Restore(ctx context.Context, b any) error {
	bk := b.([2]string)
	u, err := url.Parse(e.h.adminDSN)
	if err != nil {
		return err
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "database") {
			q.Del(k)
		}
	}
	q.Set("database", "master")
	u.RawQuery = q.Encode()
	master, err := sql.Open("sqlserver", u.String())
	if err != nil {
		return err
	}
	defer master.Close()
	db := "[" + bk[0] + "]"
	for _, stmt := range []string{
		"ALTER DATABASE " + db + " SET SINGLE_USER WITH ROLLBACK IMMEDIATE",
		"RESTORE DATABASE " + db + " FROM DISK = @p1 WITH REPLACE, KEEP_CDC",
		"ALTER DATABASE " + db + " SET MULTI_USER",
	} {
		var args []any
		if strings.Contains(stmt, "@p1") {
			args = append(args, bk[1])
		}
		if _, err := master.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	// Pooled sessions of the admin login died with the restore.
	e.h.admin.SetMaxIdleConns(0)
	e.h.admin.SetMaxIdleConns(2)
	return nil
}

var _ sourcetest.DDLer = (*sqlEnv)(nil)

// Alter runs ALTER TABLE on a table of the test (ADD, DROP COLUMN or ALTER COLUMN, names
// bracketed, types as sourcetest.ParseColumn accepts them).
func (e *sqlEnv) Alter(ctx context.Context, table, ddl string) error {
	f := strings.Fields(ddl)
	var stmt string
	switch {
	case len(f) == 3 && strings.EqualFold(f[0], "ADD"):
		if _, err := sourcetest.ParseColumn(f[1], f[2], true); err != nil {
			return err
		}
		stmt = "ADD [" + f[1] + "] " + f[2] + " NULL"
	case len(f) == 3 && strings.EqualFold(f[0], "DROP"):
		stmt = "DROP COLUMN [" + f[2] + "]"
	case len(f) == 4 && strings.EqualFold(f[0], "ALTER"):
		if _, err := sourcetest.ParseColumn(f[2], f[3], true); err != nil {
			return err
		}
		stmt = "ALTER COLUMN [" + f[2] + "] " + f[3] + " NULL"
	default:
		return fmt.Errorf("ddl %q: not ADD, DROP COLUMN or ALTER COLUMN", ddl)
	}
	if _, err := e.h.admin.ExecContext(ctx, "ALTER TABLE dbo.["+table+"] "+stmt); err != nil {
		return fmt.Errorf("alter %s: %w", table, err)
	}
	return e.WaitCaptured(ctx)
}

// DisableCapture is sys.sp_cdc_disable_table for one instance.
func (e *sqlEnv) DisableCapture(ctx context.Context, table, instance string) error {
	_, err := e.h.admin.ExecContext(ctx, "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = @p1, @capture_instance = @p2", table, instance)
	return err
}

var _ sourcetest.Permissioner = (*sqlEnv)(nil)

// DenyChangeTable denies the reader login SELECT on the change table (a DENY, so that a
// role membership such as db_datareader does not grant it anyway). ok is false when the
// reader is the tables' owner (no MSSQL_TEST_READER_DSN, or a reader mapped to dbo).
func (e *sqlEnv) DenyChangeTable(ctx context.Context, instance string) (bool, error) {
	if e.h.reader == "" || e.h.reader == "dbo" {
		return false, nil
	}
	_, err := e.h.admin.ExecContext(ctx, "DENY SELECT ON cdc.["+instance+"_CT] TO ["+e.h.reader+"]")
	return err == nil, err
}

// GrantChangeTable grants it again (a GRANT replaces the DENY).
func (e *sqlEnv) GrantChangeTable(ctx context.Context, instance string) error {
	_, err := e.h.admin.ExecContext(ctx, "GRANT SELECT ON cdc.["+instance+"_CT] TO ["+e.h.reader+"]")
	return err
}
