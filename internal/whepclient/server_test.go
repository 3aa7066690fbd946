package whepclient

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// clip is an ffmpeg-made H.264 stream cut into access units.
type clip struct {
	aus  [][][]byte // NAL units per picture, as the sender will send them
	idrs int
}

// makeClip encodes 2 s of testsrc2 with two closed GOPs. Baseline matches the
// profile-level-id the client offers.
func makeClip(t *testing.T) clip {
	t.Helper()
	out := filepath.Join(t.TempDir(), "clip.h264")
	testkit.FFmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "2",
		"-c:v", "libx264", "-profile:v", "baseline", "-pix_fmt", "yuv420p", "-bf", "0", "-g", "30",
		"-x264-params", "keyint=30:min-keyint=30:scenecut=0:slices=1", "-f", "h264", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var nalus h264.AnnexB
	if err := nalus.Unmarshal(data); err != nil {
		t.Fatalf("parse ffmpeg output: %v", err)
	}
	// One slice per picture (slices=1), so a picture ends at each slice.
	var c clip
	var cur [][]byte
	for _, n := range nalus {
		typ := n[0] & 0x1f
		if typ == 9 || typ == 12 { // pion's payloader drops AUD and filler
			continue
		}
		cur = append(cur, n)
		if typ == 1 || typ == 5 {
			if typ == 5 {
				c.idrs++
			}
			c.aus = append(c.aus, cur)
			cur = nil
		}
	}
	if len(c.aus) != 60 || c.idrs != 2 {
		t.Fatalf("clip has %d pictures and %d IDRs, want 60 and 2", len(c.aus), c.idrs)
	}
	return c
}

// whepServer is a minimal WHEP server around real pion peers; each session
// sends the clip once it is connected.
type whepServer struct {
	t    *testing.T
	clip clip
	srv  *httptest.Server

	// hangUp makes the server close its peer after sending the clip.
	hangUp bool

	mu      sync.Mutex
	pcs     map[string]*webrtc.PeerConnection
	deletes []string // session ids
	auth    []string // Authorization headers of all requests
	sent    chan string
	wg      sync.WaitGroup
}

func newWHEPServer(t *testing.T, c clip, hangUp bool) *whepServer {
	s := &whepServer{t: t, clip: c, hangUp: hangUp,
		pcs: map[string]*webrtc.PeerConnection{}, sent: make(chan string, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /live/cam1/whep", s.post)
	mux.HandleFunc("DELETE /live/cam1/session/{id}", s.delete)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.srv.Close()
		s.mu.Lock()
		for _, pc := range s.pcs {
			_ = pc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *whepServer) endpoint() string { return s.srv.URL + "/live/cam1/whep" }

func (s *whepServer) post(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if ct := r.Header.Get("Content-Type"); ct != "application/sdp" {
		http.Error(w, "want application/sdp, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	offer, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	answer, id, err := s.newPeer(string(offer))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", "session/"+id) // relative on purpose
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

func (s *whepServer) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	pc, ok := s.pcs[id]
	delete(s.pcs, id)
	if ok {
		s.deletes = append(s.deletes, id)
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_ = pc.Close()
}

func (s *whepServer) newPeer(offer string) (answer, id string, err error) {
	me := &webrtc.MediaEngine{}
	if err := me.RegisterDefaultCodecs(); err != nil {
		return "", "", err
	}
	se := webrtc.SettingEngine{}
	testkit.LoopbackOnly(&se)
	api := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return "", "", err
	}
	track, err := webrtc.NewTrackLocalStaticSample(
		webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
			SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"},
		"video", "srtwhep-test")
	if err != nil {
		_ = pc.Close()
		return "", "", err
	}
	sender, err := pc.AddTrack(track)
	if err != nil {
		_ = pc.Close()
		return "", "", err
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id = hex.EncodeToString(idb[:])

	var startOnce sync.Once
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		if st == webrtc.PeerConnectionStateConnected {
			startOnce.Do(func() {
				s.wg.Add(1)
				go s.send(pc, track, id)
			})
		}
	})
	s.wg.Add(1)
	go func() { // RTCP must be read for pion to process it; ends with the PC
		defer s.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, _, err := sender.Read(buf); err != nil {
				return
			}
		}
	}()

	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		_ = pc.Close()
		return "", "", err
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		_ = pc.Close()
		return "", "", err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		_ = pc.Close()
		return "", "", err
	}
	<-gathered
	s.mu.Lock()
	s.pcs[id] = pc
	s.mu.Unlock()
	return pc.LocalDescription().SDP, id, nil
}

// send paces the clip a few times faster than real time: fast enough for a
// quick test, slow enough not to overrun loopback socket buffers.
func (s *whepServer) send(pc *webrtc.PeerConnection, track *webrtc.TrackLocalStaticSample, id string) {
	defer s.wg.Done()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for _, au := range s.clip.aus {
		<-tick.C
		var annexB []byte
		for _, n := range au {
			annexB = append(annexB, 0, 0, 0, 1)
			annexB = append(annexB, n...)
		}
		if err := track.WriteSample(media.Sample{Data: annexB, Duration: time.Second / 30}); err != nil {
			s.t.Errorf("server: write sample: %v", err)
			return
		}
	}
	s.sent <- id
	if s.hangUp {
		s.mu.Lock()
		delete(s.pcs, id)
		s.mu.Unlock()
		_ = pc.Close()
	}
}

func equalNALUs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
