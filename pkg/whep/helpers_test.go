package whep

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pion/webrtc/v4"
	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSource stands in for the hub: it holds published paths, emulates the
// hub's GOP cache (a new reader starts at the last IDR) and hands out
// readers with unbounded queues.
type testSource struct {
	mu    sync.Mutex
	paths map[string]*testPath
	errs  map[string]error // path → error AddReader returns
}

type testPath struct {
	mu      sync.Mutex
	gop     []*av.AccessUnit
	readers map[*testReader]bool
	ended   bool
}

type testReader struct {
	path     *testPath
	session  string
	mu       sync.Mutex
	queue    []queued
	attached bool
	ended    bool
	notify   atomic.Pointer[func()] // SetWake's
	closed   chan struct{}
	once     sync.Once
}

type queued struct {
	au      *av.AccessUnit
	catchUp bool
}

func newTestSource() *testSource {
	return &testSource{paths: map[string]*testPath{}, errs: map[string]error{}}
}

func (s *testSource) publish(path string) *testPath {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &testPath{readers: map[*testReader]bool{}}
	s.paths[path] = p
	return p
}

func (s *testSource) AddReader(path, session string) (Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.errs[path]; err != nil {
		return nil, err
	}
	p := s.paths[path]
	if p == nil {
		return nil, hub.ErrNoPublisher
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil, hub.ErrNoPublisher
	}
	r := &testReader{path: p, session: session, closed: make(chan struct{})}
	p.readers[r] = true
	return r, nil
}

// errNoRendition: the test source transcodes nothing, so a viewer that
// cannot take a path's video is refused with the codec error itself.
var errNoRendition = errors.New("the test source makes no H.264 rendition")

func (s *testSource) AddTranscodedReader(path, session string) (Reader, error) {
	return nil, errNoRendition
}

// hubSource adapts the real hub as cmd/srtwhep's composition root does.
func hubSource(h *hub.Hub) Source {
	return SourceFuncs[*hub.Reader]{Add: h.AddPendingReader, AddTranscoded: h.AddPendingTranscodedReader}
}

// write publishes one access unit to every attached reader.
func (p *testPath) write(au *av.AccessUnit) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if au.IDR {
		p.gop = p.gop[:0]
	}
	if len(p.gop) > 0 || au.IDR {
		p.gop = append(p.gop, au)
	}
	for r := range p.readers {
		r.push(queued{au: au}, true)
	}
}

// end is the publisher going away: readers get hub.ErrEnded.
func (p *testPath) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	for r := range p.readers {
		r.mu.Lock()
		r.ended = true
		r.mu.Unlock()
		r.signal()
	}
}

func (p *testPath) readerCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.readers)
}

// attachedCount is how many of the path's readers are attached (their
// sessions connected).
func (p *testPath) attachedCount() (n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r := range p.readers {
		r.mu.Lock()
		if r.attached {
			n++
		}
		r.mu.Unlock()
	}
	return n
}

func (r *testReader) push(q queued, onlyAttached bool) {
	r.mu.Lock()
	if onlyAttached && !r.attached {
		r.mu.Unlock()
		return
	}
	r.queue = append(r.queue, q)
	r.mu.Unlock()
	r.signal()
}

func (r *testReader) signal() {
	if f := r.notify.Load(); f != nil {
		(*f)()
	}
}

func (r *testReader) SetWake(f func()) { r.notify.Store(&f) }

// Poll returns the next queued frame, hub.ErrEnded once the path ended.
func (r *testReader) Poll() (hub.Frame, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) > 0 {
		q := r.queue[0]
		r.queue = r.queue[1:]
		return hub.Frame{Video: q.au, CatchUp: q.catchUp}, true, nil
	}
	if r.ended {
		return hub.Frame{}, false, hub.ErrEnded
	}
	return hub.Frame{}, false, nil
}

func (r *testReader) CountSent(packets, bytes int) {}

// Claim: the test source's readers count from AddReader on (it has no
// caps to claim a seat under).
func (r *testReader) Claim() error { return nil }

