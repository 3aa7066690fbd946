package config

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Validate checks values and their combinations. Each error starts with
// where the offending key was set (FILE:LINE, or the variable name) when
// the Config came from Load.
func (c *Config) Validate() error {
	v := &validator{c: c, w: &walker{}}
	v.top()
	v.srt()
	v.http()
	v.webrtc()
	v.readers()
	v.transcode()
	v.access()
	v.hooks()
	v.path("pathDefaults", c.PathDefaults, nil)
	for _, name := range sortedKeys(c.Paths) {
		if problem := pathNameProblem(name); problem != "" {
			v.fail("paths", "%q is not a valid path name: %s; use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1", name, problem)
			continue
		}
		def := c.PathDefaults
		v.path("paths["+name+"]", c.Paths[name], &def)
	}
	v.conflicts()
	return v.w.err()
}

type validator struct {
	c *Config
	w *walker // only for its error list and cap
}

func (v *validator) where(key string) string {
	if v.c.src == nil {
		return ""
	}
	if p, ok := v.c.src.at[key]; ok {
		return p
	}
	return v.c.src.file
}

func (v *validator) fail(key, format string, args ...any) {
	v.w.errs = append(v.w.errs, &fieldError{pos: v.where(key), key: key, msg: fmt.Sprintf(format, args...)})
}

// set reports whether key came from the file or the environment, which
// decides which side of a conflict the error points at.
func (v *validator) set(key string) bool {
	if v.c.src == nil {
		return false
	}
	_, ok := v.c.src.at[key]
	return ok
}

func (v *validator) top() {
	switch v.c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		v.fail("logLevel", "%q is not a log level; use one of debug, info, warn, error", v.c.LogLevel)
	}
	switch v.c.LogFormat {
	case "text", "json":
	default:
		v.fail("logFormat", "%q is not a log format; use text or json", v.c.LogFormat)
	}
}

func (v *validator) srt() {
	s := v.c.SRT
	v.listen("srt.listen", s.Listen, ":8890", false)
	if s.Latency < 0 {
		v.fail("srt.latency", "%s is negative; use 0 or more, e.g. 200ms (SRTO_LATENCY)", s.Latency)
	} else if s.Latency%Duration(time.Millisecond) != 0 {
		v.fail("srt.latency", "%s is not a whole number of milliseconds, which is what libsrt takes; round it, e.g. 200ms", s.Latency)
	}
	v.passphrase("srt.passphrase", s.Passphrase)
	switch s.PBKeyLen {
	case 0, 16, 24, 32:
	default:
		v.fail("srt.pbKeyLen", "%d is not an AES key length; use 16, 24 or 32 (bytes), or 0 for the libsrt default", s.PBKeyLen)
	}
	v.positive("srt.readTimeout", s.ReadTimeout, "2s")
	v.socketBuffer("srt.socketBuffer", s.SocketBuffer)
	if s.MaxPulls < 1 || s.MaxPulls > maxPulls {
		v.fail("srt.maxPulls", "%d is outside 1 to %d; use e.g. 64 (edge pulls one small VPS carries)", s.MaxPulls, maxPulls)
	}
	if s.MaxPublishers < 1 || s.MaxPublishers > maxPublishers {
		v.fail("srt.maxPublishers", "%d is outside 1 to %d; use e.g. 100 (publishers one small VPS demuxes)", s.MaxPublishers, maxPublishers)
	}
	if s.MaxPublishersPerIP < 1 || s.MaxPublishersPerIP > s.MaxPublishers {
		v.fail("srt.maxPublishersPerIP", "%d is outside 1 to srt.maxPublishers (%d); use e.g. 10 (encoders behind one address)", s.MaxPublishersPerIP, s.MaxPublishers)
	}
}

