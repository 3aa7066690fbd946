package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// Session is one viewer of the load generator.
type Session struct {
	ID        int
	Decode    bool      // full pion decode (sample session) rather than light mode
	Audio     bool      // an Opus m-section was offered
	DialStart time.Time // when the offer was started; first-packet times count from here

	cnt      counters
	feedback bool // sends its own RTCP (light, browser mode)
	mux      ice.UDPMux
	client   *whepclient.Session

	// Decode mode only, written by the client's read goroutine.
	auSeen   atomic.Bool
	idrFirst atomic.Int32 // 1: the first access unit was an IDR, -1: it was not
}

// Snapshot is a point-in-time copy of a session's counters.
type Snapshot struct {
	At                            time.Time
	Packets, Bytes, Frames        uint64
	SeqGaps, Reordered, Duplicate uint64
	SSRCChanges                   uint64
	Alive                         bool          // connected and not ended
	FirstPacket                   time.Duration // from DialStart; 0 = none yet
	LastPacketAt                  time.Time

	// The audio track, counted apart from the video above.
	AudioAnswered             bool // the server's answer accepted the offered audio
	AudioPackets, AudioBytes  uint64
	AudioGaps, AudioDuplicate uint64
	AudioFirstPacket          time.Duration // from DialStart; 0 = none yet

	// Video pauses longer than stallGap (counted for every session).
	Stalls uint64

	// Feedback the session sent itself (with ReceiverReports; a decoding
	// session's NACKs come from pion, uncounted).
	ReportsSent, NACKedSent, PLIsSent, RTCPUnsent uint64

	// Decode mode only.
	Keyframes      uint64
	DecodedFrames  uint64
	Width, Height  int
	FirstIDR       time.Duration // from DialStart; 0 = none yet
	IDRFirst       int           // 1 yes, -1 no, 0 not known yet
	AudioDecrypted uint64        // audio packets pion decrypted (SRTP authenticated)
}

// pionDiscard silences the UDP mux's own logger; session warnings go
// through whepclient's slog bridge instead.
var pionDiscard = logging.NewDefaultLeveledLoggerForScope("loadgen", logging.LogLevelDisabled, io.Discard)

