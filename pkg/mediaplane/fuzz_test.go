package mediaplane

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/sdp/v3"
	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// Fixed credentials for the fuzzed viewer, so seeds can carry STUN that
// passes integrity and reaches the answering and learning paths.
const (
	fuzzUfrag       = "fuzzServerUfrag1"
	fuzzPwd         = "fuzzServerPassword0123456789abcd"
	fuzzViewerUfrag = "fuzzViewer"
)

// demuxSeeds are one datagram of each kind the demultiplexer tells
// apart, valid and broken.
func demuxSeeds(t testing.TB) [][]byte {
	build := func(setters ...stun.Setter) []byte {
		m, err := stun.Build(setters...)
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	user := stun.NewUsername(fuzzUfrag + ":" + fuzzViewerUfrag)
	// A fixed transaction ID keeps the written corpus the same from run
	// to run.
	tid := stun.NewTransactionIDSetter([stun.TransactionIDSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	rr, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: 1}})
	return [][]byte{
		build(tid, stun.BindingRequest, user, stun.RawAttribute{Type: stun.AttrUseCandidate},
			stun.NewShortTermIntegrity(fuzzPwd), stun.Fingerprint),
		build(tid, stun.BindingRequest, user, stun.NewShortTermIntegrity("wrong"), stun.Fingerprint),
		build(tid, stun.BindingRequest, user, stun.NewShortTermIntegrity(fuzzPwd)),
		build(tid, stun.BindingSuccess, stun.Fingerprint),
		{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 0, 0},
		{21, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 1, 0, 2, 1, 0},
		append(rr, make([]byte, 20)...),
		{0x80, 102, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x41},
		{},
		{0xff, 0xff},
	}
}

// FuzzDemux feeds arbitrary datagrams from a validated address of a live
// viewer to the demultiplexer: nothing may panic, and every datagram is
// counted exactly once.
func FuzzDemux(f *testing.F) {
	for _, s := range demuxSeeds(f) {
		f.Add(s)
	}
	srv, _ := newServer(f, nil)
	v, _, err := srv.NewViewer(mustOffer(f, browserOffer(fuzzViewerUfrag, "fuzzViewerPasswordfuzzViewerPassword", testFingerprint)), h264Codec)
	if err != nil {
		f.Fatal(err)
	}
	c := &iceCreds{v: v, ufrag: fuzzUfrag, pwd: fuzzPwd, remoteUfrag: fuzzViewerUfrag, key: stun.NewShortTermIntegrity(fuzzPwd)}
	srv.mu.Lock()
	delete(srv.byUfrag, v.creds.ufrag)
	v.creds = c
	srv.byUfrag[fuzzUfrag] = c
	srv.mu.Unlock()
	// The discard port: answers go nowhere. Nothing is sent to the
	// server's socket, so its own demultiplexer goroutine stays idle and
	// this goroutine may stand in for it.
	from := netip.MustParseAddrPort("127.0.0.1:9")
	srv.checked(c, route{ap: from}, true, time.Now().UnixNano())
	f.Fuzz(func(t *testing.T, b []byte) {
		before := srv.Stats()
		srv.handle(b, from, time.Now().UnixNano())
		after := srv.Stats()
		if after.Datagrams != before.Datagrams+1 {
			t.Fatalf("datagram counted %d times", after.Datagrams-before.Datagrams)
		}
	})
}

// FuzzAnswer: any offer is either refused with an *sdpoffer.Error (by
// the parser or by this plane) or answered with SDP that parses.
func FuzzAnswer(f *testing.F) {
	good := browserOffer("vwUfrag", "viewerpasswordviewerpassword", testFingerprint)
	f.Add(good)
	f.Add(strings.Replace(good, "a=recvonly", "a=sendrecv", 1))
	f.Add(strings.Replace(good, "m=application", "m=audio", 1))
	f.Add("v=0\r\n")
	f.Add("")
	srv, _ := newServer(f, nil)
	f.Fuzz(func(t *testing.T, offer string) {
		vc := h264Codec
		vc.Audio = &Codec{PayloadType: 111}
		o, err := sdpoffer.Parse(offer)
		var v *Viewer
		var answer string
		if err == nil {
			v, answer, err = srv.NewViewer(o, vc)
		}
		if err != nil {
			var oe *sdpoffer.Error
			if !errors.As(err, &oe) {
				t.Fatalf("not an *sdpoffer.Error: %v", err)
			}
			return
		}
		defer v.Close()
		var sd sdp.SessionDescription
		if err := sd.UnmarshalString(answer); err != nil {
			t.Fatalf("answer does not parse: %v\n%s", err, answer)
		}
	})
}

// TestFuzzCorpusDemux writes the seeds as the checked-in corpus when
// asked to (see testkit.SeedCorpus).
func TestFuzzCorpusDemux(t *testing.T) {
	var seeds [][]any
	for _, s := range demuxSeeds(t) {
		seeds = append(seeds, []any{s})
	}
	testkit.SeedCorpus(t, "FuzzDemux", seeds...)
}
