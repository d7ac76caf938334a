package deltalog

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The add actions of a checkpoint are decoded here straight from their Parquet leaf
// columns into Adds, not through Arrow arrays: a table's open reads every live file's
// add row, and building an Arrow array per leaf (then copying each row out of it) cost
// most of a cold open (docs/performance.md § Opening a table). Only the fields replay
// keeps are read: path, size, modificationTime, dataChange, partitionValues, tags,
// deletionVector, baseRowId, defaultRowCommitVersion, clusteringProvider
// (docs/reference/delta-protocol.md §7.2). The stats are left to decodeStats (lazyStats).

// leafValues is one leaf column of one row group, decoded: its definition levels, its
// repetition levels when it is repeated (a map's key or value), and its non-null values
// in order, in the one of ints, bools or strs that fits its physical type. The strings
// are all one string, value k being strs[ends[k-1]:ends[k]] (one allocation for the
// column chunk, not one per value).
type leafValues struct {
	maxDef int16
	defs   []int16
	reps   []int16
	ints   []int64
	bools  []bool
	strs   string
	ends   []int32
}

// leafBatch is how many levels readLeaf asks the column reader for at once.
const leafBatch = 4096

// readLeaf decodes leaf column col of row group rg.
func readLeaf(rg *file.RowGroupReader, col int, desc *schema.Column) (*leafValues, error) {
	cc, err := rg.MetaData().ColumnChunk(col)
	if err != nil {
		return nil, err
	}
	n := cc.NumValues() // levels, nulls included
	cr, err := rg.Column(col)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	lv := &leafValues{maxDef: desc.MaxDefinitionLevel(), defs: make([]int16, n)}
	if desc.MaxRepetitionLevel() > 0 {
		lv.reps = make([]int16, n)
	}
	reps := func(pos int64) []int16 {
		if lv.reps == nil {
			return nil
		}
		return lv.reps[pos:]
	}
	var pos int64
	read := func(step func(batch int64) (int64, error)) error {
		for pos < n {
			got, err := step(min(n-pos, leafBatch))
			if err != nil {
				return err
			}
			if got == 0 {
				break
			}
			pos += got
		}
		if pos != n {
			return fmt.Errorf("column %s: %d of %d levels", desc.Path(), pos, n)
		}
		return nil
	}
	switch r := cr.(type) {
	case *file.ByteArrayColumnChunkReader:
		vals := make([]parquet.ByteArray, min(n, leafBatch))
		var sb strings.Builder
		sb.Grow(int(min(cc.TotalUncompressedSize(), 1<<30)))
		lv.ends = make([]int32, 0, n)
		err = read(func(batch int64) (int64, error) {
			// In-page values alias the page buffer: copied at once, before the next page.
			got, nv, err := r.ReadBatchInPage(batch, vals, lv.defs[pos:], reps(pos))
			for _, v := range vals[:nv] {
				sb.Write(v)
				lv.ends = append(lv.ends, int32(sb.Len()))
			}
			if sb.Len() > math.MaxInt32 {
				return 0, fmt.Errorf("over 2 GiB of values in one row group")
			}
			return got, err
		})
		lv.strs = sb.String()
	case *file.Int64ColumnChunkReader:
		lv.ints = make([]int64, n)
		nv := 0
		err = read(func(batch int64) (int64, error) {
			got, k, err := r.ReadBatchInPage(batch, lv.ints[nv:], lv.defs[pos:], reps(pos))
			nv += k
			return got, err
		})
		lv.ints = lv.ints[:nv]
	case *file.Int32ColumnChunkReader:
		buf := make([]int32, min(n, leafBatch))
		lv.ints = make([]int64, 0, n)
		err = read(func(batch int64) (int64, error) {
			got, k, err := r.ReadBatchInPage(batch, buf, lv.defs[pos:], reps(pos))
			for _, v := range buf[:k] {
				lv.ints = append(lv.ints, int64(v))
			}
			return got, err
		})
	case *file.BooleanColumnChunkReader:
		lv.bools = make([]bool, n)
		nv := 0
		err = read(func(batch int64) (int64, error) {
			got, k, err := r.ReadBatchInPage(batch, lv.bools[nv:], lv.defs[pos:], reps(pos))
			nv += k
			return got, err
		})
		lv.bools = lv.bools[:nv]
	default:
		return nil, fmt.Errorf("column %s: unexpected physical type %s", desc.Path(), desc.PhysicalType())
	}
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", desc.Path(), err)
	}
	return lv, nil
}

