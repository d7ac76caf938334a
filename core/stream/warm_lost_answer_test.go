package stream

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// commitKey matches a Delta commit file's key (_delta_log/<20 digits>.json).
var commitKey = regexp.MustCompile(`^_delta_log/[0-9]{20}\.json$`)

// lostCommitAnswers is an S3 store (every method its own, so the log store sees all it
// offers) whose conditional puts of commit files lose their first answer: the put is made
// and the caller sees what the SDK's resend gets, 412 (storage.ErrExists).
type lostCommitAnswers struct {
	*s3store.Store
	mu   *sync.Mutex
	lost map[string]bool
}

func (s lostCommitAnswers) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

func (s lostCommitAnswers) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	if commitKey.MatchString(key) {
		s.mu.Lock()
		k := s.URL() + "/" + key
		first := !s.lost[k]
		s.lost[k] = true
		s.mu.Unlock()
		if first {
			if _, err := s.Store.PutIfAbsentTag(ctx, key, data); err != nil {
				return "", err
			}
		}
	}
	return s.Store.PutIfAbsentTag(ctx, key, data)
}

// Was a hole (main 652655f): TestWarmHoleTableRecreated with every commit of the warm
// process A answered by the SDK's resend (its first answer lost). condput took the
// commit for its own from the read-back's bytes but kept no ETag, so the listing of A's
// next invocation took the new tables' files at A's versions for A's own: with as many
// versions or more, A went on with its kept snapshots of the old tables and refused the
// checkpoint (*CheckpointRewoundError) where a new process goes on. The read-back now
// keeps the file's ETag (storage.GetTag).
func TestWarmLostPutAnswerTableRecreated(t *testing.T) {
	for _, b := range []struct {
		name    string
		batches int
	}{{"fewer versions", 2}, {"as many versions", 3}, {"more versions", 5}} {
		t.Run(fmt.Sprintf("%s/%s", testlake.S3CondPut, b.name), func(t *testing.T) {
			e := newEnvOn(t, testlake.S3CondPut, cdcsim.Config{Seed: 93})
			var mu sync.Mutex
			lost := map[string]bool{}
			e.lake.WrapStore = func(s storage.Store) storage.Store {
				return lostCommitAnswers{Store: s.(*s3store.Store), mu: &mu, lost: lost}
			}
			a := e.deps()
			e.lake.WrapStore = nil
			for i := 1; i <= 11; i++ { // A: batches 0..10
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{FactsEvery: 5}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			mu.Lock()
			n := len(lost)
			mu.Unlock()
			if n < 3 {
				t.Fatalf("precondition: %d commits of A lost their answer, want every one", n)
			}
			e.startOverThenWarm(t, a, b.batches)
		})
	}
}
