package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// hookAnswers are the answers the unit tests' hook gives (204 allow, 403
// deny) and the shapes a real control plane sends: bodies, chunking,
// informational responses first, redirects, and broken ones.
var hookAnswers = []string{
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"allow\":true}\n",
	"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nno\n",
	"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nokay\r\n0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nshort",
	"HTTP/1.0 200 OK\r\n\r\nbody until close",
	"HTTP/1.1 299 Custom\r\n\r\n",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"HTTP/1.1 OK\r\n\r\n",
	"200 OK\r\n\r\n",
	"",
}

func TestFuzzCorpusHook(t *testing.T) {
	var seeds [][]any
	for _, a := range hookAnswers {
		seeds = append(seeds, []any{[]byte(a)})
	}
	testkit.SeedCorpus(t, "FuzzHookAnswer", seeds...)
}

// allowStatus matches a 2xx status line anywhere in an answer: the only
// kind of answer that may allow.
var allowStatus = regexp.MustCompile(`HTTP/\d+\.\d+ +2\d\d`)

// FuzzHookAnswer has a real HTTP server on loopback answer the hook's
// request with arbitrary bytes: whatever the hook service sends, Check
// must not panic or hang, must deny unless the answer had a 2xx status,
// and every denial must wrap ErrDenied so the callers map it to a
// refusal rather than an internal error.
func FuzzHookAnswer(f *testing.F) {
	for _, a := range hookAnswers {
		f.Add([]byte(a))
	}
	var answer atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request is read to its end first, so the client never
		// meets a reset while it still writes.
		_, _ = io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = buf.Write(*answer.Load())
		_ = buf.Flush()
	}))
	f.Cleanup(srv.Close)

	const timeout = time.Second
	f.Fuzz(func(t *testing.T, data []byte) {
		answer.Store(&data)
		// A new hook per input: a connection kept alive from the previous
		// answer would make this one depend on it.
		h := NewHook(HookConfig{URL: srv.URL + "/auth", Timeout: timeout})
		defer h.Close()
		start := time.Now()
		err := h.Check(context.Background(), Request{Action: ActionRead, Path: "live/cam1", IP: "127.0.0.1"})
		if d := time.Since(start); d > timeout+time.Second {
			t.Fatalf("Check took %v with a %v timeout", d, timeout)
		}
		if err != nil {
			if !errors.Is(err, ErrDenied) {
				t.Fatalf("error %v does not wrap ErrDenied", err)
			}
			return
		}
		if !allowStatus.Match(data) {
			t.Fatalf("allowed on an answer without a 2xx status: %q", data)
		}
	})
}
