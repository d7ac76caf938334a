package deltalog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
)

// wideTables caches, per process, tables of many live files (see writeWideTable), under
// root, which TestMain removes.
var wideTables struct {
	sync.Mutex
	root string
	dirs map[int]string
}

// wideTableDir returns a table of files live files on local disk, built once per process.
func wideTableDir(b testing.TB, files int) string {
	wideTables.Lock()
	defer wideTables.Unlock()
	if d, ok := wideTables.dirs[files]; ok {
		return d
	}
	if wideTables.root == "" {
		root, err := os.MkdirTemp("", "deltalog-wide-")
		if err != nil {
			b.Fatal(err)
		}
		wideTables.root, wideTables.dirs = root, map[int]string{}
	}
	d := filepath.Join(wideTables.root, strconv.Itoa(files))
	if err := writeWideTable(d, files); err != nil {
		b.Fatal(err)
	}
	wideTables.dirs[files] = d
	return d
}

// wideStats is a bronze file's stats document: 12 indexed columns (~640 bytes), as
// parquetio writes them.
func wideStats(i int) string {
	return fmt.Sprintf(`{"numRecords":%d,"minValues":{"_start_lsn":"0x0000002A000001F0%04X","_seqval":"0x0000002A000001F00003","_operation":1,"_command_id":1,"_commit_ts":"2026-01-02T03:04:05.000Z","order_id":%d,"customer_id":17,"status":"NEW","amount":1.5,"placed_at":"2026-01-02T03:04:05.000Z","note":"a"},"maxValues":{"_start_lsn":"0x0000002A000001F0%04X","_seqval":"0x0000002A000001F00FFF","_operation":4,"_command_id":9,"_commit_ts":"2026-01-02T03:09:05.000Z","order_id":%d,"customer_id":99817,"status":"SHIPPED","amount":99999.5,"placed_at":"2026-01-02T03:09:05.000Z","note":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"},"nullCount":{"_start_lsn":0,"_seqval":0,"_operation":0,"_command_id":0,"_commit_ts":0,"order_id":0,"customer_id":0,"status":0,"amount":3,"placed_at":0,"note":120}}`,
		1000+i%7, i%65536, i*1000, i%65536, i*1000+999)
}

// writeWideTable writes a table whose version 2 has files live files, all in a classic
// checkpoint at version 1 named by _last_checkpoint (as this package's writer leaves a
// table: stats as JSON strings, no stats_parsed), then one commit after it.
func writeWideTable(dir string, files int) error { return writeWideTableWith(dir, files, 0) }

// writeWideTableWith is writeWideTable whose checkpoint also holds tombstones unexpired
// removes (in row groups of their own, as encodeCheckpoint lays them out).
func writeWideTableWith(dir string, files, tombstones int) error {
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	m := lgMetadata()
	cp := []Action{{Protocol: p}, {MetaData: m}, {Txn: &Txn{AppID: "stream", Version: 1}}}
	for i := range files {
		cp = append(cp, Action{Add: &Add{
			Path:             fmt.Sprintf("part-%05d-3f0e8a8e-6a55-4c3e-9d57-%012d-c000.zstd.parquet", i%100000, i),
			PartitionValues:  map[string]string{},
			Size:             int64(200000 + i),
			ModificationTime: 1700000000000 + int64(i),
			DataChange:       true,
			Stats:            wideStats(i),
		}})
	}
	now := time.Now().UnixMilli()
	for i := range tombstones {
		cp = append(cp, Action{Remove: &Remove{
			Path:              fmt.Sprintf("part-%05d-3f0e8a8e-6a55-4c3e-9d57-%012d-c001.zstd.parquet", i%100000, i),
			DeletionTimestamp: lgPtr(now - int64(i)), DataChange: false, Size: lgPtr(int64(150000 + i)),
		}})
	}
	for v, acts := range [][]Action{{{Protocol: p}, {MetaData: m}}, {{Txn: &Txn{AppID: "stream", Version: 1}}}, {{Txn: &Txn{AppID: "stream", Version: 2}}}} {
		data, err := EncodeActions(acts)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(CommitFileKey(int64(v)))), data, 0o644); err != nil {
			return err
		}
	}
	pq, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(CheckpointFileKey(1))), pq, 0o644); err != nil {
		return err
	}
	hint := fmt.Sprintf(`{"version":1,"size":%d,"sizeInBytes":%d,"numOfAddFiles":%d}`, len(cp), len(pq), files)
	return os.WriteFile(filepath.Join(dir, filepath.FromSlash(LastCheckpointKey)), []byte(hint), 0o644)
}

func openWide(b testing.TB, dir string, files int) *Snapshot {
	ls, err := localfs.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(ls.Store(), ls, Options{}).Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if s.Version() != 2 || s.files.Len() != files {
		b.Fatalf("version %d, %d files", s.Version(), s.files.Len())
	}
	return s
}

var wideSizes = []int{10_000, 100_000}

// BenchmarkOpenFiles opens the latest snapshot of tables of 10k and 100k live files held
// in one checkpoint, warm (the same process opened them before). Goal (issue 13): first
// open ≤ 60 ms at 10k files, ≤ 400 ms at 100k; see BenchmarkOpenFirstInProcess.
//
//	go test ./deltalog/ -run '^$' -bench 'OpenFiles|OpenFirstInProcess' -benchmem
func BenchmarkOpenFiles(b *testing.B) {
	for _, n := range wideSizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := wideTableDir(b, n)
			b.ReportAllocs()
			for b.Loop() {
				openWide(b, dir, n)
			}
		})
	}
}