func (v *validator) webrtc() {
	r := v.c.WebRTC
	if r.ListenIP != "" {
		if _, err := netip.ParseAddr(r.ListenIP); err != nil {
			v.fail("webrtc.listenIP", "%q is not an IP address; write a local address such as 10.0.0.5, or \"\" to listen on all", r.ListenIP)
		}
	}
	// 0 lets the kernel pick the port, which suits tests and local runs;
	// viewers behind NAT need a fixed port published 1:1, hence 8189.
	if r.UDPPort < 0 || r.UDPPort > 65535 {
		v.fail("webrtc.udpPort", "%d is not a port; use 1 to 65535, e.g. 8189 (0 picks a free port, for tests and local runs)", r.UDPPort)
	}
	if r.TCPPort < 0 || r.TCPPort > 65535 {
		v.fail("webrtc.tcpPort", "%d is not a port; use 1 to 65535, e.g. 8189, or 0 to disable ICE-TCP", r.TCPPort)
	}
	for i, ip := range r.PublicIPs {
		if !ip.IsValid() {
			v.fail(fmt.Sprintf("webrtc.publicIPs[%d]", i), "is not an IP address; write an IPv4 or IPv6 address, e.g. 203.0.113.7")
		}
	}
	for i, name := range r.Interfaces {
		if strings.TrimSpace(name) == "" {
			v.fail(fmt.Sprintf("webrtc.interfaces[%d]", i), "is empty; write an interface name such as eth0, or remove the entry")
		}
	}
	for i, s := range r.ICEServers {
		v.iceServer(fmt.Sprintf("webrtc.iceServers[%d]", i), s)
	}
	if r.MaxTCPPerClient < 1 {
		v.fail("webrtc.maxTCPPerClient", "%d allows no ICE-TCP connection at all; use 1 or more, e.g. 8 (set tcpPort: 0 to turn ICE-TCP off)", r.MaxTCPPerClient)
	}
	v.positive("webrtc.handshakeTimeout", r.HandshakeTimeout, "10s")
	v.positive("webrtc.disconnectTimeout", r.DisconnectTimeout, "5s")
	// A viewer proves it is there with its RTCP reports (about one a
	// second) and ICE consent checks (a few seconds apart): a shorter
	// timeout drops healthy viewers between two of them.
	if r.DisconnectTimeout > 0 && r.DisconnectTimeout < minDisconnectTimeout {
		v.fail("webrtc.disconnectTimeout", "%s would drop healthy viewers between their RTCP reports and consent checks; use %s or more, e.g. 5s", r.DisconnectTimeout, minDisconnectTimeout)
	}
	v.socketBuffer("webrtc.socketBuffer", r.SocketBuffer)
	if r.MaxResendBitrate < 1_000_000 {
		v.fail("webrtc.maxResendBitrate", "%d bit/s would leave lossy viewers without retransmissions; use 1000000 or more, e.g. 100000000 (a tenth of a 1 Gbit/s uplink)", r.MaxResendBitrate)
	}
}

// minDisconnectTimeout is the shortest webrtc.disconnectTimeout taken.
const minDisconnectTimeout = Duration(2 * time.Second)

func (v *validator) iceServer(key string, s ICEServer) {
	if len(s.URLs) == 0 {
		v.fail(key+".urls", "is empty; list at least one URL, e.g. [stun:stun.example.org:3478]")
	}
	turn := false
	for i, u := range s.URLs {
		scheme, rest, ok := strings.Cut(u, ":")
		switch {
		case !ok || rest == "":
			v.fail(fmt.Sprintf("%s.urls[%d]", key, i), "%q is not an ICE server URL; write stun:HOST:PORT or turn:HOST:PORT", u)
		case scheme == "stun" || scheme == "stuns":
		case scheme == "turn" || scheme == "turns":
			turn = true
		default:
			v.fail(fmt.Sprintf("%s.urls[%d]", key, i), "scheme %q is not stun, stuns, turn or turns; write e.g. stun:stun.example.org:3478", scheme)
		}
		if strings.ContainsAny(u, "<>\r\n\"") {
			v.fail(fmt.Sprintf("%s.urls[%d]", key, i), "contains a character that cannot go in a Link header (< > \" or a line break); remove it")
		}
	}
	switch {
	case s.AuthSecret != "" && (s.Username != "" || s.Credential != ""):
		v.fail(key+".authSecret", "is set together with username/credential; with authSecret every viewer gets a minted time-limited credential, so remove username and credential")
	case s.AuthSecret != "" && !turn:
		v.fail(key+".authSecret", "is set but no URL is turn: or turns:; a STUN server takes no credentials, so remove authSecret or list the TURN URL")
	case s.AuthSecret == "" && s.CredentialTTL != 0:
		v.fail(key+".credentialTTL", "only applies to credentials minted from authSecret; set authSecret (coturn's static-auth-secret) or remove credentialTTL")
	case s.CredentialTTL < 0:
		v.fail(key+".credentialTTL", "%s is negative; write how long a minted TURN credential is valid, e.g. 24h, or 0 for 24h", s.CredentialTTL)
	case turn && s.AuthSecret == "" && (s.Username == "" || s.Credential == ""):
		v.fail(key, "a TURN server needs username and credential, or authSecret (coturn's static-auth-secret) to mint time-limited ones; set them or use a stun: URL")
	}
}

