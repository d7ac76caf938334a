package s3store_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// BenchmarkRequestsFloor puts the AWS SDK's share of a request beside the HTTP
// transport's: the same PUT of 1 KiB and GET of 2 KiB to the S3 emulator in a child
// process, through production's client (client=awsclient, via a Store) and as bare
// net/http requests (client=net-http: one keep-alive connection, no signing, no
// checksum, no retry, no XML), alternating for two rounds. cpu-us/req is the process's
// CPU (getrusage, every goroutine and the GC), alloc-KB/req the bytes allocated; the
// difference of the two clients is what the SDK costs per request on top of the loopback
// HTTP exchange (docs/performance.md § CPU per batch: what is left, by owner).
//
//	go test ./deltalog/storage/s3store -run '^$' -bench RequestsFloor -benchtime 1000x
func BenchmarkRequestsFloor(b *testing.B) {
	cfg, err := awsclient.LoadConfig(context.Background(), emulators.Region, emulators.Credentials)
	if err != nil {
		b.Fatal(err)
	}
	srv := emulators.StartS3Process(b)
	bucket := srv.Bucket(b)
	ctx := context.Background()
	put := bytes.Repeat([]byte("x"), 1<<10)
	st := s3store.New(awsclient.NewS3(cfg, srv.URL, true), bucket, "floor")
	if err := st.Put(ctx, "get/2KB", bytes.NewReader(make([]byte, 2<<10)), 2<<10); err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{}
	bare := func(method, key string, body []byte, want int) error {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+"/"+bucket+"/floor/"+key, r)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || (want >= 0 && int(n) != want) {
			return fmt.Errorf("%s %s: status %d, %d bytes", method, key, resp.StatusCode, n)
		}
		return nil
	}
	ops := []struct {
		name, client string
		run          func() error
	}{
		{"put-1KB", "awsclient", func() error { return st.Put(ctx, "put/1KB", bytes.NewReader(put), int64(len(put))) }},
		{"put-1KB", "net-http", func() error { return bare(http.MethodPut, "put/1KB", put, -1) }},
		{"get-2KB", "awsclient", func() error { return get(ctx, st, "get/2KB", 2<<10) }},
		{"get-2KB", "net-http", func() error { return bare(http.MethodGet, "get/2KB", nil, 2<<10) }},
	}
	for round := range 2 {
		for _, op := range ops {
			b.Run(fmt.Sprintf("op=%s/client=%s/round=%d", op.name, op.client, round), func(b *testing.B) {
				if err := op.run(); err != nil { // a connection, as a warm process has
					b.Fatal(err)
				}
				runtime.GC()
				var m benchmetrics.Intervals
				b.ResetTimer()
				m.Resume()
				for i := 0; i < b.N; i++ {
					if err := op.run(); err != nil {
						b.Fatal(err)
					}
				}
				m.Pause()
				b.ReportMetric(float64(m.CPU.Microseconds())/float64(b.N), "cpu-us/req")
				b.ReportMetric(float64(m.Alloc)/1024/float64(b.N), "alloc-KB/req")
			})
		}
	}
}
