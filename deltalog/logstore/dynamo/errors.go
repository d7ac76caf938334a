package dynamo

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

// PreviousCommitMissingError: entry Version is missing or complete, yet
// _delta_log/<Version:020>.json does not exist, so committing Version+1 would leave a gap
// (Spark: "previous commit … doesn't exist on the file system but does in the external log
// store").
type PreviousCommitMissingError struct {
	TablePath string
	Version   int64
}

// Is makes the error match logstore.ErrRefused: nothing was written, and writing again
// fails the same way until the table or its entries are repaired.
func (e *PreviousCommitMissingError) Is(target error) bool { return target == logstore.ErrRefused }

func (e *PreviousCommitMissingError) Error() string {
	return fmt.Sprintf("dynamo: %s: commit %d is not in the log, cannot write %d", e.TablePath, e.Version, e.Version+1)
}

// StaleEntryError: a complete entry exists for a version whose commit file does not, as
// when a table is deleted and re-created at the same path within the TTL (Spark: "Old
// entries for table … still exist in the external log store"). Delete the table's entries
// or wait for them to expire.
type StaleEntryError struct {
	TablePath string
	Version   int64
}

// Is makes the error match logstore.ErrRefused: nothing was written, and writing again
// fails the same way until the table or its entries are repaired.
func (e *StaleEntryError) Is(target error) bool { return target == logstore.ErrRefused }

func (e *StaleEntryError) Error() string {
	return fmt.Sprintf("dynamo: %s: old entry for version %d exists but its commit file does not", e.TablePath, e.Version)
}

// TempFileMissingError: an incomplete entry's temp file and its commit file are both
// missing, so the commit it claims cannot be completed.
type TempFileMissingError struct {
	TablePath string
	Version   int64
	TempPath  string
}

// Is makes the error match logstore.ErrRefused: nothing was written, and writing again
// fails the same way until the table or its entries are repaired.
func (e *TempFileMissingError) Is(target error) bool { return target == logstore.ErrRefused }

func (e *TempFileMissingError) Error() string {
	return fmt.Sprintf("dynamo: %s: incomplete entry %d: temp file _delta_log/%s and the commit file are both missing", e.TablePath, e.Version, e.TempPath)
}

// isConditionFailed reports a failed ConditionExpression (ConditionalCheckFailedException).
func isConditionFailed(err error) bool {
	if err == nil {
		return false
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true
	}
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ConditionalCheckFailedException"
}
