package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestEnvOverrides(t *testing.T) {
	file := "srt:\n  listen: \":7000\"\npathDefaults:\n  maxReaders: 5\npaths:\n  live/cam1:\n    passphrase: cam1-passphrase\n"
	env := map[string]string{
		"SRTWHEP_WEBRTC_PUBLICIPS":        "203.0.113.7, 2001:db8::1",
		"SRTWHEP_SRT_LISTEN":              ":9000", // env beats the file
		"SRTWHEP_LOGLEVEL":                "debug",
		"srtwhep_webrtc_handshaketimeout": "1s", // case-insensitive
		"SRTWHEP_Http_AllowOrigin":        "https://example.org",
		"SRTWHEP_METRICS_LISTEN":          "", // disables metrics
		"SRTWHEP_WEBRTC_ICESERVERS":       "stun:a.example.org:3478,stun:b.example.org:3478",
		"SRTWHEP_PATHDEFAULTS_MAXREADERS": "7",     // inherited by listed paths too
		"HOME":                            "/root", // not ours: ignored
	}
	c, err := parseEnv("x.yml", []byte(file), env)
	if err != nil {
		t.Fatal(err)
	}
	if c.SRT.Listen != ":9000" || c.LogLevel != "debug" || c.WebRTC.HandshakeTimeout != Duration(time.Second) ||
		c.HTTP.AllowOrigin != "https://example.org" || c.Metrics.Listen != "" {
		t.Errorf("scalars not applied: %+v %q %+v %+v %+v", c.SRT, c.LogLevel, c.WebRTC, c.HTTP, c.Metrics)
	}
	want := []IP{{netip.MustParseAddr("203.0.113.7")}, {netip.MustParseAddr("2001:db8::1")}}
	if len(c.WebRTC.PublicIPs) != 2 || c.WebRTC.PublicIPs[0] != want[0] || c.WebRTC.PublicIPs[1] != want[1] {
		t.Errorf("publicIPs = %v", c.WebRTC.PublicIPs)
	}
	if len(c.WebRTC.ICEServers) != 2 || c.WebRTC.ICEServers[1].URLs[0] != "stun:b.example.org:3478" {
		t.Errorf("iceServers = %+v", c.WebRTC.ICEServers)
	}
	if got := c.PathConfig("live/cam1"); got.MaxReaders != 7 || got.Passphrase != "cam1-passphrase" {
		t.Errorf("live/cam1 = %+v", got)
	}
	if got := c.PathConfig("other"); got.MaxReaders != 7 {
		t.Errorf("other = %+v", got)
	}
}

func TestEnvWithoutFile(t *testing.T) {
	c, err := parseEnv("", nil, map[string]string{"SRTWHEP_WEBRTC_UDPPORT": "9189"})
	if err != nil {
		t.Fatal(err)
	}
	if c.WebRTC.UDPPort != 9189 {
		t.Errorf("udpPort = %d", c.WebRTC.UDPPort)
	}
	c.WebRTC.UDPPort = 8189
	assertDefault(t, c)
}

