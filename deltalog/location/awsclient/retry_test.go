package awsclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// arrival is one request as the server read it: its declared length, the body it got and
// the headers that describe the body.
type arrival struct {
	length  int64
	body    []byte
	decoded string
	enc     string
}

// dropAt is a server that closes the connection of its request number drop (from 1) part
// way through the request's body (as a reset connection would be), and answers every
// other request whole; its report is the whole requests and the connections accepted.
func dropAt(t *testing.T, drop int, tls bool, answer string) (*httptest.Server, func() ([]arrival, int)) {
	t.Helper()
	var mu sync.Mutex
	var got []arrival
	n := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		drop := n == drop
		mu.Unlock()
		if drop {
			// Read a few bytes of the body, then close the connection without an answer.
			_, _ = io.ReadFull(r.Body, make([]byte, 5))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		mu.Lock()
		got = append(got, arrival{r.ContentLength, body,
			r.Header.Get("X-Amz-Decoded-Content-Length"), r.Header.Get("Content-Encoding")})
		mu.Unlock()
		if answer != "" {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = io.WriteString(w, answer)
		}
	})
	srv := httptest.NewUnstartedServer(h)
	conns := 0
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, func() ([]arrival, int) {
		mu.Lock()
		defer mu.Unlock()
		return append([]arrival(nil), got...), conns
	}
}

func retryConfig(srv *httptest.Server) aws.Config {
	return aws.Config{
		Region:      DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		HTTPClient:  srv.Client(),
		// As config.LoadDefaultConfig resolves it (location's options test).
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	}
}

// A small PUT whose first connection drops mid-body is sent again by the SDK's retry and
// arrives whole: oneWrite reads the rewound stream of each attempt afresh. Over HTTPS the
// S3 client sends an aws-chunked body with a trailing checksum, whose Content-Length is
// the encoded length; the retried body still carries the whole object and the trailer.
func TestSmallPutRetriedWholeAfterADroppedConnection(t *testing.T) {
	for _, tls := range []bool{false, true} {
		srv, arrivals := dropAt(t, 1, tls, "")
		payload := bytes.Repeat([]byte("0123456789"), 100)
		_, err := NewS3(retryConfig(srv), srv.URL, true).PutObject(context.Background(), &s3.PutObjectInput{
			Bucket: aws.String("b"), Key: aws.String("t/_delta_log/00000000000000000001.json"),
			Body: bytes.NewReader(payload),
		})
		if err != nil {
			t.Fatalf("tls %v: put: %v", tls, err)
		}
		got, _ := arrivals()
		if len(got) != 1 {
			t.Fatalf("tls %v: %d whole arrivals, want 1 (the retry)", tls, len(got))
		}
		a := got[0]
		if a.length != int64(len(a.body)) {
			t.Errorf("tls %v: Content-Length %d, body %d bytes", tls, a.length, len(a.body))
		}
		if a.decoded == "" {
			if tls {
				t.Errorf("tls: plain body (encoding %q), want the aws-chunked body with a trailer", a.enc)
			}
			if !bytes.Equal(a.body, payload) {
				t.Errorf("tls %v: body %q, want the payload", tls, a.body)
			}
			continue
		}
		// aws-chunked: <hex size>\r\n<data>\r\n0\r\n<trailer>\r\n\r\n
		if n, _ := strconv.Atoi(a.decoded); n != len(payload) || !strings.Contains(a.enc, "aws-chunked") {
			t.Errorf("tls %v: decoded length %q, encoding %q", tls, a.decoded, a.enc)
		}
		br := bufio.NewReader(bytes.NewReader(a.body))
		line, _ := br.ReadString('\n')
		size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil || size != int64(len(payload)) {
			t.Fatalf("tls %v: first chunk size %q", tls, line)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(br, data); err != nil || !bytes.Equal(data, payload) {
			t.Errorf("tls %v: chunk data differs from the payload", tls)
		}
		if rest, _ := io.ReadAll(br); !strings.Contains(string(rest), "x-amz-checksum-crc32:") {
			t.Errorf("tls %v: no checksum trailer after the data: %q", tls, rest)
		}
	}
}

// A DynamoDB request whose connection drops mid-body is sent again whole: on a new
// connection (the first request's), and on a kept-alive one (the second request's: net/http
// does not resend a POST itself, the SDK's retry does).
func TestSmallDynamoDBRequestRetriedWholeAfterADroppedConnection(t *testing.T) {
	for _, drop := range []int{1, 2} {
		srv, arrivals := dropAt(t, drop, false, "{}")
		ddb := NewDynamoDB(retryConfig(srv), srv.URL)
		for i := range 2 {
			file := fmt.Sprintf("%020d.json", i)
			_, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{
				TableName: aws.String("delta_log"),
				Item: map[string]ddbtypes.AttributeValue{
					"tablePath": &ddbtypes.AttributeValueMemberS{Value: "s3://b/t"},
					"fileName":  &ddbtypes.AttributeValueMemberS{Value: file},
				},
			})
			if err != nil {
				t.Fatalf("drop %d: put item %d: %v", drop, i, err)
			}
		}
		got, conns := arrivals()
		if len(got) != 2 || conns != 2 {
			t.Fatalf("drop %d: %d whole arrivals on %d connections, want 2 on 2 (the second kept alive or the retry's)", drop, len(got), conns)
		}
		for i, a := range got {
			file := fmt.Sprintf(`"fileName":{"S":"%020d.json"}`, i)
			if a.length != int64(len(a.body)) || !bytes.Contains(a.body, []byte(file)) {
				t.Errorf("drop %d: body %d (%d declared): %s", drop, i, a.length, a.body)
			}
		}
	}
}
