package srtread

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// rig is a real libsrt listener serving a hub through a Server, with the
// log and the events it produced.
type rig struct {
	hub  *hub.Hub
	srv  *Server
	srt  *srt.Server
	logs *testkit.LogBuffer

	mu     sync.Mutex
	events []events.Event
}

func startRig(t *testing.T, hcfg hub.Config, policy *auth.Policy) *rig {
	t.Helper()
	r := &rig{logs: &testkit.LogBuffer{}}
	log := r.logs.Logger(slog.LevelDebug)
	hcfg.Logger = log
	r.hub = hub.New(hcfg)
	cfg := Config{Hub: r.hub, Logger: log, Events: func(e events.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	}}
	if policy != nil {
		cfg.Authorizer = policy
	}
	var err error
	if r.srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	r.srt, err = srt.New(srt.Config{Listen: "127.0.0.1:0", Logger: log,
		Serve:     func(context.Context, *srt.Conn) error { return errors.New("no publishers here") },
		AdmitRead: r.srv.Admit, ServeRead: r.srv.Serve})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.hub.Run(ctx) })
	wg.Go(func() {
		if err := r.srt.Run(ctx); err != nil {
			t.Errorf("srt Run: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	select {
	case <-r.srt.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("SRT listener not ready")
	}
	return r
}

func (r *rig) eventsSeen() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Event(nil), r.events...)
}

// publish writes s into path in real time (30 fps) until the test ends or
// s runs out, starting over with later timestamps when it does.
func publish(t *testing.T, h *hub.Hub, path string, tr *av.AudioTrack) {
	t.Helper()
	pub, err := h.Publish(path, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil {
		pub.SetSourceAudio(true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second / 30)
		defer tick.Stop()
		for loop := int64(0); ; loop++ {
			s := mkStream(0, loop*300*3000, 300, 30, tr)
			for _, f := range s.frames {
				if f.Source != nil {
					pub.WriteSourceAudio(f.Source)
					continue
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				pub.Write(f.Video)
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		pub.Close()
	})
}

// dialRead connects a reader, failing the test on a refusal; its reads
// fail after 10 s without data. hangUp closes it (once; the test's end
// does it too).
func dialRead(t *testing.T, r *rig, o srtcall.Options) (sock *srtgo.SrtSocket, hangUp func()) {
	t.Helper()
	o.ReadTimeout = 10 * time.Second
	sock, err := srtcall.Dial(r.srt.Addr(), o)
	if err != nil {
		t.Fatalf("read with streamid %q: %v", o.StreamID, err)
	}
	hangUp = sync.OnceFunc(func() { srtcall.Close(sock) })
	t.Cleanup(hangUp)
	return sock, hangUp
}

// readTS reads whole SRT messages until it has n bytes.
func readTS(t *testing.T, sock *srtgo.SrtSocket, n int) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 1500)
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d bytes of %d in 20 s", len(out), n)
		}
		k, err := sock.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(out), err)
		}
		if k%tsPacketSize != 0 || k > messageSize {
			t.Fatalf("a %d-byte SRT message: want whole TS packets, at most %d bytes", k, messageSize)
		}
		out = append(out, buf[:k]...)
	}
	return out
}

// A reader gets the path from the cached GOP's IDR with the source audio,
// whichever streamid form it used; its life is logged and announced.
func TestServeReader(t *testing.T) {
	r := startRig(t, hub.Config{}, nil)
	publish(t, r.hub, "live/cam1", aacTrack(t))
	testkit.WaitFor(t, 10*time.Second, "a GOP in the hub", func() bool { return r.hub.State("live/cam1").Playable })

	for _, streamid := range []string{"read:live/cam1", "#!::r=live/cam1,m=request"} {
		t.Run(streamid, func(t *testing.T) {
			sock, hangUp := dialRead(t, r, srtcall.Options{StreamID: streamid})
			data := readTS(t, sock, 200*tsPacketSize)
			hangUp()
			d := demux(t, data)
			if len(d.video) == 0 || !d.firstIDR || len(d.audio) == 0 {
				t.Fatalf("%d pictures (first IDR %v), %d audio units", len(d.video), d.firstIDR, len(d.audio))
			}
			if _, ok := d.audioCodec.(*mpegts.CodecMPEG4Audio); !ok {
				t.Fatalf("audio codec %T, want AAC", d.audioCodec)
			}
			rep := walkTS(t, data)
			if len(rep.ccErrors) != 0 {
				t.Fatalf("continuity errors: %v", rep.ccErrors)
			}
			line := r.logs.WaitLog(t, 10*time.Second, "reader closed", "path=live/cam1", "protocol=srt", `reason="reader disconnected"`)
			session := attr(line, "session")
			r.logs.WaitLog(t, time.Second, "reader opened", "session="+session, "remote=127.0.0.1:")
			testkit.WaitFor(t, 5*time.Second, "the reader's events", func() bool {
				var kinds []string
				for _, e := range r.eventsSeen() {
					if e.ID == session && e.Protocol == "srt" && e.Path == "live/cam1" {
						kinds = append(kinds, string(e.Kind)+":"+e.Reason)
					}
				}
				return strings.Join(kinds, " ") == "reader.opened: reader.closed:reader disconnected"
			})
		})
	}
	testkit.WaitFor(t, 5*time.Second, "the readers' slots freed", func() bool { return r.hub.State("live/cam1").Readers == 0 })
}

