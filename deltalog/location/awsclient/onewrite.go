package awsclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// A request's small body is handed to net/http as an in-memory reader, so that its
// headers and its body leave in one write. net/http flushes a request's headers in a
// write of their own before copying the body unless the body is one of the standard
// library's in-memory readers (net/http transferWriter.FlushHeaders, Go issue 22088), and
// the SDK hands every body over wrapped in a reader of its own (smithy-go's
// Request.Build), so every PUT and every DynamoDB request went out in two writes: two
// syscalls, two TCP segments, and over HTTPS two TLS records. A stream batch makes ~7
// such requests (docs/performance.md § Issue 13: a code-level cut). Past oneWriteMax the
// body does not fit net/http's 4 KiB write buffer with its headers anyway and is left as
// it is.

// oneWriteMax is the largest body read ahead: with a signed request's ~1–1.5 KB of
// headers it fits net/http's 4 KiB write buffer (Transport.WriteBufferSize's default).
const oneWriteMax = 2048

// oneWrite is the HTTP client of every client built here, around the one the SDK
// resolved (its buildable client with the defaults mode's timeouts).
type oneWrite struct{ next aws.HTTPClient }

// Do reads a body of known length up to oneWriteMax into memory and sends the request
// with it; any other request as it is.
func (c oneWrite) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength > 0 && req.ContentLength <= oneWriteMax {
		buf := make([]byte, req.ContentLength)
		_, err := io.ReadFull(req.Body, buf)
		// net/http closes the request's body whatever happens; the SDK rewinds its own
		// stream for a retry, not this reader.
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body of %d bytes: %w", req.ContentLength, err)
		}
		req.Body = io.NopCloser(bytes.NewReader(buf))
	}
	return c.next.Do(req)
}

// withOneWrite puts oneWrite around the resolved HTTP client hc (nil stays nil: the SDK
// resolves one before any option function runs).
func withOneWrite(hc aws.HTTPClient) aws.HTTPClient {
	if hc == nil {
		return nil
	}
	if _, ok := hc.(oneWrite); ok {
		return hc
	}
	return oneWrite{next: hc}
}
