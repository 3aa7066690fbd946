package whepclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// SSERel is the Link relation of WHEP's server-sent events extension.
const SSERel = "urn:ietf:params:whep:ext:core:server-sent-events"

// Event is one server-sent event as a WHEP player reads it: the type and
// the data line, with the time it was read.
type Event struct {
	Type string
	Data json.RawMessage
	At   time.Time
}

// SSELink returns the target of the server-sent events Link among links
// (resolved against base) and its events attribute; "" when there is none.
func SSELink(base string, links []string) (target string, events []string) {
	for _, field := range links {
		for _, l := range strings.Split(field, ",<") {
			l = strings.TrimPrefix(strings.TrimSpace(l), "<")
			end := strings.IndexByte(l, '>')
			if end < 0 || !strings.Contains(l[end:], `rel="`+SSERel+`"`) {
				continue
			}
			u, err := url.Parse(base)
			if err != nil {
				return "", nil
			}
			ref, err := u.Parse(l[:end])
			if err != nil {
				return "", nil
			}
			if i := strings.Index(l, `events="`); i >= 0 {
				rest := l[i+len(`events="`):]
				if j := strings.IndexByte(rest, '"'); j >= 0 {
					events = strings.Split(rest[:j], ",")
				}
			}
			return ref.String(), events
		}
	}
	return "", nil
}

// EventStream is an open event stream: POSTed, and read by one GET until
// Close or the server ends it.
type EventStream struct {
	URL    string // the stream's Location
	Events <-chan Event
	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// eventBuffer bounds what a test may leave unread.
const eventBuffer = 256

// OpenEvents creates an event stream at the SSE entry point sseURL for the
// named events (nil: the server's choice, an empty body) and starts
// reading it.
func OpenEvents(ctx context.Context, client *http.Client, sseURL string, names []string) (*EventStream, error) {
	if client == nil {
		client = http.DefaultClient
	}
	var body []byte
	if names != nil {
		body, _ = json.Marshal(names)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sseURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if names != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		defer resp.Body.Close()
		return nil, readHTTPError(resp)
	}
	resp.Body.Close()
	base, _ := url.Parse(sseURL)
	loc, err := base.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return nil, fmt.Errorf("whepclient: event stream 201 without a usable Location (%q)", resp.Header.Get("Location"))
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	get, err := http.NewRequestWithContext(rctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	get.Header.Set("Accept", "text/event-stream")
	gr, err := client.Do(get)
	if err != nil {
		cancel()
		return nil, err
	}
	if gr.StatusCode != http.StatusOK || !strings.HasPrefix(gr.Header.Get("Content-Type"), "text/event-stream") {
		gr.Body.Close()
		cancel()
		return nil, fmt.Errorf("whepclient: GET event stream: %s, Content-Type %q", gr.Status, gr.Header.Get("Content-Type"))
	}
	ch := make(chan Event, eventBuffer)
	es := &EventStream{URL: loc.String(), Events: ch, client: client, cancel: cancel, done: make(chan struct{})}
	go es.read(gr, ch)
	return es, nil
}

// read parses the text/event-stream: fields it does not know (id, retry,
// comments) are skipped, as the extension asks of players.
func (es *EventStream) read(resp *http.Response, ch chan<- Event) {
	defer close(es.done)
	defer close(ch)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var typ string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				if typ == "" {
					typ = "message"
				}
				select {
				case ch <- Event{Type: typ, Data: json.RawMessage(data), At: time.Now()}:
				default:
					es.setErr(errors.New("whepclient: event buffer full; the test reads too slowly"))
					return
				}
			}
			typ, data = "", nil
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	es.setErr(sc.Err())
}

func (es *EventStream) setErr(err error) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.err == nil {
		es.err = err
	}
}

// Err is why reading ended (nil for the server closing the stream).
func (es *EventStream) Err() error {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.err
}

// Next returns the first event match accepts, reading (and dropping) the
// others; an error when the stream ends first or timeout passes.
func (es *EventStream) Next(timeout time.Duration, match func(Event) bool) (Event, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-es.Events:
			if !ok {
				return Event{}, fmt.Errorf("whepclient: event stream ended (%v)", es.Err())
			}
			if match(ev) {
				return ev, nil
			}
		case <-deadline.C:
			return Event{}, fmt.Errorf("whepclient: no matching event within %v", timeout)
		}
	}
}

// Delete ends the stream on the server (DELETE) and returns its status.
func (es *EventStream) Delete(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, es.URL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := es.client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Close stops reading and waits for the reader.
func (es *EventStream) Close() {
	es.cancel()
	<-es.done
}
