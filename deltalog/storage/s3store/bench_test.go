package s3store_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// BenchmarkRequests measures the client side of single S3 requests through a Store: the
// CPU time of the whole process per request (cpu-us/req: getrusage, every goroutine and
// the GC) and the bytes it allocates per request (alloc-KB/req), for the requests a
// stream batch makes (docs/performance.md § The AWS clients' cost per request):
//
//   - op=put-1KB: Put of a 1 KiB object (a data file is larger, its request the same);
//   - op=put-if-absent-1KB: PutIfAbsent of a new key (a commit, an offsets file);
//   - op=get-2KB, op=get-50KB: GetRange of a whole object (a commit; a checkpoint);
//   - op=list-100: List of a prefix holding 100 keys (offsets/, _delta_log/).
//
// Each runs with two clients, alternating under the same machine load:
//
//   - client=before: the S3 client production built before awsclient (s3.NewFromConfig
//     with the SDK's options, as location.Open did);
//   - client=awsclient: awsclient.NewS3, production's client now;
//   - client=checksums-when-required: awsclient.NewS3 with request checksums and response
//     validation "when required", the option docs/decisions/0015 declines (over the
//     emulator's plain HTTP a PUT computes its SHA-256 and CRC32 up front either way;
//     over HTTPS to AWS it differs, see the decision).
//
// and against two emulators: server=child, the emulator in a child process (the figures
// are the client's alone), and server=in-process (gofakes3 in this process, as most
// tests run it: its work is in the figures).
//
//	go test ./deltalog/storage/s3store -run '^$' -bench Requests
func BenchmarkRequests(b *testing.B) {
	cfg, err := awsclient.LoadConfig(context.Background(), emulators.Region, emulators.Credentials)
	if err != nil {
		b.Fatal(err)
	}
	clients := []struct {
		name string
		new  func(url string) *s3.Client
	}{
		{"before", func(url string) *s3.Client {
			return s3.NewFromConfig(cfg, func(o *s3.Options) {
				o.BaseEndpoint = aws.String(url)
				o.UsePathStyle = true
				o.DisableLogOutputChecksumValidationSkipped = true
			})
		}},
		{"awsclient", func(url string) *s3.Client { return awsclient.NewS3(cfg, url, true) }},
		{"checksums-when-required", func(url string) *s3.Client {
			c := awsclient.NewS3(cfg, url, true)
			return s3.New(c.Options(), func(o *s3.Options) {
				o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
				o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
			})
		}},
	}
	for _, server := range []string{"child", "in-process"} {
		b.Run("server="+server, func(b *testing.B) {
			var srv *emulators.S3Server
			if server == "child" {
				srv = emulators.StartS3Process(b)
			} else {
				b.Setenv(emulators.S3EndpointEnv, "")
				srv = emulators.StartS3(b)
			}
			bucket := srv.Bucket(b)
			setup := s3store.New(srv.Client(), bucket, "bench")
			ctx := context.Background()
			for _, size := range []int{2 << 10, 50 << 10} {
				if err := setup.Put(ctx, fmt.Sprintf("get/%d", size), bytes.NewReader(make([]byte, size)), int64(size)); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 100 {
				if err := setup.PutIfAbsent(ctx, fmt.Sprintf("list/%020d.json", i), []byte("{}")); err != nil {
					b.Fatal(err)
				}
			}
			body := bytes.Repeat([]byte("x"), 1<<10)
			ops := []struct {
				name string
				run  func(st *s3store.Store, i int) error
			}{
				{"put-1KB", func(st *s3store.Store, i int) error {
					return st.Put(ctx, "put/1KB", bytes.NewReader(body), int64(len(body)))
				}},
				{"put-if-absent-1KB", func(st *s3store.Store, i int) error {
					return st.PutIfAbsent(ctx, fmt.Sprintf("pia/%d", newKeys.Add(1)), body)
				}},
				{"get-2KB", func(st *s3store.Store, i int) error { return get(ctx, st, "get/2048", 2<<10) }},
				{"get-50KB", func(st *s3store.Store, i int) error { return get(ctx, st, "get/51200", 50<<10) }},
				{"list-100", func(st *s3store.Store, i int) error {
					n := 0
					for _, err := range st.List(ctx, "list/", "") {
						if err != nil {
							return err
						}
						n++
					}
					if n != 100 {
						return fmt.Errorf("listed %d keys, want 100", n)
					}
					return nil
				}},
			}
			for _, op := range ops {
				for _, c := range clients {
					b.Run("op="+op.name+"/client="+c.name, func(b *testing.B) {
						st := s3store.New(c.new(srv.URL), bucket, "bench")
						if err := op.run(st, -1); err != nil { // a connection, as a warm process has
							b.Fatal(err)
						}
						runtime.GC()
						var m benchmetrics.Intervals
						b.ResetTimer()
						m.Resume()
						for i := 0; i < b.N; i++ {
							if err := op.run(st, i); err != nil {
								b.Fatal(err)
							}
						}
						m.Pause()
						b.ReportMetric(float64(m.CPU.Microseconds())/float64(b.N), "cpu-us/req")
						b.ReportMetric(float64(m.Alloc)/1024/float64(b.N), "alloc-KB/req")
					})
				}
			}
		})
	}
}

// newKeys numbers the keys of op=put-if-absent-1KB (the benchmark runs its loop several
// times).
var newKeys atomic.Int64

// get reads the whole object and checks its size.
func get(ctx context.Context, st *s3store.Store, key string, size int) error {
	data, err := st.GetRange(ctx, key, 0, -1)
	if err != nil {
		return err
	}
	if len(data) != size {
		return fmt.Errorf("got %d bytes, want %d", len(data), size)
	}
	return nil
}
