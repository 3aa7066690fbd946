package mediaplane

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/srtp/v3"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// Viewer states, in the only order they move.
const (
	stateNew       int32 = iota // answered, no valid check yet
	stateChecking               // ICE checks arrive; DTLS may be under way
	stateConnected              // SRTP keys in place
	stateClosed
)

// ViewerConfig is what a viewer needs beyond its offer.
type ViewerConfig struct {
	// Video is the H.264 codec to answer with: the viewer's payload type
	// and fmtp (the caller picks them from the offer).
	Video Codec
	// Audio is the Opus codec to answer the offer's first audio section
	// with; nil answers video only and rejects audio.
	Audio *Codec
	// OnRTCP receives every RTCP compound packet the viewer sends,
	// decrypted and parsed (receiver reports, NACK, PLI, FIR, REMB…). It
	// runs on the goroutine that read the packet: the UDP demultiplexer,
	// which serves every viewer, or the viewer's ICE-TCP connection. Calls
	// for one viewer never overlap. It must not block, and pkts is valid
	// only during the call.
	OnRTCP func(pkts []rtcp.Packet)
	// OnDone, when set, is called once when the viewer has ended, with
	// the reason Err returns, on whichever goroutine ended it (the
	// janitor, the demultiplexer, a handshake, Close): it must not block.
	// By then, and once Close has returned, OnRTCP is not called again.
	OnDone func(err error)
	// OnICEStart, when set, is called once, on the goroutine that read
	// the viewer's first valid ICE check; it must not block.
	OnICEStart func()
	// Log receives the viewer's events (connected, closed); nil means
	// the server's logger. Give it the caller's keys (path, session).
	Log *slog.Logger
}

// Codec is one answered codec.
type Codec struct {
	PayloadType uint8
	Fmtp        string // without the payload type; "" for none
	// Video is the video codec the answer names (rtpmap H264 or
	// H265); unused for audio.
	Video av.Codec
}

// peerAddr is where a viewer's media goes, with the socket address the
// kernel wants precomputed, so the send path only copies it.
type peerAddr struct {
	route
	name sockaddr
	nlen uint32
}

// Viewer is one WebRTC peer: its ICE credentials, its DTLS handshake and
// its SRTP contexts. Connected viewers own no goroutine.
type Viewer struct {
	srv   *Server
	cfg   ViewerConfig
	video uint32 // our SSRCs
	audio uint32 // 0 without audio
	fp    remoteFingerprint

	created  time.Time
	state    atomic.Int32
	lastSeen atomic.Int64             // unix nanoseconds of the last valid check or RTCP; only ICE-TCP expiry reads it
	remote   atomic.Pointer[peerAddr] // only ever a proven address (consent.go)
	consent  consentState

	// answerUfrag is our ICE ufrag in the answer NewViewer returned; set
	// once, before the viewer is shared.
	answerUfrag string

	// Guarded by srv.mu.
	creds, pending *iceCreds
	addrs          []route

	// mu guards the DTLS state.
	mu          sync.Mutex
	pipe        *pipe // during the handshake
	detached    bool  // handshake done, pion's Conn closed (see doc.go)
	flight      [][]byte
	closeNotify []byte
	// alerts opens the viewer's alert records after the handshake
	// (alert.go); nil when the suite's records cannot be opened.
	alerts  *alertOpener
	replays int

	// in decrypts the viewer's RTCP. inMu serialises its use, and the
	// OnRTCP calls, between the UDP demultiplexer and ICE-TCP readers.
	in   atomic.Pointer[srtp.Context]
	inMu sync.Mutex

	// sendMu guards out, which encrypts RTP and RTCP to the viewer.
	sendMu sync.Mutex
	out    *srtp.Context

	ctx       context.Context // ends the handshake when the viewer ends
	cancel    context.CancelFunc
	connected chan struct{}
	done      chan struct{}
	endOnce   sync.Once
	err       error // set before done is closed

	packets, bytes, rtcpIn atomic.Uint64
}

// VideoSSRC and AudioSSRC are the viewer's SSRCs, as the answer announced
// them; the caller stamps its packets with them. AudioSSRC is 0 without
// audio.
func (v *Viewer) VideoSSRC() uint32 { return v.video }

