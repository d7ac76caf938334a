package condput_test

import (
	"context"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

func TestConformanceOnS3(t *testing.T) {
	srv := emulators.StartS3(t)
	logstoretest.Run(t, func(t *testing.T) logstoretest.Table {
		store := s3store.New(srv.Client(), srv.Bucket(t), "warehouse/orders")
		return logstoretest.Table{Store: store, New: func() logstore.LogStore { return condput.New(store) }}
	})
}

// An uncontended commit is one request: PutObject If-None-Match: *.
func TestUncontendedCommitRequests(t *testing.T) {
	srv := emulators.StartS3(t)
	s := storagetest.NewCounting(s3store.New(srv.Client(), srv.Bucket(t), "t"), nil)
	l := condput.New(s)
	for v := range int64(3) {
		s.Counter.Reset()
		if err := l.Write(t.Context(), v, logstoretest.Commit(0, int(v))); err != nil {
			t.Fatal(err)
		}
		if s.Counter.Total() != 1 || s.Counter.Count("PutIfAbsent") != 1 {
			t.Fatalf("Write(%d): %v, want one PutIfAbsent", v, s.Counter.Counts())
		}
	}
}

// BenchmarkCommitRequests reports the S3 requests of an uncontended commit (requests/op);
// ns/op is against the in-process emulator, not AWS.
func BenchmarkCommitRequests(b *testing.B) {
	srv := emulators.StartS3(b)
	for _, mode := range []string{"write", "latest+write"} {
		b.Run(mode, func(b *testing.B) {
			s := storagetest.NewCounting(s3store.New(srv.Client(), srv.Bucket(b), "t"), nil)
			l := condput.New(s)
			ctx := context.Background()
			for i := range b.N {
				if mode == "latest+write" {
					if _, err := l.Latest(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Write(ctx, int64(i), logstoretest.Commit(0, i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Counter.Total())/float64(b.N), "requests/op")
		})
	}
}

// 8 writers × 50 commits each on one table: versions 0..399 are contiguous and every
// commit is present exactly once (issue 3's acceptance, at the log store level).
func TestEightWritersFiftyCommits(t *testing.T) {
	srv := emulators.StartS3(t)
	store := s3store.New(srv.Client(), srv.Bucket(t), "t")
	logstoretest.ConcurrentWriters(t, logstoretest.Table{
		Store: store,
		New:   func() logstore.LogStore { return condput.New(store) },
	}, 8, 50)
}
