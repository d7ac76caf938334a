package awsclient

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// countingConn counts the writes made on a client connection.
type countingConn struct {
	net.Conn
	mu     *sync.Mutex
	writes *int
}

func (c countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	*c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// opaqueBody hides the reader's type from net/http, as the SDK's own wrapper does.
type opaqueBody struct{ r io.Reader }

func (b *opaqueBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *opaqueBody) Close() error               { return nil }

// writesFor sends a PUT of body (its type hidden) through hc around a transport whose
// connections count their writes, and returns the writes and the body the server got.
func writesFor(t *testing.T, wrap func(aws.HTTPClient) aws.HTTPClient, body []byte, length int64) (int, []byte) {
	t.Helper()
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	var mu sync.Mutex
	writes := 0
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, mu: &mu, writes: &writes}, nil
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Body, req.ContentLength = &opaqueBody{bytes.NewReader(body)}, length
	resp, err := wrap(&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	return writes, got
}

// A small body leaves with its headers in one write, unchanged; net/http alone takes two
// (the premise: were it one, oneWrite would be dead weight); a body past oneWriteMax is
// left to net/http.
func TestSmallBodiesLeaveInOneWrite(t *testing.T) {
	none := func(hc aws.HTTPClient) aws.HTTPClient { return hc }
	for _, n := range []int{1, 258, oneWriteMax} {
		body := bytes.Repeat([]byte("b"), n)
		if w, got := writesFor(t, withOneWrite, body, int64(n)); w != 1 || !bytes.Equal(got, body) {
			t.Errorf("%d bytes through oneWrite: %d writes, body intact %v; want 1 write", n, w, bytes.Equal(got, body))
		}
		if w, _ := writesFor(t, none, body, int64(n)); w != 2 {
			t.Errorf("%d bytes through net/http alone: %d writes, want 2 (headers flushed first)", n, w)
		}
	}
	body := bytes.Repeat([]byte("b"), oneWriteMax+1)
	if w, got := writesFor(t, withOneWrite, body, int64(len(body))); w != 2 || !bytes.Equal(got, body) {
		t.Errorf("%d bytes: %d writes, body intact %v; want it left to net/http (2 writes)", len(body), w, bytes.Equal(got, body))
	}
}

// A body shorter than its Content-Length is an error before anything is sent, as net/http
// refuses one too.
func TestOneWriteShortBody(t *testing.T) {
	req, err := http.NewRequest(http.MethodPut, "http://127.0.0.1:1/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Body, req.ContentLength = &opaqueBody{strings.NewReader("abc")}, 10
	sent := false
	c := oneWrite{next: doFunc(func(*http.Request) (*http.Response, error) { sent = true; return nil, nil })}
	if _, err := c.Do(req); err == nil || sent || !strings.Contains(err.Error(), "10 bytes") {
		t.Fatalf("short body: err %v, sent %v", err, sent)
	}
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// Both clients send through oneWrite around the SDK's resolved buildable client (with the
// defaults mode's settings), once.
func TestClientsSendThroughOneWrite(t *testing.T) {
	cfg := aws.Config{Region: DefaultRegion}
	for name, hc := range map[string]aws.HTTPClient{
		"s3":       NewS3(cfg, "http://127.0.0.1:1", true).Options().HTTPClient,
		"dynamodb": NewDynamoDB(cfg, "http://127.0.0.1:1").Options().HTTPClient,
		"s3 again": s3.New(NewS3(cfg, "", false).Options(), S3Options).Options().HTTPClient,
		"dynamodb again": dynamodb.New(NewDynamoDB(cfg, "").Options(),
			DynamoDBOptions).Options().HTTPClient,
	} {
		ow, ok := hc.(oneWrite)
		if !ok {
			t.Errorf("%s: HTTP client %T, want oneWrite", name, hc)
			continue
		}
		if _, ok := ow.next.(*awshttp.BuildableClient); !ok {
			t.Errorf("%s: oneWrite around %T, want the SDK's *BuildableClient", name, ow.next)
		}
	}
}
