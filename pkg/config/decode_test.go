package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parse decodes data as the contents of file, without the environment.
func parse(file string, data []byte) (*Config, error) { return parseEnv(file, data, nil) }

// mustIP is an IP literal for tests.
func mustIP(s string) IP { return IP{netip.MustParseAddr(s)} }

// errorCases maps a file body to the exact error parse must return; the
// same inputs seed FuzzParse.
var errorCases = []struct {
	name, yaml, want string
}{
	{"unknown key with suggestion", "webrtc:\n  udpPort: 8189\n  publicIp: [203.0.113.7]\n",
		"srtwhep.yml:3: webrtc.publicIp: unknown key; did you mean publicIPs? valid keys: listenIP, udpPort, tcpPort, maxTCPPerClient, publicIPs, interfaces, iceServers, handshakeTimeout, disconnectTimeout, socketBuffer, maxResendBitrate"},
	{"unknown top-level key", "logLevel: info\nwebrtcc: {}\n",
		"srtwhep.yml:2: webrtcc: unknown key; did you mean webrtc? valid keys: logLevel, logFormat, srt, http, webrtc, metrics, readers, transcode, api, authHook, hooks, pathDefaults, paths"},
	{"unknown key no suggestion", "srt:\n  frobnicate: 1\n",
		"srtwhep.yml:2: srt.frobnicate: unknown key; valid keys: listen, latency, passphrase, pbKeyLen, readTimeout, socketBuffer, maxPulls, maxPublishers, maxPublishersPerIP"},
	{"snake case key", "srt:\n  read_timeout: 5s\n",
		"srtwhep.yml:2: srt.read_timeout: unknown key; did you mean readTimeout? valid keys: listen, latency, passphrase, pbKeyLen, readTimeout, socketBuffer, maxPulls, maxPublishers, maxPublishersPerIP"},
	{"bad duration", "srt:\n  latency: fast\n",
		`srtwhep.yml:2: srt.latency: "fast" is not a duration; write a number with a unit (ms, s, m, h), e.g. 10s or 200ms`},
	{"duration without unit", "webrtc:\n\n  handshakeTimeout: 2\n",
		`srtwhep.yml:3: webrtc.handshakeTimeout: "2" has no unit; write e.g. 2s or 2ms`},
	{"hostname as public IP", "webrtc:\n  publicIPs:\n    - 203.0.113.7\n    - example.com\n",
		`srtwhep.yml:4: webrtc.publicIPs[1]: "example.com" is a hostname, not an IP address; Firefox rejects DNS names in ICE candidates, so write an IPv4 or IPv6 address, e.g. 203.0.113.7`},
	{"short IP", "webrtc:\n  publicIPs: [1.2.3]\n",
		`srtwhep.yml:2: webrtc.publicIPs[0]: "1.2.3" is not an IP address; write an IPv4 or IPv6 address, e.g. 203.0.113.7`},
	{"IP with port", "webrtc:\n  publicIPs: [\"203.0.113.7:8189\"]\n",
		`srtwhep.yml:2: webrtc.publicIPs[0]: "203.0.113.7:8189" includes a port; write only the address, 203.0.113.7 (the port is webrtc.udpPort)`},
	{"unspecified IP", "webrtc:\n  publicIPs: [0.0.0.0]\n",
		`srtwhep.yml:2: webrtc.publicIPs[0]: "0.0.0.0" is the unspecified address, which no browser can reach; write the public IP of this host, e.g. 203.0.113.7`},
	{"public IPs not a list", "webrtc:\n  publicIPs: 203.0.113.7\n",
		`srtwhep.yml:2: webrtc.publicIPs: expected a list, found a value ("203.0.113.7"); write [item, ...] or one "- item" line per entry`},
	{"bool not a bool", "metrics:\n  pprof: yes-please\n",
		`srtwhep.yml:2: metrics.pprof: "yes-please" is not true or false; write pprof: true or pprof: false`},
	{"port not a number", "webrtc:\n  udpPort: abc\n",
		`srtwhep.yml:2: webrtc.udpPort: "abc" is not a whole number; write digits only, e.g. 8189`},
	{"port out of range", "webrtc:\n  udpPort: 70000\n",
		`srtwhep.yml:2: webrtc.udpPort: 70000 is not a port; use 1 to 65535, e.g. 8189 (0 picks a free port, for tests and local runs)`},
	{"udp port negative", "webrtc:\n  udpPort: -1\n",
		`srtwhep.yml:2: webrtc.udpPort: -1 is not a port; use 1 to 65535, e.g. 8189 (0 picks a free port, for tests and local runs)`},
	{"udp port zero picks a free port and clashes with nothing", "srt:\n  listen: \":0\"\nwebrtc:\n  udpPort: 0\n  tcpPort: 0\n", ""},
	{"no ICE-TCP connection per client", "webrtc:\n  maxTCPPerClient: 0\n",
		`srtwhep.yml:2: webrtc.maxTCPPerClient: 0 allows no ICE-TCP connection at all; use 1 or more, e.g. 8 (set tcpPort: 0 to turn ICE-TCP off)`},
	{"tcp port negative", "webrtc:\n  tcpPort: -1\n",
		`srtwhep.yml:2: webrtc.tcpPort: -1 is not a port; use 1 to 65535, e.g. 8189, or 0 to disable ICE-TCP`},
	{"retired media plane, whatever its value", "webrtc:\n  udpPort: 8189\n  mediaPlane: own\n",
		`srtwhep.yml:3: webrtc.mediaPlane: the pion media plane is gone, srtwhep's own media plane is the only WebRTC transport; delete the line`},
	{"retired keepalive", "webrtc:\n  keepalive: 2s\n",
		`srtwhep.yml:2: webrtc.keepalive: was the pion media plane's ICE keepalive interval and is gone with it (the own plane is ICE-lite: viewers send the checks, and webrtc.disconnectTimeout ends a silent one); delete the line`},
	{"section is a scalar", "srt: 8890\n",
		`srtwhep.yml:1: srt: expected a mapping of keys, found a value ("8890"); valid keys: listen, latency, passphrase, pbKeyLen, readTimeout, socketBuffer, maxPulls, maxPublishers, maxPublishersPerIP`},
	{"scalar is a mapping", "logLevel: {a: 1}\n",
		`srtwhep.yml:1: logLevel: expected a single value, found a mapping; write e.g. logLevel: info`},
	{"empty scalar", "metrics:\n  listen:\n",
		`srtwhep.yml:2: metrics.listen: has no value; write one such as "127.0.0.1:9998" ("" for empty), or delete the line to keep the default`},
	{"empty int", "readers:\n  queueSize: ~\n",
		`srtwhep.yml:2: readers.queueSize: has no value; write one such as 128, or delete the line to keep the default`},
	{"empty list item", "webrtc:\n  publicIPs: [~]\n",
		`srtwhep.yml:2: webrtc.publicIPs[0]: has no value; write one or delete the line`},
	{"empty duration", "srt:\n  latency:\n",
		`srtwhep.yml:2: srt.latency: has no value; write one such as 120ms, or delete the line to keep the default`},
	{"duplicate key", "srt:\n  listen: \":1\"\n  listen: \":2\"\n",
		`srtwhep.yml:3: srt.listen: set twice (first at line 2); keep one`},
	{"anchor under an unknown key", "base: &b {maxReaders: 5}\n",
		"srtwhep.yml:1: base: unknown key; valid keys: logLevel, logFormat, srt, http, webrtc, metrics, readers, transcode, api, authHook, hooks, pathDefaults, paths"},
	{"merge key in path", "pathDefaults: &d {maxReaders: 5}\npaths:\n  live/a:\n    <<: *d\n",
		`srtwhep.yml:4: paths[live/a]: merge keys (<<) are not supported; write the keys out (pathDefaults covers settings shared by paths)`},
	{"bad log level", "logLevel: verbose\n",
		`srtwhep.yml:1: logLevel: "verbose" is not a log level; use one of debug, info, warn, error`},
	{"bad log format", "\n\nlogFormat: xml\n",
		`srtwhep.yml:3: logFormat: "xml" is not a log format; use text or json`},
	{"listen without port", "srt:\n  listen: \"8890\"\n",
		`srtwhep.yml:2: srt.listen: "8890" is not a listen address; write HOST:PORT or :PORT, e.g. ":8890"`},
	{"listen empty", "http:\n  listen: \"\"\n",
		`srtwhep.yml:2: http.listen: is empty; write HOST:PORT or :PORT, e.g. ":8889"`},
	{"listen bad port", "metrics:\n  listen: \":99999\"\n",
		`srtwhep.yml:2: metrics.listen: port "99999" is not a number from 0 to 65535; write e.g. "127.0.0.1:9998"`},
	{"short passphrase", "srt:\n  passphrase: short\n",
		`srtwhep.yml:2: srt.passphrase: is 5 characters long; SRT needs 10 to 79 characters, or "" for no encryption`},
	{"bad key length", "srt:\n  pbKeyLen: 20\n",
		`srtwhep.yml:2: srt.pbKeyLen: 20 is not an AES key length; use 16, 24 or 32 (bytes), or 0 for the libsrt default`},
	{"negative latency", "srt:\n  latency: -5ms\n",
		`srtwhep.yml:2: srt.latency: -5ms is negative; use 0 or more, e.g. 200ms (SRTO_LATENCY)`},
	{"zero read timeout", "srt:\n  readTimeout: 0s\n",
		`srtwhep.yml:2: srt.readTimeout: 0s is not positive; use a duration such as 2s`},
	{"tiny body limit", "http:\n  maxBodyBytes: 100\n",
		`srtwhep.yml:2: http.maxBodyBytes: 100 is too small for an SDP offer (browsers send 3 to 10 KB); use at least 1024, e.g. 65536`},
	{"no offer rate", "http:\n  offerRate: 0\n",
		`srtwhep.yml:2: http.offerRate: 0 allows no WHEP offer from any client (offers a second) at all; use 1 or more, e.g. 5`},
	{"no offer burst", "http:\n  offerBurst: -1\n",
		`srtwhep.yml:2: http.offerBurst: -1 allows no WHEP offer from any client at all; use 1 or more, e.g. 20`},
	{"no pending offers", "http:\n  maxPendingOffers: 0\n",
		`srtwhep.yml:2: http.maxPendingOffers: 0 allows no answered WHEP offer at all; use 1 or more, e.g. 512`},
	{"disconnect timeout shorter than a viewer's reports", "webrtc:\n  handshakeTimeout: 10s\n  disconnectTimeout: 1s\n",
		`srtwhep.yml:3: webrtc.disconnectTimeout: 1s would drop healthy viewers between their RTCP reports and consent checks; use 2s or more, e.g. 5s`},
	{"udp port clash (cross-field)", "srt:\n  listen: \":8890\"\nwebrtc:\n  udpPort: 8890\n",
		`srtwhep.yml:4: webrtc.udpPort: UDP port 8890 is also used by srt.listen; give each listener its own port`},
	{"tcp port clash blames the key that was set", "metrics:\n  listen: \"127.0.0.1:8889\"\n",
		`srtwhep.yml:2: metrics.listen: TCP port 8889 is also used by http.listen; give each listener its own port`},
	{"different hosts do not clash, disabled tcp does not", "http:\n  listen: 127.0.0.1:7000\nmetrics:\n  listen: 127.0.0.2:7000\nwebrtc:\n  tcpPort: 0\n", ""},
	{"ice server bad scheme", "webrtc:\n  iceServers:\n    - urls: [\"http://x\"]\n",
		`srtwhep.yml:3: webrtc.iceServers[0].urls[0]: scheme "http" is not stun, stuns, turn or turns; write e.g. stun:stun.example.org:3478`},
	{"turn without credentials", "webrtc:\n  iceServers:\n  - urls: [turn:turn.example.org:3478]\n    username: u\n",
		`srtwhep.yml:3: webrtc.iceServers[0]: a TURN server needs username and credential, or authSecret (coturn's static-auth-secret) to mint time-limited ones; set them or use a stun: URL`},
	{"turn with authSecret", "webrtc:\n  iceServers:\n  - urls: [turn:turn.example.org:3478]\n    authSecret: s3cret\n    credentialTTL: 1h\n", ""},
	{"authSecret with static credentials", "webrtc:\n  iceServers:\n  - urls: [turn:turn.example.org:3478]\n    username: u\n    credential: c\n    authSecret: s3cret\n",
		`srtwhep.yml:6: webrtc.iceServers[0].authSecret: is set together with username/credential; with authSecret every viewer gets a minted time-limited credential, so remove username and credential`},
	{"authSecret on stun", "webrtc:\n  iceServers:\n  - urls: [stun:stun.example.org:3478]\n    authSecret: s3cret\n",
		`srtwhep.yml:4: webrtc.iceServers[0].authSecret: is set but no URL is turn: or turns:; a STUN server takes no credentials, so remove authSecret or list the TURN URL`},
	{"credentialTTL without authSecret", "webrtc:\n  iceServers:\n  - urls: [turn:turn.example.org:3478]\n    username: u\n    credential: c\n    credentialTTL: 1h\n",
		`srtwhep.yml:6: webrtc.iceServers[0].credentialTTL: only applies to credentials minted from authSecret; set authSecret (coturn's static-auth-secret) or remove credentialTTL`},
	{"ice server unknown key", "webrtc:\n  iceServers:\n  - url: stun:x\n",
		`srtwhep.yml:3: webrtc.iceServers[0].url: unknown key; did you mean urls? valid keys: urls, username, credential, authSecret, credentialTTL`},
	{"transcode budget over 100", "transcode:\n  maxCPUPercent: 150\n",
		`srtwhep.yml:2: transcode.maxCPUPercent: 150 is not a percentage; use 1 to 100 of the CPU the server may use, e.g. 50, or 0 for no limit`},
	{"transcode odd height", "transcode:\n  maxHeight: 721\n",
		`srtwhep.yml:2: transcode.maxHeight: 721 is not an even picture height from 144 to 4320; use e.g. 720 (1280x720 from a 16:9 source), or 0 to keep the source's`},
	{"transcode frame rate", "transcode:\n  maxFrameRate: 1000\n",
		`srtwhep.yml:2: transcode.maxFrameRate: 1000 is not a frame rate from 5 to 120; use e.g. 30, or 0 to keep the source's`},
	{"transcode decode area as a size", "transcode:\n  maxDecodeArea: 3840\n",
		`srtwhep.yml:2: transcode.maxDecodeArea: 3840 is not a picture area from 76800 (320x240) to 67108864 pixels; use e.g. 8294400 (3840x2160), or 0 for no limit`},
	{"transcode limits off", "transcode:\n  maxCPUPercent: 0\n  maxHeight: 0\n  maxFrameRate: 0\n  maxDecodeArea: 0\n", ""},
	{"queue size zero", "readers:\n  queueSize: 0\n",
		`srtwhep.yml:2: readers.queueSize: 0 cannot hold a frame; use 1 or more, e.g. 128 (about 4 s at 30 fps)`},
	{"path name with space", "paths:\n  \"live cam\": {}\n",
		`srtwhep.yml:2: paths: "live cam" is not a valid path name: ' ' is not allowed (use letters, digits, - _ . ~ and /); use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1`},
	{"path name leading slash", "paths:\n  /live/cam: {}\n",
		`srtwhep.yml:2: paths: "/live/cam" is not a valid path name: it starts or ends with '/'; use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1`},
	{"path name dotdot", "paths:\n  live/../x: {}\n",
		`srtwhep.yml:2: paths: "live/../x" is not a valid path name: it has a '..' segment; use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1`},
	{"path name empty segment", "paths:\n  live//x: {}\n",
		`srtwhep.yml:2: paths: "live//x" is not a valid path name: it has an empty segment ('//'); use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1`},
	{"path unknown key", "paths:\n  live/cam1:\n    maxReader: 5\n",
		`srtwhep.yml:3: paths[live/cam1].maxReader: unknown key; did you mean maxReaders? valid keys: maxReaders, passphrase, publishUser, publishPass, readTokens, publishIPs, readIPs, audio, audioBitrate, video, maxKeyframeInterval, renditions, overridePublisher, publisherGrace, source, sourceTimeout, sourceLinger, maxUnitBytes, gopCacheDuration, gopCacheBytes`},
	{"audio mode", "pathDefaults:\n  audio: aac\n",
		`srtwhep.yml:2: pathDefaults.audio: "aac" is not an audio mode; use auto (pass Opus, transcode AAC and MP2/MP3 to Opus) or off (video only)`},
	{"max pulls zero", "srt:\n  maxPulls: 0\n",
		`srtwhep.yml:2: srt.maxPulls: 0 is outside 1 to 10000; use e.g. 64 (edge pulls one small VPS carries)`},
	{"max publishers per IP above the total", "srt:\n  maxPublishers: 5\n  maxPublishersPerIP: 6\n",
		`srtwhep.yml:3: srt.maxPublishersPerIP: 6 is outside 1 to srt.maxPublishers (5); use e.g. 10 (encoders behind one address)`},
	{"unit cap too small", "pathDefaults:\n  maxUnitBytes: 1000\n",
		`srtwhep.yml:2: pathDefaults.maxUnitBytes: 1000 is outside 262144 to 67108864; use e.g. 4194304 (4 MiB, above any real 4K keyframe)`},
	{"GOP cache too long", "paths:\n  live/cam1:\n    gopCacheDuration: 2m\n",
		`srtwhep.yml:3: paths[live/cam1].gopCacheDuration: 2m0s is outside 0 to 1m0s; use e.g. 10s (an 8.3 s OBS GOP fits; 0 turns the cache off)`},
	{"GOP cache bytes negative", "pathDefaults:\n  gopCacheBytes: -1\n",
		`srtwhep.yml:2: pathDefaults.gopCacheBytes: -1 is outside 0 to 536870912; use e.g. 33554432 (32 MiB: 10 s at 25 Mbit/s; 0 turns the cache off)`},
	{"video mode", "paths:\n  live/cam1:\n    video: h265\n",
		`srtwhep.yml:3: paths[live/cam1].video: "h265" is not a video mode; use auto (transcode only what browsers cannot play), passthrough (never transcode) or transcode (always)`},
	{"keyframe bound", "pathDefaults:\n  maxKeyframeInterval: 1s\n",
		`srtwhep.yml:2: pathDefaults.maxKeyframeInterval: 1s is below the transcoder's own 2s keyframe interval; use 2s or more, e.g. 4s`},
	{"audio bitrate", "paths:\n  live/cam1:\n    audioBitrate: 1000000\n",
		`srtwhep.yml:3: paths[live/cam1].audioBitrate: 1000000 is outside Opus's range; use 6000 to 510000 bit/s, e.g. 96000`},
	{"path listed twice", "paths:\n  live/a: {}\n  live/a: {maxReaders: 1}\n",
		`srtwhep.yml:3: paths[live/a]: listed twice (first at line 2); keep one`},
	{"path negative readers", "paths:\n  live/a:\n    maxReaders: -1\n",
		`srtwhep.yml:3: paths[live/a].maxReaders: -1 is negative; use 0 for no limit or a positive cap, e.g. 50`},
	{"path user without pass", "paths:\n  live/a:\n    publishUser: cam\n",
		`srtwhep.yml:3: paths[live/a].publishUser: is set but publishPass is empty; set both or neither`},
	{"credential with separator", "pathDefaults:\n  publishUser: a,b\n  publishPass: secret-pass-0123\n",
		`srtwhep.yml:2: pathDefaults.publishUser: contains a space, control character or one of , : = #, which separate fields of the SRT streamid; remove it`},
	{"read token with a space", "paths:\n  live/a:\n    readTokens: [\"a b\"]\n",
		`srtwhep.yml:3: paths[live/a].readTokens[0]: contains a space or control character, which cannot go in an Authorization: Bearer header; remove it`},
	{"empty read token", "pathDefaults:\n  readTokens: [\"\"]\n",
		`srtwhep.yml:2: pathDefaults.readTokens[0]: is empty, which no viewer can send; write a token such as a long random string, or remove the entry`},
	{"publish ip list with a hostname", "pathDefaults:\n  publishIPs:\n    - 10.0.0.0/8\n    - cam.example.org\n",
		`srtwhep.yml:4: pathDefaults.publishIPs[1]: "cam.example.org" is not an IP address or network; write e.g. 203.0.113.7 or 10.0.0.0/8`},
	{"read ip network with host bits", "paths:\n  live/a:\n    readIPs: [10.1.2.3/8]\n",
		`srtwhep.yml:3: paths[live/a].readIPs[0]: "10.1.2.3/8" has bits set past the prefix length; write the network address 10.0.0.0/8`},
	{"hook url without scheme", "authHook:\n  url: auth.example.org/check\n",
		`srtwhep.yml:2: authHook.url: scheme "" is not http or https; write e.g. http://127.0.0.1:9000/auth`},
	{"hook zero timeout", "authHook:\n  timeout: 0s\n",
		`srtwhep.yml:2: authHook.timeout: 0s is not positive; use a duration such as 2s`},
	{"event hook url without host", "hooks:\n  url: http:///events\n",
		`srtwhep.yml:2: hooks.url: "http:///events" has no host; write e.g. http://127.0.0.1:9000/events`},
	{"event hook url not http", "hooks:\n  url: ftp://cp.example.org/events\n",
		`srtwhep.yml:2: hooks.url: scheme "ftp" is not http or https; write e.g. http://127.0.0.1:9000/events`},
	{"event hook queue of zero", "hooks:\n  queueSize: 0\n",
		`srtwhep.yml:2: hooks.queueSize: 0 is outside 1 to 1000000; use e.g. 1024 (events waiting for the receiver; more are dropped)`},
	{"api token with a newline", "api:\n  token: \"a\\nb\"\n",
		`srtwhep.yml:2: api.token: contains a space or control character, which cannot go in an Authorization: Bearer header; remove it`},
	{"paths not a mapping", "paths: [live/a]\n",
		`srtwhep.yml:1: paths: expected a mapping of path name to settings, found a list; write e.g. paths: {live/cam1: {maxReaders: 50}}`},
	{"root is a list", "- a\n- b\n",
		`srtwhep.yml:1: expected a mapping of settings (logLevel: info, srt: ...); start from configs/srtwhep.yml`},
	{"syntax error", "srt:\n  listen: :8890\n latency: 1s\n",
		`srtwhep.yml:2: invalid YAML: did not find expected key; check the indentation (spaces, not tabs) and quote values that contain ": " or start with a special character`},
	{"tab indentation", "srt:\n\tlisten: \":1\"\n",
		`srtwhep.yml:2: invalid YAML: found character that cannot start any token; check the indentation (spaces, not tabs) and quote values that contain ": " or start with a special character`},
	{"two documents", "logLevel: info\n---\nlogLevel: debug\n",
		`srtwhep.yml:2: a second YAML document; keep all settings in one document and remove this --- separator`},
	{"several errors at once", "logLevel: loud\nsrt:\n  pbKeyLen: 7\n",
		"srtwhep.yml:1: logLevel: \"loud\" is not a log level; use one of debug, info, warn, error\n" +
			"srtwhep.yml:3: srt.pbKeyLen: 7 is not an AES key length; use 16, 24 or 32 (bytes), or 0 for the libsrt default"},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("srtwhep.yml", []byte(tc.yaml))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Parse(%q):\n got: %s\nwant: %s", tc.yaml, got, tc.want)
			}
		})
	}
}

func TestParseErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("srt:\n")
	for i := range 30 {
		b.WriteString("  k" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": 1\n")
	}
	_, err := parse("f.yml", []byte(b.String()))
	if err == nil {
		t.Fatal("no error for 30 unknown keys")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != "... and 20 more errors" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestParseValues(t *testing.T) {
	const doc = `
logLevel: debug
srt:
  latency: 350ms
  passphrase: 1234567890   # unquoted digits stay a string
webrtc:
  publicIPs: [203.0.113.7, "2001:db8::1", "::ffff:198.51.100.1"]
  iceServers:
    - urls: [stun:stun.example.org:3478]
    - urls: ["turn:turn.example.org:3478?transport=udp"]
      username: u
      credential: c
pathDefaults:
  maxReaders: 10
  publishUser: cam
  publishPass: s3cret-pass-0123
paths:
  live/cam1:
    maxReaders: 0       # explicit zero overrides the default of 10
  live/cam2:
    passphrase: cam2-passphrase
  live/cam3:
`
	c, err := parse("x.yml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "debug" || c.SRT.Latency != Duration(350*time.Millisecond) || c.SRT.Passphrase != "1234567890" {
		t.Errorf("top/srt: %+v %+v", c.LogLevel, c.SRT)
	}
	if got := c.WebRTC.PublicIPStrings(); strings.Join(got, " ") != "203.0.113.7 2001:db8::1 198.51.100.1" {
		t.Errorf("publicIPs = %v", got)
	}
	if len(c.WebRTC.ICEServers) != 2 || c.WebRTC.ICEServers[1].Credential != "c" {
		t.Errorf("iceServers = %+v", c.WebRTC.ICEServers)
	}
	def := Path{MaxReaders: 10, PublishUser: "cam", PublishPass: "s3cret-pass-0123", Audio: AudioAuto, AudioBitrate: 96000, Video: VideoAuto, MaxKeyframeInterval: Duration(4 * time.Second), OverridePublisher: TakeoverEntitled, PublisherGrace: Duration(15 * time.Second), SourceTimeout: edgeTimeout, SourceLinger: edgeLinger, MaxUnitBytes: 4 << 20, GOPCacheDuration: Duration(10 * time.Second), GOPCacheBytes: 32 << 20}
	for path, want := range map[string]Path{
		"live/cam1":  {MaxReaders: 0, PublishUser: "cam", PublishPass: "s3cret-pass-0123", Audio: AudioAuto, AudioBitrate: 96000, Video: VideoAuto, MaxKeyframeInterval: Duration(4 * time.Second), OverridePublisher: TakeoverEntitled, PublisherGrace: Duration(15 * time.Second), SourceTimeout: edgeTimeout, SourceLinger: edgeLinger, MaxUnitBytes: 4 << 20, GOPCacheDuration: Duration(10 * time.Second), GOPCacheBytes: 32 << 20},
		"live/cam2":  {MaxReaders: 10, Passphrase: "cam2-passphrase", PublishUser: "cam", PublishPass: "s3cret-pass-0123", Audio: AudioAuto, AudioBitrate: 96000, Video: VideoAuto, MaxKeyframeInterval: Duration(4 * time.Second), OverridePublisher: TakeoverEntitled, PublisherGrace: Duration(15 * time.Second), SourceTimeout: edgeTimeout, SourceLinger: edgeLinger, MaxUnitBytes: 4 << 20, GOPCacheDuration: Duration(10 * time.Second), GOPCacheBytes: 32 << 20},
		"live/cam3":  def,
		"not/listed": def,
	} {
		if got := c.PathConfig(path); !reflect.DeepEqual(got, want) {
			t.Errorf("PathConfig(%q) = %+v, want %+v", path, got, want)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "~\n", "---\n"} {
		c, err := parse("x.yml", []byte(doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		assertDefault(t, c)
	}
}

func TestValidateWithoutSource(t *testing.T) {
	c := Default()
	c.WebRTC.UDPPort = -1
	c.Paths["bad path"] = Path{}
	want := "webrtc.udpPort: -1 is not a port; use 1 to 65535, e.g. 8189 (0 picks a free port, for tests and local runs)\n" +
		`paths: "bad path" is not a valid path name: ' ' is not allowed (use letters, digits, - _ . ~ and /); use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v\nwant %s", err, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("/nonexistent/srtwhep.yml")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/srtwhep.yml") || !strings.HasSuffix(err.Error(), "check the -config path") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// The pathDefaults of the edge keys (sourceTimeout, sourceLinger).
const (
	edgeTimeout = Duration(5 * time.Second)
	edgeLinger  = Duration(10 * time.Second)
)
