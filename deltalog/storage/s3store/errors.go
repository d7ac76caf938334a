package s3store

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// mapErr turns an SDK error into storage.ErrNotFound or storage.ErrExists when it is one
// (matched on the S3 error code, and on the HTTP status for HEAD, which has no body), and
// wraps it with the operation and key.
func mapErr(op, key string, err error) error {
	var sentinel error
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var apiErr smithy.APIError
	var respErr *smithyhttp.ResponseError
	code := ""
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	status := 0
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	switch {
	case errors.As(err, &nsk), errors.As(err, &nf), code == "NoSuchKey":
		sentinel = storage.ErrNotFound
	case code == "PreconditionFailed", code == "ConditionalRequestConflict":
		sentinel = storage.ErrExists
	case code == "NoSuchBucket":
		// A missing bucket is a configuration error, not a missing object.
	case status == http.StatusNotFound:
		// HEAD responses have no body, hence no code: the SDK reports "NotFound" or none.
		sentinel = storage.ErrNotFound
	case status == http.StatusPreconditionFailed:
		sentinel = storage.ErrExists
	}
	if sentinel != nil {
		return fmt.Errorf("s3store: %s %s: %w (%w)", op, key, sentinel, err)
	}
	return fmt.Errorf("s3store: %s %s: %w", op, key, err)
}

// isConflict reports S3's 409 ConditionalRequestConflict.
func isConflict(err error) bool {
	var apiErr smithy.APIError
	return err != nil && errors.As(err, &apiErr) && apiErr.ErrorCode() == "ConditionalRequestConflict"
}