func (v *validator) readers() {
	r := v.c.Readers
	if r.QueueSize < 1 {
		v.fail("readers.queueSize", "%d cannot hold a frame; use 1 or more, e.g. 128 (about 4 s at 30 fps)", r.QueueSize)
	}
	if r.MaxTotal < 0 {
		v.fail("readers.maxTotal", "%d is negative; use 0 for no limit or a positive cap", r.MaxTotal)
	}
	if r.MaxCPUPercent < 0 || r.MaxCPUPercent > 100 {
		v.fail("readers.maxCPUPercent", "%d is not a percentage; use 1 to 100, e.g. 85, or 0 to disable the automatic limit", r.MaxCPUPercent)
	}
}

// path checks one path's settings; def, when given, holds pathDefaults, and
// values equal to it are skipped because they were checked (and reported)
// there.
func (v *validator) path(key string, p Path, def *Path) {
	if def == nil || p.MaxReaders != def.MaxReaders {
		if p.MaxReaders < 0 {
			v.fail(key+".maxReaders", "%d is negative; use 0 for no limit or a positive cap, e.g. 50", p.MaxReaders)
		}
	}
	if def == nil || p.Passphrase != def.Passphrase {
		v.passphrase(key+".passphrase", p.Passphrase)
	}
	if def == nil || !slices.Equal(p.ReadTokens, def.ReadTokens) {
		for i, tok := range p.ReadTokens {
			v.token(fmt.Sprintf("%s.readTokens[%d]", key, i), tok, false)
		}
	}
	if def == nil || !slices.Equal(p.PublishIPs, def.PublishIPs) {
		v.ipList(key+".publishIPs", p.PublishIPs)
	}
	if def == nil || !slices.Equal(p.ReadIPs, def.ReadIPs) {
		v.ipList(key+".readIPs", p.ReadIPs)
	}
	if def == nil || p.PublishUser != def.PublishUser || p.PublishPass != def.PublishPass {
		switch {
		case p.PublishUser != "" && p.PublishPass == "":
			v.fail(key+".publishUser", "is set but publishPass is empty; set both or neither")
		case p.PublishUser == "" && p.PublishPass != "":
			v.fail(key+".publishPass", "is set but publishUser is empty; set both or neither")
		}
		v.credential(key+".publishUser", p.PublishUser)
		v.credential(key+".publishPass", p.PublishPass)
		if n := utf8.RuneCountInString(p.PublishPass); n > 0 && n < MinTokenLength {
			v.fail(key+".publishPass", "is %d characters long, short enough to guess; %s", n, tokenFix)
		}
	}
	if def == nil || p.Audio != def.Audio {
		if p.Audio != AudioAuto && p.Audio != AudioOff {
			v.fail(key+".audio", "%q is not an audio mode; use auto (pass Opus, transcode AAC and MP2/MP3 to Opus) or off (video only)", p.Audio)
		}
	}
	if def == nil || p.AudioBitrate != def.AudioBitrate {
		// libopus accepts 6 to 510 kbit/s.
		if p.AudioBitrate < 6000 || p.AudioBitrate > 510000 {
			v.fail(key+".audioBitrate", "%d is outside Opus's range; use 6000 to 510000 bit/s, e.g. 96000", p.AudioBitrate)
		}
	}
	if def == nil || p.OverridePublisher != def.OverridePublisher {
		v.takeover(key+".overridePublisher", p.OverridePublisher)
	}
	v.pathBounds(key, p, def)
	v.pathVideo(key, p, def)
	if def == nil || p.PublisherGrace != def.PublisherGrace {
		if p.PublisherGrace < 0 {
			v.fail(key+".publisherGrace", "%s is negative; use 0 to end viewers with their publisher, or a duration such as 15s", p.PublisherGrace)
		}
	}
	v.pathSource(key, p, def)
}

