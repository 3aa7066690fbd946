package mediaplane

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/srtp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/pionslog"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
)

func TestMain(m *testing.M) { testkit.Main(m, nil, nil) }

// newServer starts a Server on a loopback socket, closed when the test
// ends.
func newServer(t testing.TB, edit func(*Config)) (*Server, *testkit.LogBuffer) {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	cfg := Config{Conn: conn, Logger: logs.Logger(slog.LevelDebug)}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, logs
}

// pionViewer is a browser-like viewer: testkit's offerer with pion's
// default codecs and feedback (receiver reports every second, NACKs for
// gaps), receiving video and audio.
type pionViewer struct {
	pc    *webrtc.PeerConnection
	offer string

	mu        sync.Mutex
	states    []webrtc.PeerConnectionState
	received  map[webrtc.RTPCodecType][]*rtp.Packet
	byes      map[uint32]bool
	rtcpTypes map[string]int
	changed   chan struct{} // pulsed on every change above

	// discard counts packets instead of keeping them (benchmarks).
	discard atomic.Bool
	counted atomic.Int64
}

func newPionViewer(t testing.TB, audio bool) *pionViewer {
	t.Helper()
	return newPionViewerWith(t, audio, nil)
}

// newPionViewerWith is newPionViewer with its SettingEngine adjusted by
// edit after the loopback defaults (ICE-TCP only, say).
func newPionViewerWith(t testing.TB, audio bool, edit func(*webrtc.SettingEngine)) *pionViewer {
	t.Helper()
	off := testkit.Offer(t, testkit.OfferOptions{Audio: audio, Feedback: true, SettingEngine: func(se *webrtc.SettingEngine) {
		// pion's own logger prints to stderr; errors that matter fail the test.
		se.LoggerFactory = pionslog.Factory{Log: slog.New(slog.DiscardHandler)}
		if edit != nil {
			edit(se)
		}
	}})
	pc := off.PC
	pv := &pionViewer{pc: pc, offer: off.SDP, received: map[webrtc.RTPCodecType][]*rtp.Packet{}, byes: map[uint32]bool{}, rtcpTypes: map[string]int{},
		changed: make(chan struct{}, 1)}
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		pv.update(func() { pv.states = append(pv.states, st) })
	})
	// pion runs OnTrack on a goroutine of its own and ends ReadRTP when
	// the PeerConnection closes, so these loops end with it.
	pc.OnTrack(func(tr *webrtc.TrackRemote, recv *webrtc.RTPReceiver) {
		go func() {
			for {
				pkts, _, err := recv.ReadRTCP()
				if err != nil {
					return
				}
				for _, p := range pkts {
					pv.update(func() { pv.rtcpTypes[fmt.Sprintf("%T", p)]++ })
					if bye, ok := p.(*rtcp.Goodbye); ok {
						pv.update(func() {
							for _, s := range bye.Sources {
								pv.byes[s] = true
							}
						})
					}
				}
			}
		}()
		for {
			p, _, err := tr.ReadRTP()
			if err != nil {
				return
			}
			if pv.discard.Load() {
				pv.counted.Add(1)
				continue
			}
			pv.update(func() { pv.received[tr.Kind()] = append(pv.received[tr.Kind()], p) })
		}
	})
	return pv
}

func (pv *pionViewer) update(f func()) {
	pv.mu.Lock()
	f()
	pv.mu.Unlock()
	select {
	case pv.changed <- struct{}{}:
	default:
	}
}

func (pv *pionViewer) accept(t testing.TB, answer string) {
	t.Helper()
	if err := pv.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatalf("pion refused the answer: %v\n%s", err, answer)
	}
}

func (pv *pionViewer) count(k webrtc.RTPCodecType) int {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return len(pv.received[k])
}

func (pv *pionViewer) packets(k webrtc.RTPCodecType) []*rtp.Packet {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return append([]*rtp.Packet(nil), pv.received[k]...)
}

func (pv *pionViewer) stateHistory() []webrtc.PeerConnectionState {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return append([]webrtc.PeerConnectionState(nil), pv.states...)
}

func (pv *pionViewer) gotBye(ssrc uint32) bool {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return pv.byes[ssrc]
}

// codecsFor picks what a WHEP server answers a browser with: H.264
// packetization-mode 1 in profile 42e01f, and Opus.
func codecsFor(t testing.TB, offer string) ViewerConfig {
	t.Helper()
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(offer); err != nil {
		t.Fatal(err)
	}
	var vc ViewerConfig
	for _, md := range sd.MediaDescriptions {
		for _, f := range md.MediaName.Formats {
			pt, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			c, err := sd.GetCodecForPayloadType(uint8(pt))
			if err != nil {
				continue
			}
			switch {
			case md.MediaName.Media == "video" && vc.Video.Fmtp == "" && strings.EqualFold(c.Name, "H264") &&
				strings.Contains(c.Fmtp, "packetization-mode=1") && strings.Contains(c.Fmtp, "profile-level-id=42e01f"):
				vc.Video = Codec{PayloadType: uint8(pt), Fmtp: c.Fmtp}
			case md.MediaName.Media == "audio" && vc.Audio == nil && strings.EqualFold(c.Name, "opus"):
				vc.Audio = &Codec{PayloadType: uint8(pt), Fmtp: c.Fmtp}
			}
		}
	}
	if vc.Video.Fmtp == "" {
		t.Fatalf("offer has no H.264 42e01f:\n%s", offer)
	}
	return vc
}

