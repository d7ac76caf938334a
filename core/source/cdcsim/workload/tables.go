package workload

import (
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// KeyKind is the shape of a table's unique key, which decides how new keys are made.
type KeyKind int

// Key shapes.
const (
	IntKey       KeyKind = iota // one int column, new keys counting up
	CompositeKey                // (int, smallint): order and line
	StringKey                   // one nvarchar under a case-insensitive collation, mixed case
	GUIDKey                     // one uniqueidentifier, random
	HeapKey                     // no unique index: rows are named by row id
)

// TableDef is a table the generator can create and write.
type TableDef struct {
	Spec cdcsim.TableSpec
	Kind KeyKind
}

func col(name, typ string, nullable bool) source.Column {
	return source.Column{Name: name, DataType: typ, Nullable: nullable}
}

// Orders is dbo.orders: an int key.
func Orders() TableDef {
	return TableDef{Kind: IntKey, Spec: cdcsim.TableSpec{Name: "orders", Key: []string{"id"}, Columns: []source.Column{
		col("id", "int", false),
		{Name: "customer", DataType: "nvarchar", MaxLength: 20, Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
		{Name: "status", DataType: "varchar", MaxLength: 10, Nullable: true},
		{Name: "created", DataType: "datetime2", DatetimePrecision: 7, Nullable: true},
	}}}
}

// OrderLines is dbo.order_lines: a composite (order_id, line) key.
func OrderLines() TableDef {
	return TableDef{Kind: CompositeKey, Spec: cdcsim.TableSpec{Name: "order_lines", Key: []string{"order_id", "line"}, Columns: []source.Column{
		col("order_id", "int", false),
		col("line", "smallint", false),
		{Name: "sku", DataType: "varchar", MaxLength: 12, Nullable: true},
		col("qty", "int", true),
		{Name: "price", DataType: "money", Nullable: true},
	}}}
}

// Customers is dbo.customers: an nvarchar key under a case-insensitive collation.
func Customers() TableDef {
	return TableDef{Kind: StringKey, Spec: cdcsim.TableSpec{Name: "customers", Key: []string{"code"}, Columns: []source.Column{
		{Name: "code", DataType: "nvarchar", MaxLength: 20, Collation: "SQL_Latin1_General_CP1_CI_AS"},
		{Name: "name", DataType: "nvarchar", MaxLength: 60, Nullable: true},
		{Name: "email", DataType: "varchar", MaxLength: 80, Nullable: true},
		col("active", "bit", true),
	}}}
}

// Sessions is dbo.sessions: a uniqueidentifier key.
func Sessions() TableDef {
	return TableDef{Kind: GUIDKey, Spec: cdcsim.TableSpec{Name: "sessions", Key: []string{"session_id"}, Columns: []source.Column{
		col("session_id", "uniqueidentifier", false),
		{Name: "started", DataType: "datetimeoffset", DatetimePrecision: 7, Nullable: true},
		col("hits", "bigint", true),
	}}}
}

// Events is dbo.events: a heap, no unique index.
func Events() TableDef {
	return TableDef{Kind: HeapKey, Spec: cdcsim.TableSpec{Name: "events", Columns: []source.Column{
		col("kind", "varchar", true),
		{Name: "payload", DataType: "nvarchar", MaxLength: -1, Nullable: true},
		col("at", "datetime", true),
	}}}
}

// AllTypes is dbo.all_types: a bigint key and one column of every SQL Server type the
// bronze mapping supports.
func AllTypes() TableDef {
	return TableDef{Kind: IntKey, Spec: cdcsim.TableSpec{Name: "all_types", Key: []string{"id"}, Columns: []source.Column{
		col("id", "bigint", false),
		col("c_bit", "bit", true),
		col("c_tinyint", "tinyint", true),
		col("c_smallint", "smallint", true),
		col("c_int", "int", true),
		col("c_bigint", "bigint", true),
		col("c_real", "real", true),
		col("c_float", "float", true),
		{Name: "c_decimal", DataType: "decimal", Precision: 38, Scale: 10, Nullable: true},
		{Name: "c_numeric", DataType: "numeric", Precision: 9, Scale: 3, Nullable: true},
		col("c_money", "money", true),
		col("c_smallmoney", "smallmoney", true),
		col("c_date", "date", true),
		col("c_datetime", "datetime", true),
		{Name: "c_datetime2", DataType: "datetime2", DatetimePrecision: 7, Nullable: true},
		col("c_smalldatetime", "smalldatetime", true),
		{Name: "c_datetimeoffset", DataType: "datetimeoffset", DatetimePrecision: 7, Nullable: true},
		{Name: "c_time", DataType: "time", DatetimePrecision: 7, Nullable: true},
		{Name: "c_char", DataType: "char", MaxLength: 10, Nullable: true},
		{Name: "c_varchar", DataType: "varchar", MaxLength: 50, Nullable: true},
		{Name: "c_nchar", DataType: "nchar", MaxLength: 10, Nullable: true},
		{Name: "c_nvarchar", DataType: "nvarchar", MaxLength: -1, Nullable: true},
		col("c_text", "text", true),
		col("c_ntext", "ntext", true),
		col("c_xml", "xml", true),
		col("c_uniqueidentifier", "uniqueidentifier", true),
		{Name: "c_binary", DataType: "binary", MaxLength: 8, Nullable: true},
		{Name: "c_varbinary", DataType: "varbinary", MaxLength: -1, Nullable: true},
		col("c_image", "image", true),
		col("c_rowversion", "rowversion", true),
	}}}
}

// Standard is every table above, in a fixed order.
func Standard() []TableDef {
	return []TableDef{Orders(), OrderLines(), Customers(), Sessions(), Events(), AllTypes()}
}
