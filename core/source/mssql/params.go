package mssql

import (
	"strconv"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// params collects the arguments of one statement and names them in go-mssqldb's
// positional style: the first argument is @p1, the second @p2, and so on. A name may be
// used more than once in the text.
type params struct {
	args []any
}

// add appends v and returns its name.
func (p *params) add(v any) string {
	p.args = append(p.args, v)
	return "@p" + strconv.Itoa(len(p.args))
}

// lsn binds an LSN as its canonical text and converts it on the server with style 1
// (docs/reference/sqlserver-cdc.md §1.2: "0x" + 20 hex digits ⇄ binary(10)).
func (p *params) lsn(l lsn.LSN) string {
	return "CONVERT(binary(10), " + p.add(l.String()) + ", 1)"
}

// lsnOut renders an LSN expression as the 22-character canonical text.
func lsnOut(expr string) string { return "CONVERT(varchar(22), " + expr + ", 1)" }

// zeroLSNLiteral is binary(10) zero, the "none" LSN, as a literal in comparisons.
const zeroLSNLiteral = "0x00000000000000000000"