// ipList checks an allow list of addresses and networks.
func (v *validator) ipList(key string, list []string) {
	for i, s := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		if _, err := netip.ParseAddr(s); err == nil {
			continue
		}
		pfx, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			v.fail(k, "%q is not an IP address or network; write e.g. 203.0.113.7 or 10.0.0.0/8", s)
		case pfx != pfx.Masked():
			v.fail(k, "%q has bits set past the prefix length; write the network address %s", s, pfx.Masked())
		}
	}
}

func (v *validator) credential(key, s string) {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(",:=#", r) }) {
		v.fail(key, "contains a space, control character or one of , : = #, which separate fields of the SRT streamid; remove it")
	}
}

func (v *validator) passphrase(key, s string) {
	if n := len(s); n != 0 && (n < 10 || n > 79) {
		v.fail(key, "is %d characters long; SRT needs 10 to 79 characters, or \"\" for no encryption", n)
	}
}

func (v *validator) positive(key string, d Duration, example string) {
	if d <= 0 {
		v.fail(key, "%s is not positive; use a duration such as %s", d, example)
	}
}

// listen checks HOST:PORT. Port 0 is allowed so that tests can ask the
// kernel for a free port.
func (v *validator) listen(key, addr, example string, optional bool) {
	if addr == "" {
		if !optional {
			v.fail(key, "is empty; write HOST:PORT or :PORT, e.g. %q", example)
		}
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.fail(key, "%q is not a listen address; write HOST:PORT or :PORT, e.g. %q", addr, example)
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.fail(key, "port %q is not a number from 0 to 65535; write e.g. %q", port, example)
		return
	}
	if strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == '/' }) {
		v.fail(key, "host %q is not an address or hostname; write e.g. %q", host, example)
	}
}

// conflicts refuses two listeners on one port and protocol, which would
// otherwise surface as "address already in use" from whichever starts last.
func (v *validator) conflicts() {
	type sock struct {
		key, host string
		port      int
	}
	parse := func(key, addr string) (sock, bool) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return sock{}, false
		}
		p, err := strconv.Atoi(port)
		return sock{key, host, p}, err == nil && p > 0
	}
	var udp, tcp []sock
	if s, ok := parse("srt.listen", v.c.SRT.Listen); ok {
		udp = append(udp, s)
	}
	if p := v.c.WebRTC.UDPPort; p > 0 && p <= 65535 {
		udp = append(udp, sock{"webrtc.udpPort", "", p})
	}
	if s, ok := parse("http.listen", v.c.HTTP.Listen); ok {
		tcp = append(tcp, s)
	}
	if p := v.c.WebRTC.TCPPort; p > 0 && p <= 65535 {
		tcp = append(tcp, sock{"webrtc.tcpPort", "", p})
	}
	for _, k := range [][2]string{{"metrics.listen", v.c.Metrics.Listen}, {"api.listen", v.c.API.Listen}} {
		if s, ok := parse(k[0], k[1]); ok {
			tcp = append(tcp, s)
		}
	}
	for _, group := range []struct {
		proto string
		socks []sock
	}{{"UDP", udp}, {"TCP", tcp}} {
		for i, a := range group.socks {
			for _, b := range group.socks[i+1:] {
				if a.port != b.port || !hostsOverlap(a.host, b.host) {
					continue
				}
				blame, other := b, a
				if !v.set(b.key) && v.set(a.key) {
					blame, other = a, b
				}
				v.fail(blame.key, "%s port %d is also used by %s; give each listener its own port", group.proto, blame.port, other.key)
			}
		}
	}
}

func hostsOverlap(a, b string) bool {
	if a == b || a == "" || b == "" {
		return true
	}
	for _, h := range []string{a, b} {
		if ip, err := netip.ParseAddr(h); err == nil && ip.IsUnspecified() {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]Path) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
