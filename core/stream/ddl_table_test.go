package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// ddlKind is one row of the DDL table of docs/stream.md "Schema changes": the DDL, run on
// the source between two drains, and what the stream does under schemaChangePolicy
// "classify" (under "fail" every recorded DDL stops the batch the same way).
type ddlKind struct {
	name string
	// ddl runs the DDL; refused kinds expect an error from it and nothing recorded.
	ddl     func(e *env) error
	refused bool
	// command is a part of the recorded DDL statement.
	command string
	// classify checks the outcome of the drain after the DDL under "classify"; err is the
	// first invocation's error.
	classify func(t *testing.T, e *env, err error)
}

func ddlKinds() []ddlKind {
	schemaChanges := func(t *testing.T, e *env, want int) {
		t.Helper()
		n := 0
		for _, r := range e.factsRows() {
			if r.Event == facts.EventSchemaChange {
				n++
			}
		}
		if n != want {
			t.Errorf("%d schema_change rows, want %d", n, want)
		}
	}
	goesOn := func(t *testing.T, e *env, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("classify: %v, want the stream to go on", err)
		}
		e.mustDrain(Options{})
		e.assertConverged()
		schemaChanges(t, e, 1)
		if !strings.Contains(e.logs.String(), "DDL inside the batch") {
			t.Errorf("no warning logged for the DDL")
		}
	}
	return []ddlKind{{
		name:    "add column",
		command: "ADD [region]",
		ddl: func(e *env) error {
			_, err := e.db.AddColumn("orders", source.Column{Name: "region", DataType: "varchar", MaxLength: 10, Nullable: true})
			return err
		},
		classify: func(t *testing.T, e *env, err error) {
			goesOn(t, e, err)
			// The new column arrives only with a new capture instance.
			if st, _ := e.bronzeState(); columnIndex(st.Columns, "region") >= 0 {
				t.Errorf("bronze gained region without a new capture instance: %v", st.Columns)
			}
		},
	}, {
		name:    "drop captured column",
		command: "DROP COLUMN [note]",
		ddl: func(e *env) error {
			_, err := e.db.DropColumn("orders", "note")
			return err
		},
		classify: func(t *testing.T, e *env, err error) {
			goesOn(t, e, err)
			st, _ := e.bronzeState()
			i := columnIndex(st.Columns, "note")
			if i < 0 || st.Rows["1"][i] != "n1" || st.Rows["2"][i] != "NULL" {
				t.Errorf("bronze keeps note, NULL from the drop on: %v %v", st.Columns, st.Rows)
			}
			// A snapshot after the drop reads NULL for the column the instance still captures.
			off, err := snapshot.Run(t.Context(), e.standaloneDeps())
			if err != nil {
				t.Fatalf("snapshot after the drop: %v", err)
			}
			// Rebuilt from that snapshot, every row's note is NULL (row 1's was n1).
			st, lg := e.bronzeState()
			if lg.Newest != off.LSN.String() || len(st.Rows) != 2 || st.Rows["1"][i] != "NULL" || st.Rows["2"][i] != "NULL" {
				t.Errorf("rebuilt from the snapshot at %s (newest %s): %v", off.LSN, lg.Newest, st.Rows)
			}
		},
	}, {
		name:    "alter type to one bronze holds (narrowing)",
		command: "ALTER COLUMN [amount] decimal NULL",
		ddl: func(e *env) error {
			_, err := e.db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 10, Scale: 2, Nullable: true})
			return err
		},
		classify: goesOn,
	}, {
		name:    "alter type to one bronze does not hold (widening)",
		command: "ALTER COLUMN [amount] decimal NULL",
		ddl: func(e *env) error {
			_, err := e.db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 20, Scale: 4, Nullable: true})
			return err
		},
		classify: func(t *testing.T, e *env, err error) {
			var sc *SchemaChangedError
			if !errors.As(err, &sc) || sc.Kind != SchemaTypeChanged || sc.Column != "amount" || !sc.Widenable ||
				!strings.Contains(err.Error(), "decimal(18, 2)") || !strings.Contains(err.Error(), "new bronze table") {
				t.Fatalf("classify: %v, want SchemaChangedError (type_changed) on amount with the advice", err)
			}
			if _, lg := e.bronzeState(); lg.ChangeRows() != 1 {
				t.Errorf("bronze holds %d change rows: the batch must fail at planning, before reading", lg.ChangeRows())
			}
			if !strings.Contains(err.Error(), deltalog.PropEnableTypeWidening) {
				t.Errorf("the advice %q does not name %s (Delta allows this widening)", err, deltalog.PropEnableTypeWidening)
			}
			// The rerun fails the same way (nothing was checkpointed past the DDL).
			if _, err := e.run(Options{}); !errors.As(err, &sc) {
				t.Errorf("rerun: %v", err)
			}
			// With the property the advice names, the stream widens bronze's column and
			// goes on.
			e.setBronzeProperty(deltalog.PropEnableTypeWidening, "true")
			_, err = e.run(Options{})
			goesOn(t, e, err)
			if typ := e.bronzeColumnType("amount"); typ != "decimal(20,4)" {
				t.Errorf("bronze amount is %s after the widening, want decimal(20,4)", typ)
			}
		},
	}, {
		name:    "other DDL (NOT NULL)",
		command: "ALTER COLUMN [amount] decimal NOT NULL",
		ddl: func(e *env) error {
			_, err := e.db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2})
			return err
		},
		classify: goesOn,
	}, {
		name:    "rename captured column",
		refused: true,
		ddl:     func(e *env) error { return e.db.RenameColumn("orders", "note", "remark") },
	}, {
		name:    "truncate",
		refused: true,
		ddl:     func(e *env) error { return e.db.Truncate("orders") },
	}, {
		name:    "alter key column",
		refused: true,
		ddl: func(e *env) error {
			_, err := e.db.AlterColumn("orders", source.Column{Name: "id", DataType: "bigint"})
			return err
		},
	}}
}

