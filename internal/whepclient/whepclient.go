// Package whepclient is a receive-only WHEP client (draft-ietf-wish-whep)
// built on pion/webrtc. It serves two users: the integration tests, which
// need to see decoded pictures (Options.Decode), and whep-loadgen, which runs
// hundreds of sessions at once and only needs cheap per-packet accounting.
//
// A Session owns one PeerConnection and one read goroutine; both end on
// Close. The session's lifetime is not tied to the context given to Dial,
// which only bounds signalling.
package whepclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"
)

// ErrClosed is the session error after Close when nothing else ended it.
var ErrClosed = errors.New("whepclient: session closed by the client")

// Limits on what we read from the server, so a broken server cannot make a
// load generator with hundreds of sessions hold large bodies.
const (
	maxAnswerSize    = 1 << 20
	maxErrorBodySize = 4 << 10
	deleteTimeout    = 5 * time.Second
)

// Options configure a session. The zero value is a light, non-decoding
// client suitable for load generation.
type Options struct {
	// Decode turns on full mode: RTP is depacketized into access units,
	// the SPS is parsed for Width/Height and OnAccessUnit is called.
	Decode bool

	// OnAccessUnit receives every complete access unit in Decode mode and
	// is ignored otherwise. It runs on the session's read goroutine, so it
	// must not block for long: while it runs no RTP is read.
	OnAccessUnit func(au AccessUnit)

	// H265 offers H265/90000 (Main profile, tx-mode=SRST) besides H.264,
	// as Safari does: a server answers it for a path that publishes
	// H.265. Decode mode then depacketizes RFC 7798 (pion's
	// H265Depacketizer) and AccessUnit.H265 marks what it gives.
	H265 bool

	// BearerToken, when set, is sent as "Authorization: Bearer …" on the
	// POST and the DELETE.
	BearerToken string

	// HTTPClient defaults to a client with a 10 s timeout.
	HTTPClient *http.Client

	// SettingEngine may adjust pion's settings (network types, interface
	// filter, UDP mux) after the client's defaults are applied.
	SettingEngine func(*webrtc.SettingEngine)

	// NACK registers a NACK generator so the server can retransmit lost
	// packets. Off by default: it costs a timer goroutine per session.
	NACK bool

	// ReceiverReports sends an RTCP receiver report for each track once a
	// second, as browsers do: loss and jitter as the client saw them, which
	// a server may act on (a viewer whose link loses too much). Off by
	// default: it costs a timer goroutine and a lock per packet.
	ReceiverReports bool

	// TransportCC offers transport-wide congestion control as browsers
	// do (the header extension and transport-cc feedback) and sends the
	// feedback, with pion's generator (pion/interceptor pkg/twcc), so the
	// server estimates the link. Off by default: a ticker goroutine and a
	// lock per packet.
	TransportCC bool

	// Audio also offers a recvonly Opus (48 kHz stereo) m-section. A
	// server without audio for the path rejects it and video plays alone.
	Audio bool

	// OnAudioPacket receives every Opus packet of the audio track. It runs
	// on the audio read goroutine and must not block for long.
	OnAudioPacket func(AudioPacket)

	// SenderReports reads RTCP from the server to keep each track's
	// latest sender report (see SenderReport), at the cost of one more
	// goroutine per track.
	SenderReports bool

	// Logger receives the client's and pion's warnings; nil discards them.
	Logger *slog.Logger

	// AudioFirst offers the audio section before the video one, the
	// order of whip-whep's README example. Only with Audio.
	AudioFirst bool

	// BundleOnly offers as a browser under bundlePolicy "max-bundle"
	// that follows RFC 8843 §7.2 (Firefox) does: every m-section after
	// the first gets port 0 and a=bundle-only, asking to share the first
	// one's transport. pion writes neither itself, so the offer is
	// rewritten before it is POSTed.
	BundleOnly bool

	// RewriteAnswer, when set, may change the server's SDP answer before
	// it is applied. Tests use it to point the client at a relay that
	// stands for a lossy or narrow network in front of the server's
	// candidates.
	RewriteAnswer func(sdp string) string
}

// AccessUnit is one picture as reassembled from RTP in Decode mode. The
// client does not keep references to it after OnAccessUnit returns.
type AccessUnit struct {
	NALUs        [][]byte // without start codes
	IDR          bool     // an H.264 IDR, or an H.265 IRAP picture
	H265         bool     // the answer's video codec was H.265
	RTPTimestamp uint32
	FirstSeq     uint16
	LastSeq      uint16
	Received     time.Time // when the last packet of the picture was read
}

// Session is one WHEP viewer.
type Session struct {
	log        *slog.Logger
	pc         *webrtc.PeerConnection
	httpClient *http.Client
	token      string
	sessionURL string
	links      []string // the 201's Link header fields

	trackCh chan remoteTrack
	opt     Options
	srs     senderReports
	closing chan struct{}
	wg      sync.WaitGroup

	connected     chan struct{}
	connectedOnce sync.Once

	done     chan struct{}
	doneOnce sync.Once
	errMu    sync.Mutex
	err      error

	closeOnce sync.Once
	closeErr  error

	stats statsState
	recv  receiver
}

