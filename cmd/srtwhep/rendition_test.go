package main

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/api"
)

// renditionsOf reads path's lower renditions from GET /v1/paths.
func renditionsOf(t *testing.T, ts *testServer, path string) []api.Rendition {
	t.Helper()
	for _, p := range apiPaths(t, http.DefaultClient, ts.apiURL("/v1/paths")) {
		if p.Name == path {
			return p.Renditions
		}
	}
	t.Fatalf("path %s not in GET /v1/paths", path)
	return nil
}

// apiPaths is GET url (a server's /v1/paths), decoded.
func apiPaths(t *testing.T, httpc *http.Client, url string) []api.Path {
	t.Helper()
	resp, err := httpc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Paths []api.Path }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Paths
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