// allNull reports whether the column chunk statistics of leaf col in row group rg of the
// file whose footer is md say every value is null (false without statistics).
func allNull(md *metadata.FileMetaData, rg, col int) bool {
	nulls, ok := chunkNullCount(md, rg, col)
	return ok && nulls == md.RowGroups[rg].Columns[col].MetaData.NumValues
}

// chunkNullCount is the null count of leaf col's column chunk in row group rg of the file
// whose footer is md, as arrow-go's ColumnChunkMetaData.Statistics gives it (ok false
// where that gives none: no statistics, an unknown sort order, or statistics it does not
// trust from the file's writer), read from the footer's Thrift struct as it is. Building
// the Statistics object made a value encoder and its buffer for every leaf asked about
// (a checkpoint has ~50 a row group), most of what a checkpoint's decodes allocated
// besides the values (docs/performance.md § Maintenance that does not grow with age,
// follow-up "Tombstones decoded by what reads them"). Whether arrow-go trusts a writer's
// statistics can depend on their min and max only for writers older than parquet-mr 1.10
// or parquet-cpp 1.3 (AppVersion.HasCorrectStatistics, where equal min and max make them
// trusted); for those the Statistics object is built as before.
func chunkNullCount(md *metadata.FileMetaData, rg, col int) (int64, bool) {
	if col >= len(md.RowGroups[rg].Columns) {
		return 0, false
	}
	c := md.RowGroups[rg].Columns[col]
	if c.MetaData == nil || c.MetaData.Statistics == nil {
		return 0, false
	}
	desc := md.Schema.Column(col)
	if desc.SortOrder() == schema.SortUNKNOWN {
		return 0, false
	}
	// Trusted without min and max is trusted whatever they are: they only ever turn a
	// refusal into trust.
	if !md.WriterVersion().HasCorrectStatistics(desc.PhysicalType(), desc.LogicalType(), metadata.EncodedStatistics{}, desc.SortOrder()) {
		cc, err := md.RowGroup(rg).ColumnChunk(col)
		if err != nil {
			return 0, false
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasNullCount() {
			return 0, false
		}
		return st.NullCount(), true
	}
	if c.MetaData.Statistics.NullCount == nil {
		return 0, false
	}
	return *c.MetaData.Statistics.NullCount, true
}

// defLevelAt is the definition level at which the node at depth d of desc's path (0: the
// top-level column) is present: the optional and repeated nodes down to it.
func defLevelAt(desc *schema.Column, d int) int16 {
	var nodes []schema.Node
	for n := desc.SchemaNode(); n != nil && n.Parent() != nil; n = n.Parent() {
		nodes = append(nodes, n)
	}
	// nodes runs from the leaf up to the top-level column.
	var lvl int16
	for i := len(nodes) - 1; i >= len(nodes)-1-d && i >= 0; i-- {
		if nodes[i].RepetitionType() != parquet.Repetitions.Required {
			lvl++
		}
	}
	return lvl
}

// repeatedDepth is the depth of the repeated node on desc's path (a map's key_value
// group), or -1.
func repeatedDepth(desc *schema.Column) int {
	var nodes []schema.Node
	for n := desc.SchemaNode(); n != nil && n.Parent() != nil; n = n.Parent() {
		nodes = append(nodes, n)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i].RepetitionType() == parquet.Repetitions.Repeated {
			return len(nodes) - 1 - i
		}
	}
	return -1
}

// actionFields are the fields of one action (a top-level checkpoint column) that its
// decode reads from their leaves, by their names under the action: the non-repeated ones
// (scalars: "path"; structs: the fields of a struct field, "deletionVector" → "offset"),
// and the map<string,string> ones ("partitionValues", whose leaves are its key and
// value). A scalar's leaves are named by their path under the action joined by "."
// ("deletionVector.offset").
type actionFields struct {
	action  string
	scalars map[string]bool
	structs map[string]map[string]bool
	maps    map[string]bool
}

