package main

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/api"
)

// renditionsOf reads path's lower renditions from GET /v1/paths.
func renditionsOf(t *testing.T, ts *testServer, path string) []api.Rendition {
	t.Helper()
	resp, err := http.Get(ts.apiURL("/v1/paths"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Paths []api.Path }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, p := range body.Paths {
		if p.Name == path {
			return p.Renditions
		}
	}
	t.Fatalf("path %s not in GET /v1/paths", path)
	return nil
}

// pictureHeight is the height in the SPS of v's latest IDR; 0 before one.
func pictureHeight(t *testing.T, v *viewer) int {
	t.Helper()
	aus := v.units()
	for i := len(aus) - 1; i >= 0; i-- {
		if !aus[i].IDR {
			continue
		}
		for _, n := range aus[i].NALUs {
			if len(n) > 0 && n[0]&0x1f == 7 {
				var sps h264.SPS
				if err := sps.Unmarshal(n); err != nil {
					t.Fatal(err)
				}
				return sps.Height()
			}
		}
	}
	return 0
}

// TestRenditionShaped: a 720p30 2.5 Mbit/s stream with the default
// ladder. A viewer on an open link plays the source and starts no
// transcoder; a viewer behind 1 Mbit/s (tc tbf in a network namespace,
// as TestEstimateShaped) is moved to the 360p rendition, which starts for
// it, and plays it whole, while the first stays on the source.
//
// Not parallel: the link's rate is what it measures.
func TestRenditionShaped(t *testing.T) {
	requireNetns(t, "tc")
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	feedback := func(o *whepclient.Options) { o.TransportCC, o.NACK, o.ReceiverReports = true, true, true }

	wide := dialViewer(t, ts, "live/cam1", feedback)
	wide.waitLive(t, 150, 20*time.Second)
	rs := renditionsOf(t, ts, "live/cam1")
	if len(rs) != 1 || rs[0].Name != "360p" || rs[0].Width != 640 || rs[0].Running || rs[0].Viewers != 0 {
		t.Fatalf("renditions with one viewer on an open link: %+v; want 360p, not running", rs)
	}
	if h := pictureHeight(t, wide); h != 720 {
		t.Fatalf("the open link's viewer gets %d lines, want the source's 720", h)
	}

	narrow, _ := dialBehindTBF(t, ts, "live/cam1", "32kb", "200ms", feedback)
	start := time.Now()
	line := ts.logs.WaitLog(t, 20*time.Second, "viewer switched rendition", "direction=down", "session="+sessionID(narrow))
	t.Logf("%.1f s after the narrow viewer connected: %s", time.Since(start).Seconds(), line)
	testkit.WaitFor(t, 5*time.Second, "the narrow viewer's first 360p picture", func() bool { return pictureHeight(t, narrow) == 360 })
	// Then, once the link has drained what it queued of the source (a
	// couple of seconds), it plays the rendition whole: 150 pictures (5 s
	// of them) decoded, none broken, in well under 8 s.
	settled := narrow.Stats().DecodedAUs + 60
	testkit.WaitFor(t, 5*time.Second, "the link to settle", func() bool { return narrow.Stats().DecodedAUs >= settled })
	n0, broken0, t0 := narrow.Stats().DecodedAUs, narrow.Stats().BrokenAUs, time.Now()
	testkit.WaitFor(t, 8*time.Second, "150 pictures of the rendition", func() bool { return narrow.Stats().DecodedAUs >= n0+150 })
	elapsed := time.Since(t0)
	st := narrow.Stats()
	t.Logf("behind 1 Mbit/s: %.1f fps decoded at %dx%d, %d broken", float64(st.DecodedAUs-n0)/elapsed.Seconds(), st.Width, st.Height, st.BrokenAUs-broken0)
	if st.BrokenAUs-broken0 > 5 {
		t.Errorf("%d pictures broken on the rendition through a link that carries it", st.BrokenAUs-broken0)
	}
	rs = renditionsOf(t, ts, "live/cam1")
	if len(rs) != 1 || !rs[0].Running || rs[0].Viewers != 1 {
		t.Fatalf("renditions with the narrow viewer on 360p: %+v; want it running with one viewer", rs)
	}
	t.Logf("rendition as /v1/paths shows it: %+v", rs[0])
	if h := pictureHeight(t, wide); h != 720 {
		t.Errorf("the open link's viewer moved to %d lines", h)
	}
}

// dialBehindTBF dials a pion viewer of path that sits in a network
// namespace of its own behind `tc tbf` at 1 Mbit/s with burst and
// latency (its media reaches the server through a relay in that
// namespace, so every packet the server sends it crosses the qdisc).
// setRate changes the link's rate ("4mbit") mid-test.
func dialBehindTBF(t *testing.T, ts *testServer, path, burst, latency string, opts ...func(*whepclient.Options)) (v *viewer, setRate func(rate string)) {
	t.Helper()
	vNS := newNetns(t, "viewer")
	tbf := func(verb, rate string) {
		vNS.exec(t, "tc", "qdisc", verb, "dev", "lo", "root", "tbf", "rate", rate, "burst", burst, "latency", latency)
	}
	tbf("add", "1mbit")
	mediaPort := addrPort(t, ts.addrs.Load().WebRTCUDP)
	relayIn := listenUDPIn(t, vNS)
	udpLink(t, relayIn, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: mediaPort}, linkOpts{})
	mux := webrtc.NewICEUDPMux(nil, listenUDPIn(t, vNS))
	t.Cleanup(func() { mux.Close() })
	opts = append(opts, func(o *whepclient.Options) {
		o.RewriteAnswer = candidatePort("udp", mediaPort, relayIn.LocalAddr().(*net.UDPAddr).Port)
		o.SettingEngine = func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetICEUDPMux(mux)
		}
	})
	return dialViewer(t, ts, path, opts...), func(rate string) { tbf("change", rate) }
}