// dialSession opens one WHEP session on its own socket bound to local and
// waits until ICE and DTLS are up.
func dialSession(ctx context.Context, id int, decode bool, local netip.Addr, r *reactor, cfg *Config, httpc *http.Client) (*Session, error) {
	s := &Session{ID: id, Decode: decode, Audio: cfg.Audio}
	acc := &accountant{c: &s.cnt, swallow: !decode}
	if cfg.ReceiverReports {
		// Decoding sessions too: pion's report interceptor would count
		// what reached pion, and the queue to it may drop a join's burst
		// on a busy generator, which the server would take for a lossy
		// link. The socket's counts are what the network delivered.
		acc.fb = newFeedback(rand.Uint32()|1, !decode)
		s.feedback = true
	}
	sock, err := r.open(local, acc)
	if err != nil {
		return nil, err
	}
	mux := webrtc.NewICEUDPMux(pionDiscard, sock)
	s.mux = mux

	log := cfg.logger().With("session", id)
	base := httpc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	tapped := &http.Client{Timeout: httpc.Timeout, Transport: &answerTap{base: base, onAnswer: func(answer []byte) {
		// A bad answer also fails whepclient's SetRemoteDescription,
		// which is the error the session reports.
		if err := s.cnt.learnAnswer(answer); err != nil {
			log.Warn("reading the SDP answer's audio section", "err", err)
		}
	}}}
	opt := whepclient.Options{
		Decode:      decode,
		Audio:       cfg.Audio,
		NACK:        cfg.NACK,
		BearerToken: cfg.BearerToken,
		HTTPClient:  tapped,
		Logger:      log,
		SettingEngine: func(se *webrtc.SettingEngine) {
			se.SetICEUDPMux(mux)
			nt := webrtc.NetworkTypeUDP4
			if local.Is6() {
				nt = webrtc.NetworkTypeUDP6
			}
			se.SetNetworkTypes([]webrtc.NetworkType{nt})
			se.SetIncludeLoopbackCandidate(local.IsLoopback())
		},
	}
	if decode {
		opt.OnAccessUnit = func(au whepclient.AccessUnit) {
			if s.auSeen.CompareAndSwap(false, true) {
				if au.IDR {
					s.idrFirst.Store(1)
				} else {
					s.idrFirst.Store(-1)
				}
			}
		}
	}

	s.DialStart = time.Now()
	client, err := whepclient.Dial(ctx, cfg.URL, opt)
	if err != nil {
		_ = mux.Close()
		return nil, err
	}
	s.client = client
	if err := client.WaitConnected(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if acc.fb != nil {
		acc.fb.out.Store(client)
	}
	sock.connected()
	if k := max(cfg.PinEvery, 1); cfg.Pin != "" && id%k == k-1 {
		if err := pin(ctx, client, cfg, httpc); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// pin POSTs cfg.Pin to the session's layer Link.
func pin(ctx context.Context, client *whepclient.Session, cfg *Config, httpc *http.Client) error {
	target := whepclient.LayerLink(client.SessionURL(), client.Links())
	if target == "" {
		return fmt.Errorf("loadgen: -pin: the server's 201 has no layer Link (rel=%q)", whepclient.LayerRel)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(cfg.Pin))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return fmt.Errorf("loadgen: -pin: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("loadgen: -pin %s: %s: %s", cfg.Pin, resp.Status, body)
	}
	return nil
}

// Snapshot copies the session's counters.
func (s *Session) Snapshot() Snapshot {
	c := &s.cnt
	out := Snapshot{
		At:          time.Now(),
		Packets:     c.packets.Load(),
		Bytes:       c.bytes.Load(),
		Frames:      c.frames.Load(),
		SeqGaps:     c.gaps.Load(),
		Reordered:   c.reordered.Load(),
		Duplicate:   c.dups.Load(),
		SSRCChanges: c.ssrcChanges.Load(),
		Alive:       s.Alive(),

		AudioAnswered:  c.audioAnswered.Load(),
		AudioPackets:   c.audioPackets.Load(),
		AudioBytes:     c.audioBytes.Load(),
		AudioGaps:      c.audioGaps.Load(),
		AudioDuplicate: c.audioDups.Load(),

		Stalls:      c.stalls.Load(),
		ReportsSent: c.reportsSent.Load(),
		NACKedSent:  c.nackedSent.Load(),
		PLIsSent:    c.plisSent.Load(),
		RTCPUnsent:  c.rtcpUnsent.Load(),
	}
	if t := c.audioFirst.Load(); t != 0 {
		out.AudioFirstPacket = time.Unix(0, t).Sub(s.DialStart)
	}
	if t := c.firstPacket.Load(); t != 0 {
		out.FirstPacket = time.Unix(0, t).Sub(s.DialStart)
	}
	if t := c.lastPacket.Load(); t != 0 {
		out.LastPacketAt = time.Unix(0, t)
	}
	if s.Decode && s.client != nil {
		st := s.client.Stats()
		out.Keyframes = st.Keyframes
		out.DecodedFrames = st.DecodedAUs
		out.Width, out.Height = st.Width, st.Height
		if !st.FirstIDRAt.IsZero() {
			out.FirstIDR = st.FirstIDRAt.Sub(s.DialStart)
		}
		out.IDRFirst = int(s.idrFirst.Load())
		out.AudioDecrypted = st.AudioPackets
	}
	return out
}

// Alive reports whether the session is connected and has not ended.
func (s *Session) Alive() bool {
	if s.client == nil {
		return false
	}
	select {
	case <-s.client.Done():
		return false
	default:
		return true
	}
}

// Err is why the session ended, nil while it runs.
func (s *Session) Err() error {
	if s.client == nil {
		return nil
	}
	return s.client.Err()
}

// Close ends the session (WHEP DELETE) and releases its socket.
func (s *Session) Close() error {
	var err error
	if s.client != nil {
		err = s.client.Close()
	}
	if cerr := s.mux.Close(); err == nil {
		err = cerr
	}
	return err
}

// flowing reports whether every track the server agreed to send has
// delivered a packet.
func (s *Session) flowing() bool {
	c := &s.cnt
	if c.firstPacket.Load() == 0 {
		return false
	}
	return !c.audioAnswered.Load() || c.audioFirst.Load() != 0
}