// BenchmarkOpenFirstInProcess measures the first open in a fresh process, as a Lambda
// cold start sees it: each iteration starts this test binary again
// (TestOpenFirstInProcessChild) and reads back the wall and CPU time of its one open,
// measured inside the child (process start and table setup excluded).
func BenchmarkOpenFirstInProcess(b *testing.B) {
	for _, n := range wideSizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := wideTableDir(b, n)
			var wall, cpu time.Duration
			for b.Loop() {
				w, c := runOpenChild(b, dir, n)
				wall, cpu = wall+w, cpu+c
			}
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "first-open-ms")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "first-open-cpu-ms")
		})
	}
}

func runOpenChild(b testing.TB, dir string, files int) (wall, cpu time.Duration) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenFirstInProcessChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DELTALOG_OPEN_CHILD="+dir, "DELTALOG_OPEN_CHILD_FILES="+strconv.Itoa(files))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "open-child "); ok {
			var w, c int64
			if _, err := fmt.Sscanf(rest, "%d %d", &w, &c); err != nil {
				b.Fatal(err)
			}
			return time.Duration(w), time.Duration(c)
		}
	}
	b.Fatalf("child printed no timing:\n%s", out)
	return 0, 0
}

// TestOpenFirstInProcessChild is BenchmarkOpenFirstInProcess's child: it opens the table
// named by DELTALOG_OPEN_CHILD once and prints the open's wall and CPU nanoseconds. Run
// without it, it checks the benchmark's measurement on a small table.
func TestOpenFirstInProcessChild(t *testing.T) {
	dir := os.Getenv("DELTALOG_OPEN_CHILD")
	if dir == "" {
		small := t.TempDir()
		if err := writeWideTable(small, 50); err != nil {
			t.Fatal(err)
		}
		if w, c := runOpenChild(t, small, 50); w <= 0 || c < 0 {
			t.Fatalf("child timing %v wall, %v CPU", w, c)
		}
		return
	}
	files, _ := strconv.Atoi(os.Getenv("DELTALOG_OPEN_CHILD_FILES"))
	cpu0 := cpuTime()
	start := time.Now()
	openWide(t, dir, files)
	fmt.Printf("open-child %d %d\n", time.Since(start).Nanoseconds(), (cpuTime() - cpu0).Nanoseconds())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFileTotals is what `mssqlcdc inspect` pays for its totals at 10k and 100k
// live files, side by side: "files" opens the table and sums Files() (every checkpoint
// add's stats decoded, as inspect did), "totals" opens it and calls Snapshot.Totals
// (numRecords read in place, no stats decoded). Both report the same totals.
//
//	go test ./deltalog/ -run '^$' -bench FileTotals -benchtime 3x -benchmem
func BenchmarkFileTotals(b *testing.B) {
	for _, n := range wideSizes {
		dir := wideTableDir(b, n)
		var want FileTotals
		b.Run(fmt.Sprintf("files=%d/files", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				want = totalsFromFiles(openWide(b, dir, n))
			}
		})
		b.Run(fmt.Sprintf("files=%d/totals", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := openWide(b, dir, n).Totals()
				if err != nil || got != want {
					b.Fatalf("totals %+v, %v; want %+v", got, err, want)
				}
			}
		})
	}
}

// BenchmarkOpenTombstoneBytes is what a checkpoint's tombstones still cost an open that
// does not decode them (docs/decisions/0014-checkpoint-tombstones.md): the open of a
// table of 1,000 live files whose checkpoint holds none, or a week of a bronze table's
// (~11,600), side by side; bytes-read is the checkpoint file an open GETs whole.
//
//	go test ./deltalog/ -run '^$' -bench OpenTombstoneBytes -benchtime 20x -benchmem
func BenchmarkOpenTombstoneBytes(b *testing.B) {
	for _, tombs := range []int{0, 11_600} {
		b.Run(fmt.Sprintf("tombstones=%d", tombs), func(b *testing.B) {
			dir := b.TempDir()
			if err := writeWideTableWith(dir, 1000, tombs); err != nil {
				b.Fatal(err)
			}
			st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(CheckpointFileKey(1))))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				s := openWide(b, dir, 1000)
				if s.cpTombstones.decoded() || (tombs > 0) != (s.cpTombstones != nil) {
					b.Fatalf("tombstones decoded %v, kept %v", s.cpTombstones.decoded(), s.cpTombstones != nil)
				}
			}
			b.ReportMetric(float64(st.Size()), "bytes-read/op")
		})
	}
}

// BenchmarkOpenFiles leaves no table behind in the temporary directory: the tables it
// builds once per process (deltalog-wide-*, ~25 MB at 100k files) are removed when the
// test binary ends (it left one directory per run in /tmp). Run in a child process with a
// TMPDIR of its own, at 10k files and one iteration.
func TestBenchmarkOpenFilesRemovesItsTables(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a benchmark in a child process")
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkOpenFiles$/^files=10000$", "-test.benchtime=1x", "-test.count=1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "BenchmarkOpenFiles/files=10000") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	left, err := filepath.Glob(filepath.Join(tmp, "deltalog-*"))
	if err != nil || len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v %v", left, err)
	}
}