// dvLeaves are the deletionVector fields decodeDVs reads.
var dvLeaves = map[string]bool{"storageType": true, "pathOrInlineDv": true, "offset": true, "sizeInBytes": true, "cardinality": true}

// addFields are the add fields an open reads (docs/reference/delta-protocol.md §7.2).
var addFields = actionFields{
	action: "add",
	scalars: map[string]bool{
		"path": true, "size": true, "modificationTime": true, "dataChange": true, "baseRowId": true,
		"defaultRowCommitVersion": true, "clusteringProvider": true,
	},
	structs: map[string]map[string]bool{"deletionVector": dvLeaves},
	maps:    map[string]bool{"partitionValues": true, "tags": true},
}

// leaf reports whether leaf path p is one of f's fields (ok), and whether it is a map's
// key or value.
func (f *actionFields) leaf(p []string) (isMap, ok bool) {
	switch {
	case len(p) < 2 || p[0] != f.action:
		return false, false
	case f.maps[p[1]]:
		last := p[len(p)-1]
		return true, len(p) >= 3 && (last == "key" || last == "value")
	case len(p) == 2:
		return false, f.scalars[p[1]]
	}
	return false, len(p) == 3 && f.structs[p[1]][p[2]]
}

// isAddLeaf reports whether the open's add decoder reads leaf path p.
func isAddLeaf(p []string) bool {
	_, ok := addFields.leaf(p)
	return ok
}

// strMapLeaves is a map<string,string> field's two leaves (an add's or a remove's).
type strMapLeaves struct {
	keys, vals *leafValues
	entryDef   int16 // level at which a map entry is present
}

// actionLeaves are the leaves of one action's fields in one row group, decoded
// (actionLeaves.read), for decodeAdds and decodeRemoveLeaves to set into their actions.
type actionLeaves struct {
	scalars map[string]*leafValues   // the non-repeated leaves, one level a row, by their name (actionFields)
	maps    map[string]*strMapLeaves // the map fields, by name
	// actionDef is the level at which the action is present (its path leaf defined), -1
	// when path was not read; dvDef the level at which its deletionVector is, -1 when no
	// leaf of it was read.
	actionDef, dvDef int16
	rows             int // the row group's
}

// read decodes into l, from row group rg of pf, the leaves among leaves (nil:
// every leaf of the file) of the fields of f whose name under the action (its first)
// want selects (nil: all of them). A leaf other than path whose column chunk statistics
// say it is all null is not read: its field reads as its zero value. l's maps are the
// caller's, to fill (made where they can stay on its stack).
func (l *actionLeaves) read(pf *file.Reader, rg int, leaves []int, f *actionFields, want func(field string) bool) error {
	sc := pf.MetaData().Schema
	rgr := pf.RowGroup(rg)
	rows := int(rgr.NumRows())
	l.actionDef, l.dvDef, l.rows = -1, -1, rows
	n := len(leaves)
	if leaves == nil {
		n = sc.NumColumns()
	}
	for i := range n {
		leaf := i
		if leaves != nil {
			leaf = leaves[i]
		}
		desc := sc.Column(leaf)
		p := desc.ColumnPath()
		isMap, ok := f.leaf(p)
		if !ok || want != nil && !want(p[1]) || p[1] != "path" && allNull(pf.MetaData(), rg, leaf) {
			continue
		}
		lv, err := readLeaf(rgr, leaf, desc)
		if err != nil {
			return err
		}
		if isMap {
			d := repeatedDepth(desc)
			if d < 0 || desc.MaxRepetitionLevel() != 1 {
				return fmt.Errorf("column %s is not a map", desc.Path())
			}
			m := l.maps[p[1]]
			if m == nil {
				m = &strMapLeaves{entryDef: defLevelAt(desc, d)}
				l.maps[p[1]] = m
			}
			if p[len(p)-1] == "key" {
				m.keys = lv
			} else {
				m.vals = lv
			}
			continue
		}
		if len(lv.defs) != rows {
			return fmt.Errorf("column %s has %d levels for %d rows", desc.Path(), len(lv.defs), rows)
		}
		name := strings.Join(p[1:], ".")
		l.scalars[name] = lv
		switch {
		case name == "path":
			l.actionDef = defLevelAt(desc, 0)
		case p[1] == "deletionVector":
			l.dvDef = defLevelAt(desc, 1)
		}
	}
	return nil
}

