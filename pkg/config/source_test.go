package config

import (
	"net"
	"testing"
	"time"
)

func TestSourceKeys(t *testing.T) {
	file := "http:\n  publicURL: https://edge1.example.com\n" +
		"pathDefaults:\n  source: srt://origin.example.com:8890\n  sourceTimeout: 3s\n  sourceLinger: 0s\n" +
		"paths:\n  live/cam1:\n    source: \"srt://viewer:pw@10.0.0.9:9000?passphrase=0123456789ab&latency=250ms\"\n"
	c, err := parse("srtwhep.yml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.PublicURL != "https://edge1.example.com" {
		t.Errorf("publicURL = %q", c.HTTP.PublicURL)
	}
	other := c.PathConfig("live/other")
	if other.Source != "srt://origin.example.com:8890" || other.SourceTimeout != Duration(3*time.Second) || other.SourceLinger != 0 {
		t.Errorf("pathDefaults: %+v", other)
	}
	cam := c.PathConfig("live/cam1")
	if cam.SourceTimeout != Duration(3*time.Second) {
		t.Errorf("paths[live/cam1] does not inherit sourceTimeout: %+v", cam)
	}
	src, err := ParseSource(cam.Source)
	want := Source{Addr: "10.0.0.9:9000", User: "viewer", Pass: "pw", Passphrase: "0123456789ab",
		Latency: 250 * time.Millisecond, Redacted: "srt://10.0.0.9:9000"}
	if err != nil || src != want {
		t.Errorf("ParseSource = %+v, %v; want %+v", src, err, want)
	}
	if src, err := ParseSource("srt://[2001:db8::1]:8890/"); err != nil || src.Addr != "[2001:db8::1]:8890" {
		t.Errorf("IPv6 source: %+v, %v", src, err)
	}

	c, err = parseEnv("", nil, map[string]string{"SRTWHEP_PATHDEFAULTS_SOURCE": "srt://o:8890", "SRTWHEP_HTTP_PUBLICURL": "http://e:8889"})
	if err != nil || c.PathDefaults.Source != "srt://o:8890" || c.HTTP.PublicURL != "http://e:8889" {
		t.Errorf("environment: %v %q %q", err, c.PathDefaults.Source, c.HTTP.PublicURL)
	}
}

func TestSourceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string
	}{
		{"scheme", "pathDefaults:\n  source: udp://o:8890\n",
			`srtwhep.yml:2: pathDefaults.source: scheme "udp" is not srt; write srt://HOST:PORT, e.g. srt://origin.example.com:8890, optionally with ?passphrase=…&latency=200ms`},
		{"no host", "pathDefaults:\n  source: \"srt://:8890\"\n",
			`srtwhep.yml:2: pathDefaults.source: "srt://:8890" has no host; write srt://HOST:PORT, e.g. srt://origin.example.com:8890, optionally with ?passphrase=…&latency=200ms`},
		{"no slashes", "pathDefaults:\n  source: \"srt:origin:8890\"\n",
			`srtwhep.yml:2: pathDefaults.source: "srt:origin:8890" has no host; write srt://HOST:PORT, e.g. srt://origin.example.com:8890, optionally with ?passphrase=…&latency=200ms`},
		{"no port", "pathDefaults:\n  source: srt://origin\n",
			`srtwhep.yml:2: pathDefaults.source: "srt://origin" has no port (SRT has no default port); write e.g. srt://origin:8890`},
		{"bad port", "pathDefaults:\n  source: srt://origin:70000\n",
			`srtwhep.yml:2: pathDefaults.source: port "70000" is not a number from 1 to 65535; write srt://HOST:PORT, e.g. srt://origin.example.com:8890, optionally with ?passphrase=…&latency=200ms`},
		{"path", "paths:\n  live/a:\n    source: srt://origin:8890/live/b\n",
			`srtwhep.yml:3: paths[live/a].source: "srt://origin:8890/live/b" has a path (/live/b); the edge reads its own path name from the source (read:PATH), so write srt://HOST:PORT, e.g. srt://origin.example.com:8890, optionally with ?passphrase=…&latency=200ms`},
		{"unknown option", "pathDefaults:\n  source: srt://origin:8890?streamid=x\n",
			`srtwhep.yml:2: pathDefaults.source: unknown option "streamid"; the source URL takes passphrase= and latency=`},
		{"short passphrase", "pathDefaults:\n  source: srt://origin:8890?passphrase=short\n",
			`srtwhep.yml:2: pathDefaults.source: passphrase is 5 characters long; SRT needs 10 to 79, the same as the source's`},
		{"bare latency", "pathDefaults:\n  source: srt://origin:8890?latency=200000\n",
			`srtwhep.yml:2: pathDefaults.source: latency "200000" is not a duration; write it with its unit, e.g. latency=200ms (ffmpeg's srt URLs count microseconds, srt-live-transmit's milliseconds, so a bare number is ambiguous)`},
		{"credentials in error are hidden", "pathDefaults:\n  source: \"srt://u:secret@origin\"\n",
			`srtwhep.yml:2: pathDefaults.source: "srt://***@origin" has no port (SRT has no default port); write e.g. srt://origin:8890`},
		{"separator in user", "pathDefaults:\n  source: \"srt://a,b:c@origin:8890\"\n",
			`srtwhep.yml:2: pathDefaults.source: the URL's user or password contains a space, control character or one of , : = #, which separate fields of the SRT streamid; remove it`},
		{"timeout", "pathDefaults:\n  sourceTimeout: 0s\n",
			`srtwhep.yml:2: pathDefaults.sourceTimeout: 0s is not positive; use a duration such as 5s`},
		{"linger", "paths:\n  live/a:\n    sourceLinger: -1s\n",
			`srtwhep.yml:3: paths[live/a].sourceLinger: -1s is negative; use 0 to close a pull with its last viewer, or a duration such as 10s`},
		{"loop on loopback", "srt:\n  listen: \":8890\"\npathDefaults:\n  source: srt://127.0.0.1:8890\n",
			`srtwhep.yml:4: pathDefaults.source: srt://127.0.0.1:8890 is this server's own SRT listener (srt.listen ":8890"), so the path would pull from itself; write the origin's address, or remove source on the origin`},
		{"loop on localhost", "pathDefaults:\n  source: srt://localhost:8890\n",
			`srtwhep.yml:2: pathDefaults.source: srt://localhost:8890 is this server's own SRT listener (srt.listen ":8890"), so the path would pull from itself; write the origin's address, or remove source on the origin`},
		{"loop on the listen address", "srt:\n  listen: 10.1.2.3:9000\npaths:\n  live/a:\n    source: srt://10.1.2.3:9000\n",
			`srtwhep.yml:5: paths[live/a].source: srt://10.1.2.3:9000 is this server's own SRT listener (srt.listen "10.1.2.3:9000"), so the path would pull from itself; write the origin's address, or remove source on the origin`},
		{"public URL scheme", "http:\n  publicURL: edge1.example.com\n",
			`srtwhep.yml:2: http.publicURL: scheme "" is not http or https; write the address viewers reach this server at, e.g. https://edge1.example.com`},
		{"public URL query", "http:\n  publicURL: https://edge1.example.com/?a=b\n",
			`srtwhep.yml:2: http.publicURL: "https://edge1.example.com/?a=b" has a query or fragment, which session URLs cannot follow; write the address viewers reach this server at, e.g. https://edge1.example.com`},
		{"public URL no host", "http:\n  publicURL: \"https:///x\"\n",
			`srtwhep.yml:2: http.publicURL: "https:///x" has no host; write the address viewers reach this server at, e.g. https://edge1.example.com`},
		{"reconnect URL scheme", "http:\n  reconnectURL: live.example.com\n",
			`srtwhep.yml:2: http.reconnectURL: scheme "" is not http or https; write the entry point viewers should move to (a load balancer), e.g. https://live.example.com`},
		{"drain timeout negative", "http:\n  drainTimeout: -1s\n",
			`srtwhep.yml:2: http.drainTimeout: -1s is negative; use 0 (end the sessions at once) or a duration such as 5s`},
		{"no event streams", "http:\n  maxEventStreams: 0\n",
			`srtwhep.yml:2: http.maxEventStreams: 0 allows no WHEP event stream at all; use 1 or more, e.g. 1024`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseEnv("srtwhep.yml", []byte(tc.yaml), nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got:  %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// A source on another port, or on an address of another host, is no loop;
// neither is one on this host's own interface address when the listener is
// bound to loopback only.
func TestSourceNotALoop(t *testing.T) {
	for _, yaml := range []string{
		"pathDefaults:\n  source: srt://127.0.0.1:8891\n",
		"pathDefaults:\n  source: srt://192.0.2.1:8890\n",
		"srt:\n  listen: 127.0.0.1:8890\npathDefaults:\n  source: srt://10.99.99.99:8890\n",
		"srt:\n  listen: 127.0.0.1:0\npathDefaults:\n  source: srt://127.0.0.1:8890\n",
	} {
		if _, err := parseEnv("srtwhep.yml", []byte(yaml), nil); err != nil {
			t.Errorf("%q: %v", yaml, err)
		}
	}
	// This host's own interface address, found the way the check does.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil {
			continue
		}
		yaml := "pathDefaults:\n  source: srt://" + n.IP.String() + ":8890\n"
		if _, err := parseEnv("srtwhep.yml", []byte(yaml), nil); err == nil {
			t.Errorf("source on this host's address %s with srt.listen :8890 was not refused as a loop", n.IP)
		}
		break
	}
}
