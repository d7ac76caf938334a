package deltalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/dynamotest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Uncontended commits on the S3 emulator (gofakes3), committed through DynamoDB (dynalite)
// or S3 conditional put, counting every S3 and DynamoDB request. Needs dynalite:
//
//	scripts/with-dynalite.sh go test ./deltalog/ -run '^$' -bench CommitsAWS -benchtime 100x
func BenchmarkCommitsAWS(b *testing.B) {
	srv := emulators.StartS3(b)
	ddb := emulators.DynamoDB(b)
	for _, c := range []struct {
		name     string
		interval int
		chain    bool
	}{{"no-checkpoints/chained", -1, true}, {"checkpoint-every-10/chained", 10, true}, {"checkpoint-every-10", 10, false}} {
		b.Run("dynamo/"+c.name, func(b *testing.B) {
			table := emulators.UniqueName("delta_log_")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := dynamo.CreateTable(ctx, ddb, table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
				b.Fatal(err)
			}
			store := s3store.New(srv.Client(), srv.Bucket(b), "warehouse/t/")
			deltatest.BenchmarkCommits(b, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
				s := f.Store(store)
				l, err := dynamo.New(dynamotest.WithFaults(ddb, f), s, dynamo.Options{Table: table, Scheme: "s3a"})
				if err != nil {
					b.Fatal(err)
				}
				return s, l
			}, c.interval, c.chain)
		})
		b.Run("condput/"+c.name, func(b *testing.B) {
			store := s3store.New(srv.Client(), srv.Bucket(b), "warehouse/t/")
			deltatest.BenchmarkCommits(b, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
				s := f.Store(store)
				return s, condput.New(s)
			}, c.interval, c.chain)
		})
	}
}
