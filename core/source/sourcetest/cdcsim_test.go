package sourcetest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// simHarness runs the contract suite against the simulator, with a capture job that lags
// (ManualCapture): Exec and WaitCaptured run capture, like waiting for the job.
type simHarness struct{}

type simEnv struct {
	db *cdcsim.DB
}

func (simHarness) Open(t *testing.T) Env {
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	env := &simEnv{db: cdcsim.New(cdcsim.Config{Seed: 7, Location: loc, ManualCapture: true})}
	t.Cleanup(func() { env.db.Close() }) // the database SetClock left, if it replaced it
	return env
}

func (e *simEnv) Source() source.Source      { return e.db }
func (e *simEnv) Name(logical string) string { return logical }

func (e *simEnv) CreateTable(_ context.Context, spec Table) error {
	var cols []source.Column
	for _, c := range spec.Columns {
		nullable := true
		for _, k := range spec.Key {
			if k == c[0] {
				nullable = false
			}
		}
		col, err := ParseColumn(c[0], c[1], nullable)
		if err != nil {
			return err
		}
		cols = append(cols, col)
	}
	compute := map[string]func(cdcsim.Row) any{}
	for _, c := range spec.Computed {
		m := computedRE.FindStringSubmatch(c[1])
		if m == nil {
			return fmt.Errorf("computed column %s: expression %q is not [col] * n", c[0], c[1])
		}
		src, k := m[1], int64(0)
		fmt.Sscan(m[2], &k)
		cols = append(cols, source.Column{Name: c[0], DataType: "int", Nullable: true, Computed: true})
		compute[c[0]] = func(r cdcsim.Row) any {
			if v, ok := r[src].(int64); ok {
				return v * k
			}
			return nil
		}
	}
	if err := e.db.CreateTable(cdcsim.TableSpec{Name: spec.Name, Columns: cols, Key: spec.Key, Compute: compute}); err != nil {
		return err
	}
	return e.EnableCapture(context.Background(), spec.Name, spec.Instance)
}

func (e *simEnv) EnableCapture(_ context.Context, table, instance string) error {
	_, err := e.db.EnableCapture(table, cdcsim.CaptureOptions{Name: instance})
	return err
}

type simTx struct{ tx *cdcsim.Txn }

func (e *simEnv) Begin(context.Context) (Tx, error) { return &simTx{tx: e.db.Begin()}, nil }

func (x *simTx) Exec(_ context.Context, stmts ...Stmt) error {
	for _, s := range stmts {
		var err error
		switch {
		case s.Rows != nil || s.Keys != nil:
			err = x.tx.Statement(func(tx *cdcsim.Txn) error { return multiRow(tx, s) })
		case s.Insert != nil:
			_, err = x.tx.Insert(s.Table, cdcsim.Row(s.Insert))
		case s.Delete:
			err = x.tx.Delete(s.Table, s.Key)
		default:
			err = x.tx.Update(s.Table, s.Key, cdcsim.Row(s.Update))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// multiRow runs a statement over several rows inside tx.Statement.
func multiRow(tx *cdcsim.Txn, s Stmt) error {
	for _, r := range s.Rows {
		if _, err := tx.Insert(s.Table, cdcsim.Row(r)); err != nil {
			return err
		}
	}
	for _, k := range s.Keys {
		var err error
		if s.Delete {
			err = tx.Delete(s.Table, k)
		} else {
			err = tx.Update(s.Table, k, cdcsim.Row(s.Update))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *simTx) Commit(context.Context) error {
	_, err := x.tx.Commit()
	return err
}

func (e *simEnv) Exec(ctx context.Context, stmts ...Stmt) error {
	tx, _ := e.Begin(ctx)
	if err := tx.Exec(ctx, stmts...); err != nil {
		tx.(*simTx).tx.Rollback()
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	e.db.Advance(10 * time.Millisecond)
	return e.WaitCaptured(ctx)
}

func (e *simEnv) WaitCaptured(context.Context) error {
	e.db.RunCapture()
	return nil
}

func (e *simEnv) Idle(context.Context) error {
	e.db.Advance(time.Second)
	e.db.Idle()
	return nil
}

func (e *simEnv) Sleep(_ context.Context, d time.Duration) error {
	e.db.Advance(d)
	return nil
}

func (e *simEnv) Cleanup(_ context.Context, instance string, low lsn.LSN) error {
	return e.db.Cleanup(instance, low)
}

var computedRE = regexp.MustCompile(`^\[(\w+)\] \* (\d+)$`)

func (e *simEnv) Backup(context.Context) (any, error) { return e.db.Backup() }
func (e *simEnv) Restore(_ context.Context, b any) error {
	return e.db.Restore(b.(*cdcsim.Backup))
}
func (e *simEnv) LagReplica(_ context.Context, at lsn.LSN, reads int) error {
	e.db.LagReplica(at, reads)
	return nil
}

func (e *simEnv) SetClock(_ context.Context, zone *time.Location, utc time.Time) error {
	e.db.Close()
	e.db = cdcsim.New(cdcsim.Config{Seed: 7, Location: zone, Start: utc, ManualCapture: true})
	return nil
}

func (e *simEnv) DenyChangeTable(_ context.Context, instance string) (bool, error) {
	e.db.DenySelect(instance)
	return true, nil
}

func (e *simEnv) GrantChangeTable(_ context.Context, instance string) error {
	e.db.GrantSelect(instance)
	return nil
}

func (e *simEnv) Alter(_ context.Context, table, ddl string) error {
	f := strings.Fields(ddl)
	var err error
	switch {
	case len(f) == 3 && strings.EqualFold(f[0], "ADD"):
		var c source.Column
		if c, err = ParseColumn(f[1], f[2], true); err == nil {
			_, err = e.db.AddColumn(table, c)
		}
	case len(f) == 3 && strings.EqualFold(f[0], "DROP"):
		_, err = e.db.DropColumn(table, f[2])
	case len(f) == 4 && strings.EqualFold(f[0], "ALTER"):
		var c source.Column
		if c, err = ParseColumn(f[2], f[3], true); err == nil {
			_, err = e.db.AlterColumn(table, c)
		}
	default:
		err = fmt.Errorf("ddl %q: not ADD, DROP COLUMN or ALTER COLUMN", ddl)
	}
	return err
}

func (e *simEnv) DisableCapture(_ context.Context, _, instance string) error {
	return e.db.DisableCapture(instance)
}

func TestContractCDCSim(t *testing.T) {
	Run(t, simHarness{})
}
