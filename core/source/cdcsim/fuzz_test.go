package cdcsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// FuzzRangesTileTable: for any rows of a (case-insensitive string, int) key and any sorted
// bounds, the ranges [nil, b1), [b1, b2), ..., [bn, nil) read every row exactly once, with
// the index path (both key columns) and the scan path (the int column alone).
func FuzzRangesTileTable(f *testing.F) {
	f.Add(uint64(1), uint8(40), uint8(3))
	f.Add(uint64(2), uint8(200), uint8(9))
	f.Add(uint64(3), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, nrows, nbounds uint8) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(seed, seed))
		db := New(Config{Seed: seed})
		name := source.Column{Name: "name", DataType: "varchar", MaxLength: 8, Collation: "Latin1_General_CI_AS"}
		n := source.Column{Name: "n", DataType: "int"}
		v := source.Column{Name: "v", DataType: "int", Nullable: true}
		mustT(t, db.CreateTable(TableSpec{Name: "t", Columns: []source.Column{name, n, v}, Key: []string{"name", "n"}}))
		words := []string{"a", "A", "ab", "AB", "b", "B ", "ba", "z", ""}
		_, err := db.Exec(func(tx *Txn) error {
			for i := 0; i < int(nrows); i++ {
				// Duplicate keys under the CI collation are refused; skip them.
				_, _ = tx.Insert("t", Row{"name": words[rng.IntN(len(words))], "n": rng.IntN(20) - 10, "v": i})
			}
			return nil
		})
		mustT(t, err)
		total, _ := db.RowCount("t")
		for _, keys := range [][]source.Column{{name, n}, {n}} {
			k, _ := db.tables["dbo.t"].keySpec(keys)
			var bounds []source.Key
			for i := 0; i < int(nbounds%12); i++ {
				b := source.Key{words[rng.IntN(len(words))], int64(rng.IntN(24) - 12)}
				bounds = append(bounds, b[len(b)-len(keys):])
			}
			slices.SortFunc(bounds, func(a, b source.Key) int {
				na, _ := k.bound("", a)
				nb, _ := k.bound("", b)
				return k.cmp(na, nb)
			})
			edges := append(append([]source.Key{nil}, bounds...), nil)
			seen := map[string]int{}
			for i := 0; i+1 < len(edges); i++ {
				r, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Name: "t"}, Columns: []source.Column{
					{Name: "name", DataType: "varchar", Present: true}, {Name: "n", DataType: "int", Present: true}, {Name: "v", DataType: "int", Present: true}},
					Keys: keys, Range: source.KeyRange{Lo: edges[i], Hi: edges[i+1]}})
				mustT(t, err)
				for _, row := range readAll(t, r) {
					seen[fmt.Sprint(row["v"])]++
				}
			}
			if len(seen) != total {
				t.Fatalf("keys %v bounds %v: %d rows read, table has %d", keys, bounds, len(seen), total)
			}
			for id, c := range seen {
				if c != 1 {
					t.Fatalf("keys %v bounds %v: row %s read %d times", keys, bounds, id, c)
				}
			}
		}
	})
}
