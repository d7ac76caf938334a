package bronze

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// TestBadInputIsTypedError: every exported function of bronze, given input outside its
// contract, returns its typed error and never panics: unmappable and malformed types,
// colliding names, records that do not fit the schema, and nil schemas or records.
func TestBadInputIsTypedError(t *testing.T) {
	isUnsupported := func(err error) bool { var e *UnsupportedTypeError; return errors.As(err, &e) }
	isCollision := func(err error) bool { var e *ColumnCollisionError; return errors.As(err, &e) }
	isMismatch := func(err error) bool { var e *RecordMismatchError; return errors.As(err, &e) }
	isInvalid := func(err error) bool { var e *source.InvalidArgumentError; return errors.As(err, &e) }
	id := source.Column{Name: "id", DataType: "int"}
	schema, err := Schema([]source.Column{id})
	if err != nil {
		t.Fatal(err)
	}
	changeSchema, err := ChangeSchema([]source.Column{id})
	if err != nil {
		t.Fatal(err)
	}
	// A change record whose id is a string, not the schema's int32.
	wrongType, err := ChangeSchema([]source.Column{{Name: "id", DataType: "varchar"}})
	if err != nil {
		t.Fatal(err)
	}
	wrong := buildRecord(t, wrongType, [][]any{{"0x01", nil, 2, 0, nil, "x"}})
	defer wrong.Release()
	// A change record lacking _seqval.
	noSeq := buildRecord(t, arrow.NewSchema([]arrow.Field{
		{Name: ColStartLSN, Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil), [][]any{{"0x01"}})
	defer noSeq.Release()
	// A table record with a column the bronze schema lacks.
	extra := buildRecord(t, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ghost", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil), [][]any{{1, 2}})
	defer extra.Release()
	good := buildRecord(t, changeSchema, [][]any{{"0x01", nil, 2, 0, nil, 1}})
	defer good.Release()
	st := SnapshotStamp{CaptureInstance: "ci", LSN: lsn.MustParse("0x01"), Snapshot: lsn.MustParse("0x01")}
	cases := []struct {
		name string
		want func(error) bool
		fn   func() error
	}{
		{"ArrowType empty type", isUnsupported, func() error { _, err := ArrowType(source.Column{Name: "c"}); return err }},
		{"ArrowType cursor", isUnsupported, func() error { _, err := ArrowType(source.Column{Name: "c", DataType: "cursor"}); return err }},
		{"ArrowType vector", isUnsupported, func() error { _, err := ArrowType(source.Column{Name: "c", DataType: "VECTOR"}); return err }},
		{"ArrowType json", isUnsupported, func() error { _, err := ArrowType(source.Column{Name: "c", DataType: "json"}); return err }},
		{"ArrowType decimal(0,0)", isUnsupported, func() error { _, err := ArrowType(source.Column{Name: "c", DataType: "decimal"}); return err }},
		{"ArrowType decimal(39,2)", isUnsupported, func() error {
			_, err := ArrowType(source.Column{Name: "c", DataType: "decimal", Precision: 39, Scale: 2})
			return err
		}},
		{"ArrowType decimal(10,-1)", isUnsupported, func() error {
			_, err := ArrowType(source.Column{Name: "c", DataType: "numeric", Precision: 10, Scale: -1})
			return err
		}},
		{"ArrowType decimal(5,6)", isUnsupported, func() error {
			_, err := ArrowType(source.Column{Name: "c", DataType: "decimal", Precision: 5, Scale: 6})
			return err
		}},
		{"ArrowType int with arguments", isUnsupported, func() error { _, err := ArrowType(source.Column{Name: "c", DataType: "int(4)"}); return err }},
		{"Schema metadata name", isCollision, func() error { _, err := Schema([]source.Column{{Name: "_COMMIT_TS", DataType: "int"}}); return err }},
		{"TableSchema duplicate name", isCollision, func() error {
			_, err := TableSchema([]source.Column{id, {Name: "ID", DataType: "bigint"}})
			return err
		}},
		{"ChangeSchema both problems", func(err error) bool { return isCollision(err) && isUnsupported(err) }, func() error {
			_, err := ChangeSchema([]source.Column{{Name: "_batch_id", DataType: "int"}, {Name: "g", DataType: "vector"}})
			return err
		}},
		{"ChangeRecord type differs", isMismatch, func() error { _, err := ChangeRecord(schema, wrong, "ci", 1); return err }},
		{"ChangeRecord lacks _seqval", isMismatch, func() error { _, err := ChangeRecord(schema, noSeq, "ci", 1); return err }},
		{"SnapshotRecord extra column", isMismatch, func() error { _, err := SnapshotRecord(schema, extra, st); return err }},
		{"ChangeRecord nil schema", isInvalid, func() error { _, err := ChangeRecord(nil, good, "ci", 1); return err }},
		{"ChangeRecord nil record", isInvalid, func() error { _, err := ChangeRecord(schema, nil, "ci", 1); return err }},
		{"SnapshotRecord nil schema", isInvalid, func() error { _, err := SnapshotRecord(nil, extra, st); return err }},
		{"SnapshotRecord nil record", isInvalid, func() error { _, err := SnapshotRecord(schema, nil, st); return err }},
	}
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", c.name, p)
				}
			}()
			return c.fn()
		}()
		if !c.want(err) {
			t.Errorf("%s: got %T %v, want the typed error", c.name, err, err)
		}
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("CapturedFields(nil): panic: %v", p)
			}
		}()
		if f := CapturedFields(nil); len(f) != 0 {
			t.Errorf("CapturedFields(nil) = %v", f)
		}
	}()
}