// attr is a key's value in a text log line.
func attr(line, key string) string {
	for f := range strings.FieldsSeq(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// Refusals are decided in the handshake, each with its reject reason.
func TestAdmitRejects(t *testing.T) {
	policy := auth.NewPolicy(auth.Rules{ForPath: func(path string) auth.PathRules {
		switch path {
		case "live/locked":
			return auth.PathRules{ReadTokens: []string{"opensesame"}}
		case "live/lan":
			return auth.PathRules{ReadIPs: []string{"10.0.0.0/8"}}
		}
		return auth.PathRules{}
	}}, auth.ThrottleConfig{Base: time.Nanosecond, Max: time.Nanosecond}) // no penalty worth waiting for
	t.Cleanup(policy.Close)
	r := startRig(t, hub.Config{MaxReaders: func(path string) int {
		if path == "live/one" {
			return 1
		}
		return 0
	}}, policy)
	for _, p := range []string{"live/locked", "live/lan", "live/one"} {
		publish(t, r.hub, p, nil)
	}
	dialRead(t, r, srtcall.Options{StreamID: "read:live/one"})
	testkit.WaitFor(t, 5*time.Second, "the first reader of live/one", func() bool { return r.hub.State("live/one").Readers == 1 })

	for _, tc := range []struct {
		name, streamid string
		reason         int
	}{
		{"no publisher", "read:live/none", srtgo.RejectionReasonNotFound},
		{"no token", "read:live/locked", srtgo.RejectionReasonUnauthorized},
		{"wrong token", "#!::r=live/locked,m=request,s=nope", srtgo.RejectionReasonUnauthorized},
		{"address not allowed", "read:live/lan", srtgo.RejectionReasonForbidden},
		{"path full", "read:live/one", srtgo.RejectionReasonOverload},
		{"unknown mode", "#!::r=live/one,m=bidirectional", srtgo.RejectionReasonBadMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock, err := srtcall.Dial(r.srt.Addr(), srtcall.Options{StreamID: tc.streamid})
			if err == nil {
				srtcall.Close(sock)
				t.Fatalf("streamid %q was admitted", tc.streamid)
			}
			var rej *srtcall.RejectedError
			if !errors.As(err, &rej) || rej.Reason != tc.reason {
				t.Fatalf("streamid %q: %v, want reject reason %d", tc.streamid, err, tc.reason)
			}
		})
	}
	r.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/none", "not found (1404)")
	r.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/locked", "unauthorized (1401)")
	if strings.Contains(r.logs.String(), "nope") {
		t.Error("a rejected token reached the log")
	}
	for _, streamid := range []string{"read:live/locked:viewer:opensesame", "#!::r=live/locked,m=request,s=opensesame"} {
		sock, hangUp := dialRead(t, r, srtcall.Options{StreamID: streamid})
		readTS(t, sock, messageSize)
		hangUp()
	}
}

// A reader that stops reading loses video to the next IDR in the hub,
// like a slow WHEP viewer, while the reader next to it keeps every
// picture: live mode never blocks a write, so the send backlog is what
// tells a stalled reader.
func TestSlowReaderDrops(t *testing.T) {
	r := startRig(t, hub.Config{QueueSize: 16}, nil)
	publish(t, r.hub, "live/cam1", opusTrack)
	testkit.WaitFor(t, 10*time.Second, "a GOP in the hub", func() bool { return r.hub.State("live/cam1").Playable })

	// 48 kB is libsrt's floor of 32 packets.
	dialRead(t, r, srtcall.Options{StreamID: "read:live/cam1", RcvBuf: 48 << 10})
	fast, _ := dialRead(t, r, srtcall.Options{StreamID: "read:live/cam1"})
	var data []byte
	buf := make([]byte, 1500)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.logs.String(), "reader is too slow") {
		if time.Now().After(deadline) {
			t.Fatalf("no drop logged in 30 s:\n%s", r.logs.String())
		}
		k, err := fast.Read(buf)
		if err != nil {
			t.Fatalf("fast reader: %v", err)
		}
		data = append(data, buf[:k]...)
	}
	// Two more seconds for the fast reader.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		k, err := fast.Read(buf)
		if err != nil {
			t.Fatalf("fast reader: %v", err)
		}
		data = append(data, buf[:k]...)
	}
	var slow, quick hub.ReaderStats
	for _, p := range r.hub.Paths() {
		for _, s := range p.Sessions {
			if s.Dropped > 0 {
				slow = s
			} else {
				quick = s
			}
		}
	}
	line := r.logs.WaitLog(t, time.Second, "reader is too slow")
	if slow.Session == "" || !strings.Contains(line, "session="+slow.Session) || quick.Session == "" {
		t.Fatalf("readers %+v and %+v; drop line %s", slow, quick, line)
	}
	rep := walkTS(t, data)
	video := rep.pts[videoPID]
	for i := 1; i < len(video); i++ {
		if video[i] != video[i-1]+3000 {
			t.Fatalf("the fast reader lost pictures: %d then %d", video[i-1], video[i])
		}
	}
	if len(rep.ccErrors) != 0 || len(video) < 60 {
		t.Fatalf("fast reader: %d pictures, continuity errors %v", len(video), rep.ccErrors)
	}
}