// AudioSSRC is the audio SSRC, 0 when the viewer has no audio.
func (v *Viewer) AudioSSRC() uint32 { return v.audio }

// Connected is closed once the viewer has SRTP keys: media may flow.
func (v *Viewer) Connected() <-chan struct{} { return v.connected }

// Done is closed when the viewer has ended; Err says why.
func (v *Viewer) Done() <-chan struct{} { return v.done }

// Err is why the viewer ended, nil before.
func (v *Viewer) Err() error {
	select {
	case <-v.done:
		return v.err
	default:
		return nil
	}
}

// ICEStarted reports whether a valid ICE check has arrived: the viewer
// is taking part, so a short "did it even start" timeout may stop.
func (v *Viewer) ICEStarted() bool { return v.state.Load() != stateNew }

// OverTCP reports whether the viewer's media currently goes over ICE-TCP,
// where a write blocks while the link is full (over UDP none does).
func (v *Viewer) OverTCP() bool {
	r := v.remote.Load()
	return r != nil && r.tcp != nil
}

// Remote is the address media goes to, invalid before the first check.
func (v *Viewer) Remote() netip.AddrPort {
	if r := v.remote.Load(); r != nil {
		return r.ap
	}
	return netip.AddrPort{}
}

// RemoteTCP reports whether media goes over ICE-TCP.
func (v *Viewer) RemoteTCP() bool {
	r := v.remote.Load()
	return r != nil && r.tcp != nil
}

// ViewerStats counts one viewer's traffic.
type ViewerStats struct {
	PacketsSent, BytesSent uint64 // SRTP datagrams and their sizes
	RTCPReceived           uint64 // RTCP compound packets handed to OnRTCP
}

// Stats returns the viewer's counters.
func (v *Viewer) Stats() ViewerStats {
	return ViewerStats{PacketsSent: v.packets.Load(), BytesSent: v.bytes.Load(), RTCPReceived: v.rtcpIn.Load()}
}

// Close ends the viewer: a connected one gets an RTCP BYE for its SSRCs
// and the DTLS close_notify, so it leaves "connected" at once instead of
// waiting for ICE to time out.
func (v *Viewer) Close() { v.end(plane.ErrClosed) }

// end closes the viewer once, for reason.
func (v *Viewer) end(reason error) {
	v.endOnce.Do(func() {
		prev := v.state.Swap(stateClosed)
		s := v.srv
		s.mu.Lock()
		delete(s.viewers, v)
		for _, c := range []*iceCreds{v.creds, v.pending} {
			if c != nil && s.byUfrag[c.ufrag] == c {
				delete(s.byUfrag, c.ufrag)
			}
		}
		var tcps []*tcpConn
		for _, a := range v.addrs {
			if s.byAddr[a] == v {
				delete(s.byAddr, a)
			}
			if a.tcp != nil {
				tcps = append(tcps, a.tcp)
			}
		}
		v.addrs = nil
		s.mu.Unlock()
		v.cancel()
		r := v.remote.Load()
		if r != nil && r.tcp != nil {
			// A media write blocked on a full TCP buffer must neither hold
			// back the goodbye nor keep this goroutine.
			r.tcp.limitWrites(goodbyeWait)
		}
		if prev == stateConnected && reason != plane.ErrPeerClosed {
			v.sayGoodbye()
		}
		for _, c := range tcps {
			c.close()
		}
		v.sendMu.Lock()
		v.out = nil
		v.sendMu.Unlock()
		// Under inMu: once end returns, no OnRTCP call runs or will run.
		v.inMu.Lock()
		v.in.Store(nil)
		v.inMu.Unlock()
		v.err = reason
		close(v.done)
		// A viewer that never sent a check has nothing to tell per viewer
		// (the WHEP layer sums those up, one line a second): at Info a
		// flood of offers that never start ICE would be a line each.
		level := slog.LevelInfo
		if prev == stateNew {
			level = slog.LevelDebug
		}
		v.log().Log(context.Background(), level, "viewer closed", "media_remote", v.remoteString(), "reason", reason.Error(),
			"packets", v.packets.Load())
		if v.cfg.OnDone != nil {
			v.cfg.OnDone(reason)
		}
	})
}

