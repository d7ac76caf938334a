package stream

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
	"github.com/mssqlcdc/mssqlcdc/internal/lambdagc"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// BenchmarkBatchRequests counts the S3 and DynamoDB requests of stream batches of about
// 1,000 change rows of the workload's orders table, through counting wrappers on the
// emulators (S3: gofakes3 in process; DynamoDB: dynalite), per log store:
//
//   - log=dynamo: the DynamoDB log store (needs dynalite: scripts/with-dynalite.sh);
//   - log=condput: S3 conditional put;
//   - log=local: local disk (its counts are store calls; its CPU figures carry no emulator).
//
// Shapes:
//
//   - warm-invocations: one batch per invocation, every invocation on the same
//     connections (a warm Lambda at a one-minute schedule);
//   - one-invocation: every batch in one invocation (a catch-up);
//   - warm-invocations/facts-every=1: as warm-invocations, every batch committing its facts
//     rows (Options.FactsEvery 1: the cost decision 0013 removed);
//   - after-bootstrap: a 4-range bootstrap (snapshot.Run, counted as bootstrap-*), then the
//     first stream batch in a new process (cold: new connections, nothing known), counted
//     as the batch.
//
// Each steady shape measures batchesMeasured batches (two checkpoint cycles of bronze)
// after a warm-up of the same length that creates the tables. Reported per batch: s3-req
// and ddb-req (means), max-req (the most requests, S3 and DynamoDB together, of one
// batch), cycle1-req and cycle2-req (the mean of each checkpoint cycle, S3 and DynamoDB
// together: equal when the cost is flat), cpu-ms and alloc-MB (the process while the stream
// runs: the stream, cdcsim's reads, and on the emulator backends gofakes3 too; the
// workload's transactions are committed to cdcsim between the measured intervals).
//
// The process's garbage collector is set as the stream function's Lambda sets it at its
// default memory (internal/lambdagc: GOGC 400, a soft limit at 80 % of 2,048 MB), the
// Lambda being what cpu-ms stands for; -batchreq.go-gc keeps Go's defaults (GOGC 100, no
// limit) instead. gc/batch is the collections that ended while the stream ran.
//
// With -batchreq.s3-process the S3 emulator runs in a child process
// (internal/emulators/s3server) instead of in this one, so cpu-ms and alloc-MB are the
// stream's and cdcsim's without the S3 server's work (AWS's, in production) and without
// its in-memory objects on this process's heap; the S3 client's work stays in.
//
//	scripts/with-dynalite.sh go test ./core/stream -run '^$' -bench BatchRequests -benchtime 1x
//	scripts/with-dynalite.sh go test ./core/stream -run '^$' -bench BatchRequests -benchtime 1x -batchreq.s3-process
func BenchmarkBatchRequests(b *testing.B) {
	if !*goGC {
		// The garbage collector as the stream function's Lambda sets it at its default
		// memory (infra/terraform: 2,048 MB).
		lambdaGC(b, "2048")
	}
	if *s3Process {
		b.Setenv(emulators.S3EndpointEnv, emulators.StartS3Process(b).URL)
	}
	for _, lb := range []struct {
		name    string
		backend testlake.Backend
	}{{"dynamo", testlake.AWS}, {"condput", testlake.S3CondPut}, {"local", testlake.Local}} {
		b.Run("log="+lb.name, func(b *testing.B) {
			b.Run("shape=warm-invocations", func(b *testing.B) { benchSteady(b, lb.backend, false, 0) })
			b.Run("shape=one-invocation", func(b *testing.B) { benchSteady(b, lb.backend, true, 0) })
			b.Run("shape=warm-invocations/facts-every=1", func(b *testing.B) { benchSteady(b, lb.backend, false, 1) })
			b.Run("shape=after-bootstrap", func(b *testing.B) { benchAfterBootstrap(b, lb.backend) })
		})
	}
}

var goGC = flag.Bool("batchreq.go-gc", false, "BenchmarkBatchRequests: keep Go's default garbage collector settings instead of the stream Lambda's (internal/lambdagc)")

// lambdaGC sets the garbage collector as internal/lambdagc does in a Lambda given memMB of
// memory (GOGC and GOMEMLIMIT in the environment still win), and puts Go's settings back
// at tb's cleanup.
func lambdaGC(tb testing.TB, memMB string) {
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(pct)
	lambdagc.Configure(func(k string) string {
		if k == lambdagc.MemoryEnv {
			return memMB
		}
		return os.Getenv(k)
	})
	tb.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	})
}