// Dropped: the test source's queues are unbounded.
func (r *testReader) Dropped() uint64 { return 0 }

func (r *testReader) Attach() {
	r.path.mu.Lock()
	defer r.path.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attached = true
	for _, au := range r.path.gop {
		r.queue = append(r.queue, queued{au: au, catchUp: true})
	}
	r.signal()
}

func (r *testReader) Close() {
	r.once.Do(func() {
		r.path.mu.Lock()
		delete(r.path.readers, r)
		r.path.mu.Unlock()
		close(r.closed)
	})
}

// startServer runs a Server on loopback with src and returns it with an
// httptest server for its handler; both stop at test cleanup.
func startServer(t *testing.T, src Source, mod func(*Config)) (*Server, *httptest.Server) {
	srv, hs, _ := startServerStop(t, src, mod)
	return srv, hs
}

// startServerStop is startServer that also returns a function that ends
// Run (idempotent) and reports Run's error.
func startServerStop(t *testing.T, src Source, mod func(*Config)) (*Server, *httptest.Server, func() error) {
	return startServerOn(t, src, nil, mod)
}

// startServerNet is startServer whose media plane's sockets and addresses
// netMod changes.
func startServerNet(t *testing.T, src Source, netMod func(*plane.Config), mod func(*Config)) (*Server, *httptest.Server) {
	srv, hs, _ := startServerOn(t, src, netMod, mod)
	return srv, hs
}

// startServerOn is startServerStop with netMod's changes to the media
// plane. The plane takes the Server's handshake timeout and logger, as
// cmd/srtwhep's wiring gives it the config's.
func startServerOn(t *testing.T, src Source, netMod func(*plane.Config), mod func(*Config)) (*Server, *httptest.Server, func() error) {
	t.Helper()
	cfg := Config{
		Source: src,
		Logger: testLogger(t),
		// Every test posts from 127.0.0.1, many of them more often than a
		// viewer would; the offer bucket has its own tests (pkg/admission).
		Limits: admission.ViewerLimits{OfferRate: 1 << 20, OfferBurst: 1 << 20},
	}
	if mod != nil {
		mod(&cfg)
	}
	pc := plane.Config{
		UDPListen:        "127.0.0.1:0",
		IncludeLoopback:  true,
		HandshakeTimeout: cfg.HandshakeTimeout,
		Logger:           cfg.Logger,
	}
	if netMod != nil {
		netMod(&pc)
	}
	cfg.Plane = testPlane(t, pc)
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	hs := httptest.NewServer(srv.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})))
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() {
		hs.Close()
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return srv, hs, stop
}

// testPlane builds (and does not start) the media plane.
func testPlane(t testing.TB, pc plane.Config) Plane {
	t.Helper()
	p, err := mediaplane.NewPlane(pc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loopbackPlane is testPlane on a loopback port with loopback candidates.
func loopbackPlane(t testing.TB) Plane {
	return testPlane(t, plane.Config{UDPListen: "127.0.0.1:0", IncludeLoopback: true})
}

func testLogger(t *testing.T) *slog.Logger { return testkit.TestLogger(t, slog.LevelInfo) }

func h264Codec(pt uint8, profile string, mode int) webrtc.RTPCodecParameters {
	return webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType:     webrtc.MimeTypeH264,
			ClockRate:    90000,
			SDPFmtpLine:  "level-asymmetry-allowed=1;packetization-mode=" + strconv.Itoa(mode) + ";profile-level-id=" + profile,
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}},
		},
		PayloadType: webrtc.PayloadType(pt),
	}
}

// postOffer posts a default pion offer to url and fails the test unless
// the answer is a 201.
func postOffer(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, body := post(t, url, "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d %q, want 201", url, resp.StatusCode, body)
	}
	return resp, body
}

func post(t *testing.T, url, contentType, body string) (*http.Response, string) {
	t.Helper()
	return do(t, http.MethodPost, url, contentType, body, nil)
}

func do(t *testing.T, method, url, contentType, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	return testkit.Do(t, method, url, contentType, body, hdr)
}

func (r *testReader) Backlog() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}
