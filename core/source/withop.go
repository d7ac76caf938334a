package source

import (
	"fmt"
	"strings"
)

// WithOp wraps err with the operation that failed, "op: err", unless err's message
// already begins with op: a Source's errors name their operation themselves
// (TransientError.Op, the mssql errors), and a caller that names it again would print
// "list capture instances: list capture instances: ...". nil stays nil.
func WithOp(op string, err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); msg == op || strings.HasPrefix(msg, op+":") {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
