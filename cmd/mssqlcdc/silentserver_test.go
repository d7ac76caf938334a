package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
)

// A SQL Server address that accepts the TCP connection and never answers (the login waits
// for the prelogin reply): Ctrl-C or SIGTERM (the context ends) stops the command at once
// with the interrupted line and exit 130. Before, the CLI ignored SIGTERM for 12 minutes:
// go-mssqldb waited for the reply without a deadline and without the context.
func TestInterruptDuringSilentLogin(t *testing.T) {
	addr := sourcetest.SilentServer(t, sourcetest.NeverAnswers) // reads the prelogin, answers nothing
	dir := t.TempDir()
	t.Setenv("MSSQLCDC_TEST_SILENT_PW", "S3cret-pw")
	spec := fmt.Sprintf(`{"app_id":"orders-v1","source":{"dsn":"sqlserver://reader@%s?database=shop","password_env":"MSSQLCDC_TEST_SILENT_PW",
		"development":true,"encrypt":"disable","captureInstance":"dbo_orders"},
		"bronze":%q,"checkpoint":%q,"facts_table":%q}`, addr, filepath.Join(dir, "bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	type result struct {
		code   int
		errOut string
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"snapshot", "--spec", p}, &out, &errOut)
		done <- result{code, errOut.String()}
	}()
	select {
	case r := <-done:
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("stopped %s after the start, want within about 0.3 s", took)
		}
		if r.code != exitInterrupted || !strings.HasPrefix(r.errOut, "mssqlcdc snapshot: interrupted") || strings.Contains(r.errOut, "S3cret-pw") {
			t.Errorf("exit %d, stderr %q; want %d and the interrupted line", r.code, r.errOut, exitInterrupted)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the command ignored the interrupt for 15 s while SQL Server did not answer the login")
	}
}
