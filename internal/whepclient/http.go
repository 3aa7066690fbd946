package whepclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// HTTPError is returned by Dial (and Close) when the server answers with an
// unexpected status.
type HTTPError struct {
	StatusCode int
	Body       string // trimmed, at most 4 KiB
	RetryAfter string // the Retry-After header, if any
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("whepclient: server answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	if e.RetryAfter != "" {
		msg += " (retry after " + e.RetryAfter + ")"
	}
	return msg
}

func (s *Session) authorize(req *http.Request) {
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
}

func readHTTPError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodySize))
	return &HTTPError{
		StatusCode: resp.StatusCode,
		Body:       string(bytes.TrimSpace(body)),
		RetryAfter: resp.Header.Get("Retry-After"),
	}
}

func (s *Session) deleteSession() error {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.sessionURL, nil)
	if err != nil {
		return fmt.Errorf("whepclient: build DELETE: %w", err)
	}
	s.authorize(req)
	resp, err := s.httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("whepclient: DELETE %s: %w", s.sessionURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readHTTPError(resp)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBodySize))
	return nil
}
