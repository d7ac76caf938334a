// Package workload writes an OLTP-like workload into a cdcsim database: inserts, updates,
// deletes and key updates in transactions of configurable size at a configurable rate of
// simulated time, deterministic for a given seed (like the lab's workload.py: every
// transaction mixes operations so all four operation codes appear).
//
//	db := cdcsim.New(cdcsim.Config{Seed: 1})
//	g := workload.New(db, workload.Config{Seed: 1})
//	if err := g.Create(workload.Standard()...); err != nil { ... }
//	if err := g.Step(1000); err != nil { ... } // 1000 transactions
package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// Mix weighs the statement kinds. Zero weights everywhere means DefaultMix.
type Mix struct {
	Insert, Update, Delete, KeyUpdate int
}

// Defaults of Config.
var DefaultMix = Mix{Insert: 50, Update: 30, Delete: 12, KeyUpdate: 8}

const (
	DefaultTxnSize = 4
	DefaultRate    = 10.0
)

// Config tunes a Generator.
type Config struct {
	Seed uint64
	// TxnSize is the most statements per transaction (each has 1..TxnSize);
	// DefaultTxnSize when 0.
	TxnSize int
	// Rate is transactions per simulated second: the clock advances 1/Rate after each one.
	// DefaultRate when 0 (or negative, or NaN).
	Rate float64
	Mix  Mix
	// Tables limits writes to these tables; every created table when empty.
	Tables []string
}

// Generator writes transactions into a DB. It is used by one goroutine.
type Generator struct {
	db     *cdcsim.DB
	cfg    Config
	rng    *rand.Rand
	tables []*genTable
	// Stats counts what was written.
	Stats Stats
}

// Stats counts statements and transactions written.
type Stats struct {
	Transactions, Inserts, Updates, Deletes, KeyUpdates int
	// Last is the commit LSN of the last transaction.
	Last lsn.LSN
}

type genTable struct {
	def  TableDef
	name string
	cols []source.Column
	next int64 // next key counter
}

// New returns a generator writing into db. Its methods refuse a nil db with a
// *source.InvalidArgumentError.
func New(db *cdcsim.DB, cfg Config) *Generator {
	if cfg.TxnSize <= 0 {
		cfg.TxnSize = DefaultTxnSize
	}
	if !(cfg.Rate > 0) {
		cfg.Rate = DefaultRate
	}
	if cfg.Mix == (Mix{}) {
		cfg.Mix = DefaultMix
	}
	return &Generator{db: db, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+0x5eed))}
}

// Create creates the tables and enables CDC on each with the default capture instance
// name (<schema>_<table>). A definition whose Kind does not fit its key is a *DefError,
// refused before the table is created.
func (g *Generator) Create(defs ...TableDef) error {
	if err := g.checkDB(); err != nil {
		return err
	}
	for _, d := range defs {
		if err := checkDef(d); err != nil {
			return err
		}
		if err := g.db.CreateTable(d.Spec); err != nil {
			return fmt.Errorf("create %s: %w", d.Spec.Name, err)
		}
		if _, err := g.db.EnableCapture(d.Spec.Name, cdcsim.CaptureOptions{}); err != nil {
			return fmt.Errorf("enable capture on %s: %w", d.Spec.Name, err)
		}
		if err := g.Adopt(d); err != nil {
			return err
		}
	}
	return nil
}

// Adopt makes the generator write an existing table (created by the caller). A
// definition whose Kind does not fit its key, or whose key is not the table's unique
// index, is a *DefError; a table that does not exist a *cdcsim.TableError.
func (g *Generator) Adopt(d TableDef) error {
	if err := g.checkDB(); err != nil {
		return err
	}
	if err := checkDef(d); err != nil {
		return err
	}
	if err := sameKey(g.db, d); err != nil {
		return err
	}
	cols, err := g.db.Columns(d.Spec.Name)
	if err != nil {
		return err
	}
	n, err := g.db.RowCount(d.Spec.Name)
	if err != nil {
		return err
	}
	g.tables = append(g.tables, &genTable{def: d, name: d.Spec.Name, cols: cols, next: int64(n) + 1})
	return nil
}