// remoteString names where media goes, for logs: "tcp:" marks ICE-TCP.
func (v *Viewer) remoteString() string {
	if r := v.remote.Load(); r != nil {
		return r.route.String()
	}
	return "none"
}

// sayGoodbye sends the RTCP BYE (RFC 3550 §6.6) and the close_notify
// recorded when the handshake detached.
func (v *Viewer) sayGoodbye() {
	r := v.remote.Load()
	if r == nil {
		return
	}
	ssrcs := []uint32{v.video}
	if v.audio != 0 {
		ssrcs = append(ssrcs, v.audio)
	}
	if b, err := v.encryptRTCP([]rtcp.Packet{&rtcp.Goodbye{Sources: ssrcs, Reason: "session ended"}}); err == nil {
		v.srv.writeTo(b, r.route)
	}
	v.mu.Lock()
	cn := v.closeNotify
	v.mu.Unlock()
	if cn != nil {
		v.srv.writeTo(cn, r.route)
	}
}

// expired says why the janitor must end v now, or nil.
func (v *Viewer) expired(now time.Time, handshake, consent time.Duration) error {
	switch v.state.Load() {
	case stateNew, stateChecking:
		if now.Sub(v.created) > handshake {
			return plane.ErrHandshakeTimeout
		}
	case stateConnected:
		// A quick end for a viewer gone silent; that what it sends comes
		// from where media goes is proven separately (consentTick).
		if now.UnixNano()-v.lastSeen.Load() > int64(consent) {
			return plane.ErrConsentExpired
		}
	}
	return nil
}

func (v *Viewer) log() *slog.Logger {
	if v.cfg.Log != nil {
		return v.cfg.Log
	}
	return v.srv.log
}

// setRemote makes r where the viewer's media and control go.
func (v *Viewer) setRemote(r route, inet6 bool) {
	p := &peerAddr{route: r}
	if r.tcp == nil {
		p.nlen = p.name.set(r.ap, inet6)
	}
	v.remote.Store(p)
}

// WriteRTCP sends RTCP to the viewer (sender reports, say), encrypted
// with its SRTCP context.
func (v *Viewer) WriteRTCP(pkts []rtcp.Packet) error {
	r := v.remote.Load()
	if r == nil {
		return plane.ErrClosed
	}
	b, err := v.encryptRTCP(pkts)
	if err != nil {
		return err
	}
	v.srv.writeTo(b, r.route)
	return nil
}

func (v *Viewer) encryptRTCP(pkts []rtcp.Packet) ([]byte, error) {
	plain, err := rtcp.Marshal(pkts)
	if err != nil {
		return nil, fmt.Errorf("mediaplane: marshal RTCP: %w", err)
	}
	v.sendMu.Lock()
	defer v.sendMu.Unlock()
	if v.out == nil {
		return nil, plane.ErrClosed
	}
	b, err := v.out.EncryptRTCP(nil, plain, nil)
	if err != nil {
		return nil, fmt.Errorf("mediaplane: encrypt RTCP: %w", err)
	}
	return b, nil
}

// handleRTCP decrypts and parses one SRTCP datagram from v and hands it
// to OnRTCP; it runs on the goroutine that read it.
func (s *Server) handleRTCP(d *demuxState, v *Viewer, b []byte, now int64) {
	v.inMu.Lock()
	defer v.inMu.Unlock()
	in := v.in.Load()
	if in == nil {
		s.stats.droppedOther.Add(1) // keys not ready yet
		return
	}
	plain, err := in.DecryptRTCP(d.rtcp[:0], b, nil)
	if err != nil {
		s.stats.badSRTCP.Add(1)
		return
	}
	d.rtcp = plain[:0]
	// Authenticated RTCP is as good a sign of life as a consent check:
	// a viewer busy with media may check less often.
	v.lastSeen.Store(now)
	pkts, err := rtcp.Unmarshal(plain)
	if err != nil {
		s.stats.malformed.Add(1)
		return
	}
	s.stats.rtcpPackets.Add(1)
	v.rtcpIn.Add(1)
	if v.cfg.OnRTCP != nil {
		v.cfg.OnRTCP(pkts)
	}
}
