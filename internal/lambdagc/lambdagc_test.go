package lambdagc

import (
	"math"
	"runtime/debug"
	"testing"
)

// restore puts the process's GC settings back after a test changed them.
func restore(t *testing.T) {
	pct := debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	})
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigureFromFunctionMemory(t *testing.T) {
	restore(t)
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	got := Configure(env(map[string]string{MemoryEnv: "2048"}))
	want := Settings{GCPercent: 400, MemoryLimit: 1717986918} // 0.8 × 2,048 MiB
	if got != want {
		t.Fatalf("Configure = %+v, want %+v", got, want)
	}
	if pct := debug.SetGCPercent(100); pct != 400 {
		t.Errorf("GOGC in effect %d, want 400", pct)
	}
	if limit := debug.SetMemoryLimit(-1); limit != 1717986918 {
		t.Errorf("memory limit in effect %d, want 1717986918", limit)
	}
}

func TestConfigureLeavesTheEnvironmentsSettings(t *testing.T) {
	restore(t)
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(1 << 30)
	got := Configure(env(map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB", MemoryEnv: "2048"}))
	if got != (Settings{}) {
		t.Fatalf("Configure = %+v, want nothing set", got)
	}
	if pct := debug.SetGCPercent(150); pct != 150 {
		t.Errorf("GOGC in effect %d, want the environment's 150", pct)
	}
	if limit := debug.SetMemoryLimit(-1); limit != 1<<30 {
		t.Errorf("memory limit in effect %d, want the environment's 1 GiB", limit)
	}
}

func TestConfigureWithoutFunctionMemorySetsNoLimit(t *testing.T) {
	for _, mem := range []string{"", "0", "-5", "2048MB", "lots"} {
		t.Run(mem, func(t *testing.T) {
			restore(t)
			debug.SetMemoryLimit(math.MaxInt64)
			got := Configure(env(map[string]string{MemoryEnv: mem}))
			if got != (Settings{GCPercent: 400}) {
				t.Fatalf("Configure = %+v, want only GOGC", got)
			}
			if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
				t.Errorf("memory limit %d set from %q", limit, mem)
			}
		})
	}
}