var s3Process = flag.Bool("batchreq.s3-process", false, "BenchmarkBatchRequests: run the S3 emulator in a child process, outside the metered one")

const (
	// txnsPerBatch workload transactions make about 1,000 change rows (1–4 statements
	// each; an update is two rows).
	txnsPerBatch    = 280
	batchesMeasured = 20
)

// reqEnv is one benchmark's source, lake and stream connections.
type reqEnv struct {
	b    testing.TB
	db   *cdcsim.DB
	gen  *workload.Generator
	lake *testlake.Lake
	spec *config.Spec
	f    *deltatest.Faults
	deps Deps
	// factsEvery is Options.FactsEvery (0: the default).
	factsEvery int
}

func newReqEnv(b testing.TB, backend testlake.Backend, preload int) *reqEnv {
	db := cdcsim.New(cdcsim.Config{Seed: 7})
	g := workload.New(db, workload.Config{Seed: 7})
	if err := g.Create(workload.Orders()); err != nil {
		b.Fatal(err)
	}
	if preload > 0 {
		if err := g.Load("orders", preload, 5_000); err != nil {
			b.Fatal(err)
		}
	}
	lake := testlake.New(b, backend)
	spec := &config.Spec{AppID: "reqs", Source: config.Source{DSN: "sqlserver://b@h", CaptureInstance: "dbo_orders"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Options.StartingLsn = "earliest"
	e := &reqEnv{b: b, db: db, gen: g, lake: lake, spec: spec, f: &deltatest.Faults{}}
	lake.Faults = e.f
	return e
}

// open makes a process's connections: new tables and checkpoint, every store and
// DynamoDB call counted by e.f.
func (e *reqEnv) open() Deps {
	return Deps{Source: e.db, Bronze: e.lake.Table(e.spec.Bronze), Facts: e.lake.Table(e.spec.FactsTable),
		Checkpoint: checkpoint.New(e.lake.Store(e.spec.Checkpoint), e.spec.AppID)}
}

// counts are the S3 and DynamoDB requests made so far.
func (e *reqEnv) counts() (s3, ddb int) {
	for _, op := range e.f.Ops() {
		switch {
		case strings.HasPrefix(op, "store."):
			s3++
		case strings.HasPrefix(op, "ddb."):
			ddb++
		}
	}
	return s3, ddb
}

// invoke runs one stream invocation of at most maxBatches batches on deps and returns the
// requests counted at the end of each batch (the first batch carries the invocation's
// own requests).
func (e *reqEnv) invoke(deps Deps, maxBatches int) (marks [][2]int) {
	res, err := Run(context.Background(), e.spec, deps, Options{MaxBatches: maxBatches, FactsEvery: e.factsEvery,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.db.Now,
		OnBatch: func(BatchReport) {
			s3, ddb := e.counts()
			marks = append(marks, [2]int{s3, ddb})
		}})
	if err != nil || res.Batches != maxBatches {
		e.b.Fatalf("run: %+v %v", res, err)
	}
	return marks
}

// reqStats accumulates per-batch request counts.
type reqStats struct {
	s3, ddb, max, n int
	// per are the batches' requests (S3 and DynamoDB together), in order.
	per []int
}

func (r *reqStats) add(from, to [2]int) {
	s3, ddb := to[0]-from[0], to[1]-from[1]
	r.s3, r.ddb, r.n = r.s3+s3, r.ddb+ddb, r.n+1
	r.max = max(r.max, s3+ddb)
	r.per = append(r.per, s3+ddb)
}

// report reports the means and the most of one batch, and with two checkpoint cycles
// measured the mean of each (cycle1-req, cycle2-req: S3 and DynamoDB together), which are
// equal when the cost is flat across batches (of one invocation, or of warm invocations).
func (r *reqStats) report(b *testing.B, prefix string) {
	b.ReportMetric(float64(r.s3)/float64(r.n), prefix+"s3-req/batch")
	b.ReportMetric(float64(r.ddb)/float64(r.n), prefix+"ddb-req/batch")
	b.ReportMetric(float64(r.max), prefix+"max-req/batch")
	if len(r.per) >= batchesMeasured {
		half := batchesMeasured / 2
		var c1, c2 int
		for i, n := range r.per[len(r.per)-batchesMeasured:] {
			if i < half {
				c1 += n
			} else {
				c2 += n
			}
		}
		b.ReportMetric(float64(c1)/float64(half), prefix+"cycle1-req/batch")
		b.ReportMetric(float64(c2)/float64(half), prefix+"cycle2-req/batch")
	}
}

func benchSteady(b *testing.B, backend testlake.Backend, oneInvocation bool, factsEvery int) {
	var st reqStats
	var cpu float64
	var alloc uint64
	var gcs uint32
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		e := newReqEnv(b, backend, 0)
		e.factsEvery = factsEvery
		e.deps = e.open()
		// Warm-up: creates bronze and facts and runs a cycle, as a running stream has.
		for range batchesMeasured {
			if err := e.gen.Step(txnsPerBatch); err != nil {
				b.Fatal(err)
			}
			e.invoke(e.deps, 1)
		}
		runtime.GC()
		// The meter runs only while the stream does: the workload's transactions are
		// committed to cdcsim outside it.
		var m benchmetrics.Intervals
		s3, ddb := e.counts()
		prev := [2]int{s3, ddb}
		if oneInvocation {
			e.spec.Options.MaxCommitsPerBatch = new(int)
			*e.spec.Options.MaxCommitsPerBatch = txnsPerBatch
			if err := e.gen.Step(txnsPerBatch * batchesMeasured); err != nil {
				b.Fatal(err)
			}
			m.Resume()
			t0 := time.Now()
			marks := e.invoke(e.deps, batchesMeasured)
			wall += time.Since(t0)
			m.Pause()
			s3, ddb := e.counts() // what the invocation did after its last batch
			marks[len(marks)-1] = [2]int{s3, ddb}
			for _, mk := range marks {
				st.add(prev, mk)
				prev = mk
			}
		} else {
			for range batchesMeasured {
				if err := e.gen.Step(txnsPerBatch); err != nil {
					b.Fatal(err)
				}
				m.Resume()
				t0 := time.Now()
				e.invoke(e.deps, 1)
				wall += time.Since(t0)
				m.Pause()
				s3, ddb := e.counts()
				st.add(prev, [2]int{s3, ddb})
				prev = [2]int{s3, ddb}
			}
		}
		cpu += m.CPU.Seconds()
		alloc += m.Alloc
		gcs += m.GCs
	}
	st.report(b, "")
	n := float64(b.N * batchesMeasured)
	b.ReportMetric(cpu*1000/n, "cpu-ms/batch")
	b.ReportMetric(float64(alloc)/1e6/n, "alloc-MB/batch")
	b.ReportMetric(float64(gcs)/n, "gc/batch")
	// The wall time a batch lasts, waits on the emulators included: the process's
	// background work (the collector's idle marking, the scavenger) during it is metered too.
	b.ReportMetric(float64(wall.Microseconds())/1000/n, "wall-ms/batch")
	b.ReportMetric(0, "ns/op")
}

func benchAfterBootstrap(b *testing.B, backend testlake.Backend) {
	var boot, first reqStats
	for i := 0; i < b.N; i++ {
		e := newReqEnv(b, backend, 40_000)
		e.spec.Bootstrap = true
		e.spec.Options.NumPartitions = 4
		e.spec.Options.StartingLsn = ""
		// The bootstrap: its own process (the snapshot function) with its own connections.
		d := e.open()
		sd := snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: d.Bronze, Facts: d.Facts,
			Staging: e.lake.Store(e.spec.Checkpoint), Options: snapshot.Options{Now: e.db.Now}}
		s3, ddb := e.counts()
		before := [2]int{s3, ddb}
		if _, err := snapshot.Run(context.Background(), sd); err != nil {
			b.Fatal(err)
		}
		s3, ddb = e.counts()
		boot.add(before, [2]int{s3, ddb})
		// The stream's first invocation: a new process.
		if err := e.gen.Step(txnsPerBatch); err != nil {
			b.Fatal(err)
		}
		prev := [2]int{s3, ddb}
		e.invoke(e.open(), 1)
		s3, ddb = e.counts()
		first.add(prev, [2]int{s3, ddb})
	}
	boot.report(b, "bootstrap-")
	first.report(b, "")
	b.ReportMetric(0, "ns/op")
}