// frames cuts synthetic access units into RTP payloads the way the
// publisher does: an IDR with SPS and PPS (a STAP-A, then FU-A
// fragments), then P-frames of varied sizes, some small enough to go as
// single NAL unit packets.
func frames(n int) []*av.AccessUnit {
	var out []*av.AccessUnit
	for i := range n {
		var nalus [][]byte
		if i == 0 {
			nalus = [][]byte{{0x67, 0x42, 0xe0, 0x1f}, {0x68, 0xce, 0x3c, 0x80}, fill(0x65, 9000, i)}
		} else {
			nalus = [][]byte{fill(0x41, 300+(i*997)%9000, i)}
		}
		au := &av.AccessUnit{NALUs: nalus, IDR: i == 0, PTS: int64(i) * 3000}
		au.Payloads = rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload)
		out = append(out, au)
	}
	return out
}

func fill(header byte, n, seed int) []byte {
	b := make([]byte, n)
	b[0] = header
	for i := 1; i < n; i++ {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// mediaplaneGoroutines counts the goroutines carrying the Server's
// profile label: its own and those pion/dtls started from them.
func mediaplaneGoroutines(t testing.TB) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile(`^(\d+) @`)
	n, count := 0, 0
	for _, l := range strings.Split(b.String(), "\n") {
		if m := head.FindStringSubmatch(l); m != nil {
			count, _ = strconv.Atoi(m[1])
			continue
		}
		if strings.HasPrefix(l, "# labels:") && strings.Contains(l, `"srtwhep":"mediaplane"`) {
			n += count
		}
	}
	return n
}

// waitConnected waits for the viewer's keys and the pion side's
// "connected".
func waitConnected(t testing.TB, v *Viewer, pv *pionViewer) {
	t.Helper()
	select {
	case <-v.Connected():
	case <-v.Done():
		t.Fatalf("viewer ended before connecting: %v", v.Err())
	case <-time.After(15 * time.Second):
		t.Fatal("viewer not connected within 15 s")
	}
	testkit.WaitFor(t, 15*time.Second, "the pion viewer to be connected", func() bool {
		return pv.pc.ConnectionState() == webrtc.PeerConnectionStateConnected
	})
}

func describe(p *rtp.Packet) string {
	return fmt.Sprintf("seq %d ts %d marker %v, %d payload bytes", p.SequenceNumber, p.Timestamp, p.Marker, len(p.Payload))
}

// keyedViewer registers a connected viewer that skipped ICE and DTLS:
// fixed keys and media to remote, for tests of the send path alone. The
// returned context decrypts what the viewer is sent.
func keyedViewer(t testing.TB, srv *Server, remote netip.AddrPort, profile srtp.ProtectionProfile) (*Viewer, *srtp.Context) {
	t.Helper()
	keyLen, _ := profile.KeyLen()
	saltLen, _ := profile.SaltLen()
	key, salt := bytes.Repeat([]byte{7}, keyLen), bytes.Repeat([]byte{9}, saltLen)
	out, err := srtp.CreateContext(key, salt, profile)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := srtp.CreateContext(key, salt, profile)
	if err != nil {
		t.Fatal(err)
	}
	v := &Viewer{srv: srv, video: randomSSRC(0), created: time.Now(), connected: make(chan struct{}),
		done: make(chan struct{}), out: out}
	v.ctx, v.cancel = context.WithCancel(srv.ctx)
	v.setRemote(route{ap: remote}, srv.inet6)
	v.lastSeen.Store(time.Now().Add(time.Hour).UnixNano())    // no consent checks come
	v.consent.provenAt = time.Now().Add(time.Hour).UnixNano() // nor answers to ours
	v.consent.nextCheck = v.consent.provenAt
	v.state.Store(stateConnected)
	close(v.connected)
	srv.mu.Lock()
	srv.viewers[v] = struct{}{}
	srv.mu.Unlock()
	return v, dec
}

// sink is a loopback socket that reads and keeps (or just counts) what
// arrives, until the test ends.
type sink struct {
	conn  *net.UDPConn
	mu    sync.Mutex
	got   [][]byte
	keep  bool
	count atomic.Int64
}

func newSink(t testing.TB, keep bool) *sink {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadBuffer(8 << 20)
	s := &sink{conn: conn, keep: keep}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.count.Add(1)
			if keep {
				s.mu.Lock()
				s.got = append(s.got, bytes.Clone(buf[:n]))
				s.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { conn.Close(); wg.Wait() })
	return s
}

func (s *sink) addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (s *sink) datagrams() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.got...)
}
