package stream

import (
	"errors"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Named returns the typed error value inside err that Step Functions tells apart, unwrapped:
// aws-lambda-go reports the outermost value's type name as errorType, so a fmt.Errorf wrap
// would hide it (docs/handlers.md). The Lambda handler and `mssqlcdc invoke stream`
// both return Named(err).
//
// Caught and failed (the spec or the source must change): DataLossError,
// SchemaChangedError, ConfigError (also for a rewound checkpoint or a checkpoint of
// another app_id: a new checkpoint and app_id is a spec change), NoSnapshotError,
// ConcurrentStreamError, the source's CaptureInstanceNotFoundError,
// AmbiguousCaptureInstanceError, CDCNotEnabledError, PermissionError and LoginError. Retried:
// SourceUnavailableError, TransientError, LockTimeoutError, and deltalog's
// ConcurrentModificationError, CommitAttemptsError and CommitUnknownError. Anything else is
// returned as is.
func Named(err error) error {
	if err == nil {
		return nil
	}
	var (
		rw  *CheckpointRewoundError
		mis *checkpoint.AppIDMismatchError
	)
	switch {
	case errors.As(err, &rw):
		return &config.ConfigError{Problems: []config.Problem{{Field: "checkpoint", Reason: rw.Error()}}}
	case errors.As(err, &mis):
		return &config.ConfigError{Problems: []config.Problem{{Field: "checkpoint", Reason: mis.Error()}}}
	}
	for _, f := range []func(error) (error, bool){
		as[*DataLossError], as[*SchemaChangedError], as[*SourceUnavailableError], as[*config.ConfigError],
		as[*checkpoint.ConcurrentStreamError], as[*NoSnapshotError],
		as[*source.CaptureInstanceNotFoundError], as[*source.AmbiguousCaptureInstanceError],
		as[*source.CDCNotEnabledError], as[*source.PermissionError], as[*source.LoginError], as[*source.TransientError],
		as[*source.LockTimeoutError], as[*deltalog.ConcurrentModificationError],
		as[*deltalog.CommitAttemptsError], as[*deltalog.CommitUnknownError],
	} {
		if n, ok := f(err); ok {
			return n
		}
	}
	return err
}

// as is errors.As returning the match as an error value.
func as[T error](err error) (error, bool) {
	var t T
	if errors.As(err, &t) {
		return t, true
	}
	return nil, false
}