// Load inserts n rows into a table in transactions of batch rows, without advancing the
// clock between them (a bulk load). batch < 1 means 1000. A table not created or adopted
// is a *DefError, n < 0 a *source.InvalidArgumentError.
func (g *Generator) Load(table string, n, batch int) error {
	if err := g.checkDB(); err != nil {
		return err
	}
	if n < 0 {
		return &source.InvalidArgumentError{Arg: "n", Reason: "negative"}
	}
	t, err := g.table(table)
	if err != nil {
		return err
	}
	if batch < 1 {
		batch = 1000
	}
	for done := 0; done < n; {
		k := min(batch, n-done)
		l, err := g.db.Exec(func(tx *cdcsim.Txn) error {
			for i := 0; i < k; i++ {
				if _, err := tx.Insert(t.name, g.newRow(t)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("load %s: %w", table, err)
		}
		done += k
		g.Stats.Inserts += k
		g.Stats.Transactions++
		g.Stats.Last = l
	}
	return nil
}

func (g *Generator) table(name string) (*genTable, error) {
	for _, t := range g.tables {
		if strings.EqualFold(t.name, name) {
			return t, nil
		}
	}
	return nil, &DefError{Table: name, Reason: "not created or adopted"}
}

// Step runs n transactions, each of 1..TxnSize statements on tables picked at random, and
// advances the clock by 1/Rate after each. No table to write is a *DefError, n < 0 a
// *source.InvalidArgumentError.
func (g *Generator) Step(n int) error {
	if err := g.checkDB(); err != nil {
		return err
	}
	if n < 0 {
		return &source.InvalidArgumentError{Arg: "n", Reason: "negative"}
	}
	var targets []*genTable
	for _, t := range g.tables {
		if len(g.cfg.Tables) == 0 {
			targets = append(targets, t)
			continue
		}
		for _, name := range g.cfg.Tables {
			if strings.EqualFold(name, t.name) {
				targets = append(targets, t)
			}
		}
	}
	if len(targets) == 0 {
		return &DefError{Table: strings.Join(g.cfg.Tables, ","), Reason: "no tables to write (none created or adopted, or none named in Config.Tables)"}
	}
	gap := time.Duration(float64(time.Second) / g.cfg.Rate)
	for i := 0; i < n; i++ {
		size := 1 + g.rng.IntN(g.cfg.TxnSize)
		tx := g.db.Begin()
		for s := 0; s < size; s++ {
			if err := g.statement(tx, targets[g.rng.IntN(len(targets))]); err != nil {
				tx.Rollback()
				return err
			}
		}
		l, err := tx.Commit()
		if err != nil {
			return err
		}
		g.Stats.Transactions++
		if !l.IsZero() {
			g.Stats.Last = l
		}
		g.db.Advance(gap)
	}
	return nil
}

// statement writes one statement. A row picked for an update or delete that this
// transaction already deleted or moved is skipped (SQL Server would affect no row).
func (g *Generator) statement(tx *cdcsim.Txn, t *genTable) error {
	m := g.cfg.Mix
	total := m.Insert + m.Update + m.Delete + m.KeyUpdate
	r := g.rng.IntN(max(total, 1))
	var key []any
	if r >= m.Insert {
		k, ok, err := g.db.RandomKey(t.name, g.rng.IntN)
		if err != nil {
			return err
		}
		if !ok {
			r = 0 // empty table: insert
		}
		key = k
	}
	var err error
	switch {
	case r < m.Insert:
		_, err = tx.Insert(t.name, g.newRow(t))
		if err == nil {
			g.Stats.Inserts++
		}
	case r < m.Insert+m.Update:
		err = tx.Update(t.name, key, g.someColumns(t))
		if err == nil {
			g.Stats.Updates++
		}
	case r < m.Insert+m.Update+m.Delete:
		err = tx.Delete(t.name, key)
		if err == nil {
			g.Stats.Deletes++
		}
	default:
		set := g.newKey(t)
		if set == nil { // a heap has no key to move
			set = g.someColumns(t)
		}
		err = tx.Update(t.name, key, set)
		if err == nil {
			g.Stats.KeyUpdates++
		}
	}
	var te *cdcsim.TxnError
	if errors.As(err, &te) {
		return nil
	}
	return err
}

// newKey is a fresh key for t as column values (nil for a heap).
func (g *Generator) newKey(t *genTable) cdcsim.Row {
	id := t.next
	t.next++
	switch t.def.Kind {
	case IntKey:
		return cdcsim.Row{t.def.Spec.Key[0]: id}
	case CompositeKey:
		return cdcsim.Row{t.def.Spec.Key[0]: id / 8, t.def.Spec.Key[1]: id % 8}
	case StringKey:
		prefix := []string{"cust", "Cust", "CUST"}[g.rng.IntN(3)]
		return cdcsim.Row{t.def.Spec.Key[0]: fmt.Sprintf("%s-%07d", prefix, id)}
	case GUIDKey:
		return cdcsim.Row{t.def.Spec.Key[0]: g.guid()}
	}
	return nil
}

func (g *Generator) newRow(t *genTable) cdcsim.Row {
	row := g.newKey(t)
	if row == nil {
		row = cdcsim.Row{}
	}
	for _, c := range t.cols {
		if _, isKey := row[c.Name]; isKey || c.Computed {
			continue
		}
		row[c.Name] = g.value(c)
	}
	return row
}

// someColumns sets one or two non-key columns.
func (g *Generator) someColumns(t *genTable) cdcsim.Row {
	set := cdcsim.Row{}
	var nonKey []source.Column
	for _, c := range t.cols {
		isKey := false
		for _, k := range t.def.Spec.Key {
			isKey = isKey || strings.EqualFold(k, c.Name)
		}
		if !isKey && !c.Computed {
			nonKey = append(nonKey, c)
		}
	}
	if len(nonKey) == 0 {
		return set
	}
	for i := 0; i < 1+g.rng.IntN(2); i++ {
		c := nonKey[g.rng.IntN(len(nonKey))]
		set[c.Name] = g.value(c)
	}
	return set
}

func (g *Generator) guid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.rng.IntN(256))
	}
	return fmt.Sprintf("%X-%X-%X-%X-%X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var words = []string{"alpha", "Bravo", "charlie", "DELTA", "echo", "foxtrot", "golf", "hotel", "india", "Juliett", "kilo", "lima"}

// value is a random value of the column's type; nullable columns are NULL one time in ten.
func (g *Generator) value(c source.Column) any {
	if c.Nullable && g.rng.IntN(10) == 0 {
		return nil
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	someTime := base.Add(time.Duration(g.rng.Int64N(int64(300 * 24 * time.Hour))))
	text := func(maxLen int) string {
		s := words[g.rng.IntN(len(words))]
		if g.rng.IntN(3) == 0 {
			s += " " + words[g.rng.IntN(len(words))]
		}
		if maxLen > 0 && len(s) > maxLen {
			s = s[:maxLen]
		}
		return s
	}
	switch c.DataType {
	case "bit":
		return g.rng.IntN(2) == 1
	case "tinyint":
		return g.rng.Int64N(256)
	case "smallint":
		return g.rng.Int64N(65536) - 32768
	case "int":
		return g.rng.Int64N(2_000_000) - 1_000_000
	case "bigint":
		return g.rng.Int64() - (1 << 62)
	case "real", "float":
		return g.rng.NormFloat64() * 1000
	case "decimal", "numeric", "money", "smallmoney":
		return fmt.Sprintf("%d.%04d", g.rng.IntN(100_000)-50_000, g.rng.IntN(10_000))
	case "date", "datetime", "datetime2", "smalldatetime":
		return someTime
	case "datetimeoffset":
		return someTime.In(time.FixedZone("", -3*3600))
	case "time":
		return time.Duration(g.rng.Int64N(int64(24 * time.Hour)))
	case "char", "nchar", "varchar", "nvarchar", "text", "ntext":
		return text(c.MaxLength)
	case "xml":
		return "<e n=\"" + text(0) + "\"/>"
	case "uniqueidentifier":
		return g.guid()
	case "binary", "varbinary", "image", "rowversion", "timestamp":
		n := 8
		if c.MaxLength > 0 && c.MaxLength < n {
			n = c.MaxLength
		}
		b := make([]byte, 1+g.rng.IntN(n))
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return b
	}
	return nil
}

// RunFor runs transactions for d of simulated time at the configured rate (at least one).
func (g *Generator) RunFor(d time.Duration) error {
	return g.Step(max(1, int(d.Seconds()*g.cfg.Rate)))
}
