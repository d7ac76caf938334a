package condput_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// lostLocal and lostS3 are the stores with every method of their own (so whatever
// optional interface they implement, the log store sees it), except the conditional put,
// whose first answer for key is lost: the put is made, and the caller sees what the SDK's
// resend gets, 412 (storage.ErrExists).
type lostLocal struct {
	*localstore.Store
	key  string
	lost bool
}

func (s *lostLocal) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

func (s *lostLocal) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	return loseFirst(ctx, s.Store, &s.lost, s.key, key, data)
}

type lostS3 struct {
	*s3store.Store
	key  string
	lost bool
}

func (s *lostS3) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

func (s *lostS3) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	return loseFirst(ctx, s.Store, &s.lost, s.key, key, data)
}

func loseFirst(ctx context.Context, s storage.TagPutter, lost *bool, lose, key string, data []byte) (string, error) {
	if key == lose && !*lost {
		*lost = true
		if _, err := s.PutIfAbsentTag(ctx, key, data); err != nil {
			return "", err
		}
	}
	return s.PutIfAbsentTag(ctx, key, data)
}

// Was a hole (main 652655f): a commit whose conditional-put answer was lost (the SDK's
// resend fails If-None-Match on the object the first request made, and the read-back
// shows our bytes) left the log store without the commit file's ETag, and the next
// listing took whatever file stood at that version for ours: a table started over with
// as many versions or more was not told (Replaced stayed 0), and a warm process went on
// with its kept state of the old table. The read-back now gives the ETag (storage.GetTag:
// the GET's own answer, no request more).
func TestLostPutAnswerStartedOverTold(t *testing.T) {
	srv := emulators.StartS3(t)
	stores := map[string]func(t *testing.T, lose string) (storage.Store, storage.Store){
		"local": func(t *testing.T, lose string) (storage.Store, storage.Store) {
			s, err := localstore.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return &lostLocal{Store: s, key: lose}, s
		},
		"s3": func(t *testing.T, lose string) (storage.Store, storage.Store) {
			s := s3store.New(srv.Client(), srv.Bucket(t), "t")
			return &lostS3{Store: s, key: lose}, s
		},
	}
	for name, open := range stores {
		for _, n := range []int64{3, 4, 6} { // versions of the new table: fewer, as many, more
			t.Run(fmt.Sprintf("%s/started-over-with-%d", name, n), func(t *testing.T) {
				ctx := t.Context()
				lossy, raw := open(t, commitlog.Key(3))
				l := condput.New(lossy)
				for v := range int64(4) { // 0..3, the answer of 3 lost
					if err := l.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
						t.Fatalf("Write(%d): %v", v, err)
					}
				}
				// Started over: every file deleted, n versions written by another.
				for info, err := range raw.List(ctx, "", "") {
					if err != nil {
						t.Fatal(err)
					}
					if err := raw.Delete(ctx, info.Key); err != nil {
						t.Fatal(err)
					}
				}
				other := condput.New(raw)
				for v := range n {
					if err := other.Write(ctx, v, logstoretest.Commit(1, int(v))); err != nil {
						t.Fatalf("new table, Write(%d): %v", v, err)
					}
				}
				if v, err := l.Latest(ctx); err != nil || v != n-1 {
					t.Fatalf("Latest = %d, %v; want %d", v, err, n-1)
				}
				if got := l.Replaced(); got != 1 {
					t.Errorf("Replaced = %d after the table was started over with %d versions; want 1", got, n)
				}
			})
		}
	}
}
