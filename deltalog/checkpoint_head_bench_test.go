package deltalog

import (
	"fmt"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
)

// headActions are the actions of a small carried checkpoint's head: the protocol, the
// metadata, a txn, adds files and removes tombstones (deleted the same day).
func headActions(adds, removes int) []Action {
	acts := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, {MetaData: lgMetadata("p")}, {Txn: &Txn{AppID: "app", Version: 7}}}
	for i := range adds {
		acts = append(acts, Action{Add: lgAdd(i)})
	}
	for i := range removes {
		acts = append(acts, Action{Remove: &Remove{Path: lgAdd(1000 + i).Path, DeletionTimestamp: lgPtr(int64(1800000000000 + i)), DataChange: true, Size: lgPtr(int64(100 + i))}})
	}
	return acts
}

// BenchmarkCheckpointHead encodes the head of a carried checkpoint (encodeCheckpoint: the
// other actions' row group, then one of the removes replayed since, when there are any)
// with 10 adds and 0 or 40 removes: the fixed cost per row group of the checkpoint schema's
// ~50 leaves that every checkpoint pays whatever its rows (docs/performance.md § The
// checkpoint's row group). It reports the process CPU per encode (which a shared
// machine's load inflates less than ns/op).
//
//	go test ./deltalog -run '^$' -bench CheckpointHead -benchtime 2000x -count 3
func BenchmarkCheckpointHead(b *testing.B) {
	for _, removes := range []int{0, 40} {
		b.Run(fmt.Sprintf("adds=10/removes=%d", removes), func(b *testing.B) {
			acts := headActions(10, removes)
			b.ReportAllocs()
			cpu0 := benchmetrics.CPUTime()
			var size int
			for b.Loop() {
				data, err := encodeCheckpoint(acts)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64((benchmetrics.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(size), "bytes/checkpoint")
		})
	}
}