// Every row of the DDL table (docs/stream.md "Schema changes"), under both values of
// schemaChangePolicy: "classify" goes on with a schema_change row, or stops a type bronze
// cannot hold at planning; "fail" stops any batch holding DDL before reading it, again on
// the rerun, and goes on once run with "classify". DDL SQL Server refuses on a CDC table
// changes nothing.
func TestDDLTableBothPolicies(t *testing.T) {
	for i, k := range ddlKinds() {
		for _, policy := range []string{config.SchemaChangeClassify, config.SchemaChangeFail} {
			t.Run(k.name+"/"+policy, func(t *testing.T) {
				e := newEnv(t, cdcsim.Config{Seed: uint64(300 + i)})
				e.spec.Options.SchemaChangePolicy = policy
				e.exec(insert(1, 1))
				e.mustDrain(Options{})
				err := k.ddl(e)
				e.exec(func(tx *cdcsim.Txn) error {
					_, err := tx.Insert("orders", cdcsim.Row{"id": 2, "amount": 2})
					return err
				})
				if k.refused {
					if err == nil {
						t.Fatalf("%s on a CDC table succeeded; SQL Server refuses it", k.name)
					}
					e.mustDrain(Options{})
					e.assertConverged()
					for _, r := range e.factsRows() {
						if r.Event == facts.EventSchemaChange {
							t.Errorf("a refused DDL left a schema_change row %+v", r)
						}
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				_, err = e.run(Options{})
				if policy == config.SchemaChangeClassify {
					k.classify(t, e, err)
					return
				}
				var sc *SchemaChangedError
				if !errors.As(err, &sc) || sc.Kind != SchemaDDLPolicy || sc.At.IsZero() || !strings.Contains(sc.Command, k.command) ||
					!strings.Contains(err.Error(), `schemaChangePolicy "classify"`) {
					t.Fatalf("fail policy: %v, want SchemaChangedError (ddl_policy) naming %q", err, k.command)
				}
				if _, lg := e.bronzeState(); lg.ChangeRows() != 1 {
					t.Errorf("bronze holds %d change rows: the batch must not be read", lg.ChangeRows())
				}
				if _, err := e.run(Options{}); !errors.As(err, &sc) || sc.Kind != SchemaDDLPolicy {
					t.Errorf("rerun under fail: %v, want the same error", err)
				}
				// The advice: run once with classify.
				e.spec.Options.SchemaChangePolicy = config.SchemaChangeClassify
				_, err = e.run(Options{})
				k.classify(t, e, err)
			})
		}
	}
}

// columnIndex is the index of name in cols, -1 when absent.
func columnIndex(cols []string, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}