// actionRows is one entry per row of a row group whose path leaf is path: a new T for a
// row where the action is present (defined at level def or deeper), nil for another. The
// Ts of a group are one allocation.
func actionRows[T any](path *leafValues, def int16) []*T {
	out := make([]*T, len(path.defs))
	n := 0
	for _, d := range path.defs {
		if d >= def {
			n++
		}
	}
	slab := make([]T, n)
	for r, d := range path.defs {
		if d >= def {
			out[r] = &slab[0]
			slab = slab[1:]
		}
	}
	return out
}

// decodeAdds decodes the add rows of row group rg from the leaf columns leaves (those of
// the add fields addFields names; others are ignored). It returns one entry per row of
// the group: the row's Add, nil for a row that is not an add. The Adds of a group are
// one allocation.
func decodeAdds(pf *file.Reader, rg int, leaves []int) ([]*Add, error) {
	l := actionLeaves{scalars: map[string]*leafValues{}, maps: map[string]*strMapLeaves{}}
	if err := l.read(pf, rg, leaves, &addFields, nil); err != nil {
		return nil, err
	}
	path := l.scalars["path"]
	if path == nil {
		return nil, nil // no add.path: no add rows
	}
	out := actionRows[Add](path, l.actionDef)
	fields := []struct {
		name string
		set  func(a *Add, v *leafValues, k int)
	}{
		{"path", func(a *Add, v *leafValues, k int) { a.Path = v.str(k) }},
		{"size", func(a *Add, v *leafValues, k int) { a.Size = v.int(k) }},
		{"modificationTime", func(a *Add, v *leafValues, k int) { a.ModificationTime = v.int(k) }},
		{"dataChange", func(a *Add, v *leafValues, k int) { a.DataChange = v.boolean(k) }},
		{"clusteringProvider", func(a *Add, v *leafValues, k int) { a.ClusteringProvider = v.str(k) }},
		{"baseRowId", func(a *Add, v *leafValues, k int) { x := v.int(k); a.BaseRowID = &x }},
		{"defaultRowCommitVersion", func(a *Add, v *leafValues, k int) { x := v.int(k); a.DefaultRowCommitVersion = &x }},
	}
	for _, f := range fields {
		if v := l.scalars[f.name]; v != nil {
			eachRow(v, out, f.set)
		}
	}
	if l.dvDef >= 0 {
		decodeDVs(l.scalars, l.dvDef, out, func(a *Add) **DeletionVector { return &a.DeletionVector })
	}
	for name, m := range l.maps {
		set := func(a *Add, kv map[string]string) { a.PartitionValues = kv }
		if name == "tags" {
			set = func(a *Add, kv map[string]string) { a.Tags = kv }
		}
		if err := mapRows(m, out, set); err != nil {
			return nil, fmt.Errorf("add.%s: %w", name, err)
		}
	}
	return out, nil
}

// decodeDVs sets the deletion vector (the field dv points at) of every row of out that
// is an action (an add, or a remove) whose deletionVector struct is present (defined at
// level dvDef or deeper in any of its leaves).
func decodeDVs[T any](scalars map[string]*leafValues, dvDef int16, out []*T, dv func(*T) **DeletionVector) {
	var first *leafValues
	for _, f := range []string{"storageType", "pathOrInlineDv", "sizeInBytes", "cardinality", "offset"} {
		if v := scalars["deletionVector."+f]; v != nil {
			first = v
			break
		}
	}
	if first == nil {
		return
	}
	for r, d := range first.defs {
		if out[r] != nil && d >= dvDef {
			*dv(out[r]) = &DeletionVector{}
		}
	}
	set := map[string]func(dv *DeletionVector, v *leafValues, k int){
		"storageType":    func(dv *DeletionVector, v *leafValues, k int) { dv.StorageType = v.str(k) },
		"pathOrInlineDv": func(dv *DeletionVector, v *leafValues, k int) { dv.PathOrInlineDv = v.str(k) },
		"sizeInBytes":    func(dv *DeletionVector, v *leafValues, k int) { dv.SizeInBytes = int32(v.int(k)) },
		"cardinality":    func(dv *DeletionVector, v *leafValues, k int) { dv.Cardinality = v.int(k) },
		"offset": func(dv *DeletionVector, v *leafValues, k int) {
			o := int32(v.int(k))
			dv.Offset = &o
		},
	}
	for f, fn := range set {
		if v := scalars["deletionVector."+f]; v != nil {
			eachRow(v, out, func(a *T, v *leafValues, k int) {
				if d := *dv(a); d != nil {
					fn(d, v, k)
				}
			})
		}
	}
}