// Dial offers a recvonly H.264 session to endpoint and returns once the
// server's answer is applied. ICE and DTLS continue in the background; use
// WaitConnected to wait for media to be able to flow.
func Dial(ctx context.Context, endpoint string, opt Options) (*Session, error) {
	endpointURL, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("whepclient: bad endpoint URL %q: %w", endpoint, err)
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	httpClient := opt.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 10 * time.Second}
	}

	pc, err := newPeerConnection(opt, log)
	if err != nil {
		return nil, err
	}
	s := &Session{
		log:        log,
		pc:         pc,
		httpClient: httpClient,
		token:      opt.BearerToken,
		trackCh:    make(chan remoteTrack, 2),
		opt:        opt,
		closing:    make(chan struct{}),
		connected:  make(chan struct{}),
		done:       make(chan struct{}),
	}
	s.installHandlers()

	if err := s.negotiate(ctx, endpointURL); err != nil {
		// The PC never reached the server, so there is nothing to DELETE.
		_ = pc.Close()
		return nil, err
	}
	s.log = log.With("session", s.sessionURL)
	// Set up before run starts; only the read goroutine touches it after.
	s.recv.init(s, opt)

	s.wg.Add(1)
	go s.run()
	return s, nil
}

func (s *Session) installHandlers() {
	s.pc.OnTrack(func(t *webrtc.TrackRemote, r *webrtc.RTPReceiver) {
		// At most two transceivers are offered; anything beyond is ignored
		// rather than read by nobody forever. run starts the readers, so
		// every goroutine is counted before Close waits.
		select {
		case s.trackCh <- remoteTrack{t, r}:
		default:
		}
	})
	s.pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			s.connectedOnce.Do(func() {
				s.stats.setConnected(time.Now())
				close(s.connected)
			})
		case webrtc.PeerConnectionStateFailed:
			s.finish(errors.New("whepclient: peer connection failed (ICE or DTLS); check that the server's candidates are reachable"))
		case webrtc.PeerConnectionStateClosed:
			s.finish(errors.New("whepclient: peer connection closed"))
		}
	})
}

// remoteTrack is what pion's OnTrack hands over.
type remoteTrack struct {
	t *webrtc.TrackRemote
	r *webrtc.RTPReceiver
}

// run starts a reader for each remote track as it comes, counted in wg
// while run itself still is, and returns when the session ends. The video
// reader ends the session when its track ends; the others end when the
// PeerConnection closes.
func (s *Session) run() {
	defer s.wg.Done()
	for {
		select {
		case rt := <-s.trackCh:
			if s.opt.SenderReports {
				s.wg.Go(func() { s.srs.readLoop(rt) })
			}
			if rt.t.Kind() == webrtc.RTPCodecTypeAudio {
				s.wg.Go(func() { audioLoop(rt.t, s.opt.OnAudioPacket, &s.stats) })
				continue
			}
			s.wg.Go(func() { s.finish(s.recv.readLoop(rt.t)) })
		case <-s.closing:
			return
		case <-s.done:
			return
		}
	}
}

// finish records the first reason the session ended and closes Done.
func (s *Session) finish(err error) {
	s.doneOnce.Do(func() {
		s.errMu.Lock()
		s.err = err
		s.errMu.Unlock()
		close(s.done)
	})
}

// WaitConnected blocks until the PeerConnection is connected, the session
// ends, or ctx is done.
func (s *Session) WaitConnected(ctx context.Context) error {
	select {
	case <-s.connected:
		return nil
	case <-s.done:
		return fmt.Errorf("whepclient: session ended before connecting: %w", s.Err())
	case <-ctx.Done():
		return fmt.Errorf("whepclient: not connected: %w", ctx.Err())
	}
}

// Done is closed when the PeerConnection fails or closes or the track ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err reports why the session ended; nil while it is running.
func (s *Session) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// SessionURL is the absolute session URL from the Location header.
func (s *Session) SessionURL() string { return s.sessionURL }

// Links are the Link header fields of the server's 201, as sent.
func (s *Session) Links() []string { return s.links }

// SDP returns the session's offer and answer as applied: what an attack
// test needs to forge this viewer's ICE checks (its ufrag and password,
// the server's, and the server's candidates).
func (s *Session) SDP() (offer, answer string) {
	if d := s.pc.LocalDescription(); d != nil {
		offer = d.SDP
	}
	if d := s.pc.RemoteDescription(); d != nil {
		answer = d.SDP
	}
	return offer, answer
}

// Close sends DELETE for the session (best effort: the PeerConnection is
// closed whatever the server answers) and waits for the read goroutine.
// It returns the DELETE or close error, if any; later calls return the same.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		// Recorded first: the server tearing down its peer in answer to the
		// DELETE must not be reported as the reason the session ended.
		s.finish(ErrClosed)
		delErr := s.deleteSession()
		close(s.closing)
		pcErr := s.pc.Close()
		s.wg.Wait()
		if pcErr != nil {
			pcErr = fmt.Errorf("whepclient: close peer connection: %w", pcErr)
		}
		s.closeErr = errors.Join(delErr, pcErr)
	})
	return s.closeErr
}