func TestEnvFlowLists(t *testing.T) {
	c, err := parseEnv("", nil, map[string]string{
		"SRTWHEP_WEBRTC_ICESERVERS": "[{urls: [turn:t.example.org:3478], username: u, credential: c}]",
		"SRTWHEP_WEBRTC_INTERFACES": "[eth0, eth1]",
		"SRTWHEP_WEBRTC_PUBLICIPS":  "",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.WebRTC.ICEServers; len(s) != 1 || s[0].Username != "u" || s[0].Credential != "c" {
		t.Errorf("iceServers = %+v", s)
	}
	if strings.Join(c.WebRTC.Interfaces, ",") != "eth0,eth1" || c.WebRTC.PublicIPs != nil {
		t.Errorf("interfaces = %v, publicIPs = %v", c.WebRTC.Interfaces, c.WebRTC.PublicIPs)
	}
}

func TestEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		file string
		want string
	}{
		{"hostname", map[string]string{"SRTWHEP_WEBRTC_PUBLICIPS": "203.0.113.7,vps.example.com"}, "",
			`SRTWHEP_WEBRTC_PUBLICIPS: webrtc.publicIPs[1]: "vps.example.com" is a hostname, not an IP address; Firefox rejects DNS names in ICE candidates, so write an IPv4 or IPv6 address, e.g. 203.0.113.7`},
		{"not a number", map[string]string{"SRTWHEP_WEBRTC_UDPPORT": "x"}, "",
			`SRTWHEP_WEBRTC_UDPPORT: webrtc.udpPort: "x" is not a whole number; write digits only, e.g. 8189`},
		{"range check names the variable", map[string]string{"SRTWHEP_WEBRTC_UDPPORT": "65536"}, "",
			`SRTWHEP_WEBRTC_UDPPORT: webrtc.udpPort: 65536 is not a port; use 1 to 65535, e.g. 8189 (0 picks a free port, for tests and local runs)`},
		{"clash names the variable over the file", map[string]string{"SRTWHEP_WEBRTC_UDPPORT": "8890"}, "webrtc:\n  udpPort: 8189\n",
			`SRTWHEP_WEBRTC_UDPPORT: webrtc.udpPort: UDP port 8890 is also used by srt.listen; give each listener its own port`},
		{"bad duration", map[string]string{"SRTWHEP_SRT_LATENCY": "200"}, "",
			`SRTWHEP_SRT_LATENCY: srt.latency: "200" has no unit; write e.g. 200s or 200ms`},
		{"unknown key", map[string]string{"SRTWHEP_WEBRTC_PUBLICIP": "1.2.3.4"}, "",
			"SRTWHEP_WEBRTC_PUBLICIP: unknown variable; keys of webrtc are SRTWHEP_WEBRTC_ followed by one of LISTENIP, UDPPORT, TCPPORT, MAXTCPPERCLIENT, PUBLICIPS, INTERFACES, ICESERVERS, HANDSHAKETIMEOUT, DISCONNECTTIMEOUT, SOCKETBUFFER, MAXRESENDBITRATE"},
		{"retired key", map[string]string{"SRTWHEP_WEBRTC_MEDIAPLANE": "pion"}, "",
			"SRTWHEP_WEBRTC_MEDIAPLANE: webrtc.mediaPlane: the pion media plane is gone, srtwhep's own media plane is the only WebRTC transport; delete the line"},
		{"unknown section", map[string]string{"SRTWHEP_CONFIG": "/etc/srtwhep.yml"}, "",
			"SRTWHEP_CONFIG: unknown variable; use SRTWHEP_<KEY> or SRTWHEP_<SECTION>_<KEY> with a key of configs/srtwhep.yml (SRTWHEP_LOGLEVEL, SRTWHEP_LOGFORMAT, SRTWHEP_SRT_<KEY>, SRTWHEP_HTTP_<KEY>, SRTWHEP_WEBRTC_<KEY>, SRTWHEP_METRICS_<KEY>, SRTWHEP_READERS_<KEY>, SRTWHEP_TRANSCODE_<KEY>, SRTWHEP_API_<KEY>, SRTWHEP_AUTHHOOK_<KEY>, SRTWHEP_HOOKS_<KEY>, SRTWHEP_PATHDEFAULTS_<KEY>)"},
		{"section without key", map[string]string{"SRTWHEP_SRT": ":1"}, "",
			"SRTWHEP_SRT: srt: srt is a section, not a value; set one of its keys, e.g. SRTWHEP_SRT_LISTEN"},
		{"key under a scalar", map[string]string{"SRTWHEP_LOGLEVEL_X": "1"}, "",
			"SRTWHEP_LOGLEVEL_X: unknown variable; logLevel is a single value, set it with SRTWHEP_LOGLEVEL"},
		{"paths", map[string]string{"SRTWHEP_PATHS_LIVE": "x"}, "",
			"SRTWHEP_PATHS_LIVE: paths: paths can only be listed in the config file; use SRTWHEP_PATHDEFAULTS_<KEY> for settings of every path"},
		{"bad flow list", map[string]string{"SRTWHEP_WEBRTC_ICESERVERS": "[{urls: "}, "",
			`SRTWHEP_WEBRTC_ICESERVERS: webrtc.iceServers: "[{urls: " is not a valid YAML list; write comma-separated items or a flow list such as [{urls: [stun:stun.example.org:3478]}]`},
		{"all errors, sorted by name", map[string]string{"SRTWHEP_LOGLEVEL": "loud", "SRTWHEP_B": "1", "SRTWHEP_A": "1"}, "",
			"SRTWHEP_A: unknown variable; use SRTWHEP_<KEY> or SRTWHEP_<SECTION>_<KEY> with a key of configs/srtwhep.yml (SRTWHEP_LOGLEVEL, SRTWHEP_LOGFORMAT, SRTWHEP_SRT_<KEY>, SRTWHEP_HTTP_<KEY>, SRTWHEP_WEBRTC_<KEY>, SRTWHEP_METRICS_<KEY>, SRTWHEP_READERS_<KEY>, SRTWHEP_TRANSCODE_<KEY>, SRTWHEP_API_<KEY>, SRTWHEP_AUTHHOOK_<KEY>, SRTWHEP_HOOKS_<KEY>, SRTWHEP_PATHDEFAULTS_<KEY>)\n" +
				"SRTWHEP_B: unknown variable; use SRTWHEP_<KEY> or SRTWHEP_<SECTION>_<KEY> with a key of configs/srtwhep.yml (SRTWHEP_LOGLEVEL, SRTWHEP_LOGFORMAT, SRTWHEP_SRT_<KEY>, SRTWHEP_HTTP_<KEY>, SRTWHEP_WEBRTC_<KEY>, SRTWHEP_METRICS_<KEY>, SRTWHEP_READERS_<KEY>, SRTWHEP_TRANSCODE_<KEY>, SRTWHEP_API_<KEY>, SRTWHEP_AUTHHOOK_<KEY>, SRTWHEP_HOOKS_<KEY>, SRTWHEP_PATHDEFAULTS_<KEY>)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseEnv("x.yml", []byte(tc.file), tc.env)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got:  %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestLoadUsesProcessEnv covers the one path that reads os.Environ.
func TestLoadUsesProcessEnv(t *testing.T) {
	t.Setenv("SRTWHEP_WEBRTC_TCPPORT", "0")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.WebRTC.TCPPort != 0 {
		t.Errorf("tcpPort = %d, want 0 from the environment", c.WebRTC.TCPPort)
	}
	if environ()["SRTWHEP_WEBRTC_TCPPORT"] != "0" {
		t.Errorf("Environ() = %v", environ())
	}
}
