package bronze

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// checkInputs refuses a nil schema or record with a *source.InvalidArgumentError.
func checkInputs(schema *arrow.Schema, rec arrow.RecordBatch) error {
	if schema == nil {
		return &source.InvalidArgumentError{Arg: "schema", Reason: "nil"}
	}
	if rec == nil {
		return &source.InvalidArgumentError{Arg: "record", Reason: "nil"}
	}
	return nil
}