// eachRow calls set for every row of out that is an action (not nil) and has a value in v
// (a non-repeated leaf: one level per row), with the index of that value.
func eachRow[T any](v *leafValues, out []*T, set func(a *T, v *leafValues, k int)) {
	k := 0
	for r, d := range v.defs {
		if d != v.maxDef {
			continue
		}
		if out[r] != nil {
			set(out[r], v, k)
		}
		k++
	}
}

func (v *leafValues) str(k int) string {
	if k >= len(v.ends) {
		return ""
	}
	start := int32(0)
	if k > 0 {
		start = v.ends[k-1]
	}
	return v.strs[start:v.ends[k]]
}

func (v *leafValues) int(k int) int64 {
	if k < len(v.ints) {
		return v.ints[k]
	}
	return 0
}

func (v *leafValues) boolean(k int) bool { return k < len(v.bools) && v.bools[k] }

// mapRows builds the map of every row of out that is an action (not nil) with at least
// one entry (an empty or null map stays nil) and hands it to set. A null value reads as
// "" (docs/reference/delta-protocol.md §3: empty means null).
func mapRows[T any](m *strMapLeaves, out []*T, set func(a *T, kv map[string]string)) error {
	if m.keys == nil {
		return nil
	}
	keys, vals := m.keys, m.vals
	if vals != nil && len(vals.defs) != len(keys.defs) {
		return fmt.Errorf("%d keys, %d values", len(keys.defs), len(vals.defs))
	}
	n := len(keys.defs)
	row := -1
	kc, vc := 0, 0
	for j := 0; j < n; {
		if keys.reps[j] == 0 {
			row++
		}
		if row < 0 || row >= len(out) {
			return fmt.Errorf("levels do not match the row group's %d rows", len(out))
		}
		end := j + 1
		for end < n && keys.reps[end] != 0 {
			end++
		}
		var kv map[string]string
		if keys.defs[j] >= m.entryDef && out[row] != nil {
			kv = make(map[string]string, end-j)
		}
		for ; j < end; j++ {
			var k, v string
			if keys.defs[j] == keys.maxDef {
				k = keys.str(kc)
				kc++
			}
			if vals != nil && vals.defs[j] == vals.maxDef {
				v = vals.str(vc)
				vc++
			}
			if kv != nil && keys.defs[j] >= m.entryDef {
				kv[k] = v
			}
		}
		if kv != nil {
			set(out[row], kv)
		}
	}
	return nil
}

// rowsBefore is one past the last row of row group rg in which any of the top-level
// columns of leaves has a value (0 when none has), read from the levels of one leaf of
// each: in a group of adds, the few other actions (protocol, metaData, txns) are its
// first rows, and decoding those columns through Arrow for every row of the group cost as
// much as the adds.
func rowsBefore(pf *file.Reader, rg int, leaves []int) (int, error) {
	sc := pf.MetaData().Schema
	rgr := pf.RowGroup(rg)
	seen := map[string]bool{}
	last := -1
	for _, leaf := range leaves {
		desc := sc.Column(leaf)
		top := desc.ColumnPath()[0]
		if seen[top] {
			continue
		}
		seen[top] = true
		lv, err := readLeaf(rgr, leaf, desc)
		if err != nil {
			return 0, err
		}
		topDef := defLevelAt(desc, 0)
		row := -1
		for j, d := range lv.defs {
			if lv.reps == nil || lv.reps[j] == 0 {
				row++
			}
			if d >= topDef {
				last = max(last, row)
			}
		}
	}
	return last + 1, nil
}
