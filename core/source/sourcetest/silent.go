package sourcetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// SilentServer listens on 127.0.0.1 (never another address: the sandbox the tests run in
// may accept an outbound connection to any address) and hands each connection it accepts
// to serve; it returns the listener's host:port. The listener and every accepted
// connection close when the test ends. With NeverAnswers it is a SQL Server address that
// accepts TCP and never answers the login (docs/operations.md, UnreachableError).
func SilentServer(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// NeverAnswers reads what the client sends and writes nothing (SilentServer's serve).
func NeverAnswers(c net.Conn) { _, _ = io.Copy(io.Discard, c) }
