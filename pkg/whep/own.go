package whep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"

	"github.com/pion/ice/v4"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// ownPlane serves every viewer from pkg/mediaplane: one UDP socket (and
// an optional ICE-TCP listener) read by one goroutine for all viewers,
// and frames sent as UDP GSO messages. A connected viewer costs no
// goroutine: its writer is stepped by the plane's writerPool (one over
// ICE-TCP, whose writes block, keeps a goroutine of its own).
type ownPlane struct {
	srv     *mediaplane.Server
	drops   *sockbuf.Drops
	senders senderPool // for writers on goroutines of their own
	pool    *writerPool
}

// senderPackets is a pooled Sender's capacity: a P-frame or a small IDR
// per system call; a larger frame takes a few (Queue flushes when full).
// Each packet slot costs 1,500 bytes, so a Sender costs about 190 KiB.
const senderPackets = 128

// senderPool lends Senders to session writers for one frame at a time, so
// their buffers are as many as the writers sending at once (about the
// CPUs, plus ICE-TCP writers blocked on a full link), not one per viewer.
type senderPool struct {
	srv  *mediaplane.Server
	free chan *mediaplane.Sender
}

func (p *senderPool) get() *mediaplane.Sender {
	select {
	case snd := <-p.free:
		return snd
	default:
		return p.srv.NewSender(senderPackets)
	}
}

func (p *senderPool) put(snd *mediaplane.Sender) {
	select {
	case p.free <- snd:
	default: // enough are idle: this one goes to the garbage collector
	}
}

func listenOwn(cfg Config, s *Server) (plane, error) {
	ua, err := net.ResolveUDPAddr("udp", cfg.UDPListen)
	if err != nil {
		return nil, fmt.Errorf("whep: UDP listen address %q: %w; use host:port like 0.0.0.0:8189", cfg.UDPListen, err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("whep: listen on UDP %s: %w; is another process (or srtwhep) using the port?", cfg.UDPListen, err)
	}
	drops := sizeUDPBuffers(uc, cfg.SocketBuffer, s.log)
	var ln net.Listener
	if cfg.TCPListen != "" {
		if ln, err = net.Listen("tcp", cfg.TCPListen); err != nil {
			uc.Close()
			return nil, fmt.Errorf("whep: listen on TCP %s for ICE-TCP: %w; free the port or set the TCP port to 0 to disable ICE-TCP", cfg.TCPListen, err)
		}
	}
	closeAll := func() {
		uc.Close()
		if ln != nil {
			ln.Close()
		}
	}
	hosts, err := ownHostIPs(cfg, uc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		closeAll()
		return nil, err
	}
	srv, err := mediaplane.New(mediaplane.Config{
		Conn:             uc,
		TCPListener:      ln,
		HostIPs:          hosts,
		HandshakeTimeout: cfg.HandshakeTimeout,
		// RFC 7675 consent plays the part of pion's disconnect timeout:
		// a viewer silent this long is gone.
		ConsentTimeout: cfg.DisconnectTimeout,
		Logger:         s.log.With("component", "mediaplane"),
	})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("whep: media plane: %w", err)
	}
	return &ownPlane{srv: srv, drops: drops, pool: newWriterPool(srv),
		senders: senderPool{srv: srv, free: make(chan *mediaplane.Sender, 2*runtime.GOMAXPROCS(0))}}, nil
}

// ownHostIPs are the addresses the answer's candidates carry: the public
// IPs alone when set (NAT 1:1 replaces the local addresses, as the pion
// plane's rewrite rule does), else the bound address, else every address
// of the configured interfaces, loopback only when asked for.
func ownHostIPs(cfg Config, la *net.UDPAddr) ([]netip.Addr, error) {
	if len(cfg.PublicIPs) > 0 {
		var out []netip.Addr
		for _, s := range cfg.PublicIPs {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("whep: public IP %q: %w", s, err)
			}
			out = append(out, a.Unmap())
		}
		return out, nil
	}
	bound, _ := netip.AddrFromSlice(la.IP)
	if bound = bound.Unmap(); bound.IsValid() && !bound.IsUnspecified() {
		return []netip.Addr{bound}, nil
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("whep: list network interfaces: %w", err)
	}
	v4only := la.IP.To4() != nil
	var out []netip.Addr
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || (len(cfg.Interfaces) > 0 && !slices.Contains(cfg.Interfaces, ifc.Name)) {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			pfx, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(pfx.IP)
			ip = ip.Unmap()
			if !ok || ip.IsLinkLocalUnicast() || (v4only && !ip.Is4()) || (ip.IsLoopback() && !cfg.IncludeLoopback) {
				continue
			}
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("whep: no address to advertise on %v (interfaces %v); set webrtc.listenIP or webrtc.publicIPs", la, cfg.Interfaces)
	}
	return out, nil
}

func (p *ownPlane) udpAddr() *net.UDPAddr    { return p.srv.LocalAddr() }
func (p *ownPlane) udpDrops() *sockbuf.Drops { return p.drops }

// close runs once every session has ended, so no writer is in the pool.
func (p *ownPlane) close() {
	p.pool.close()
	_ = p.srv.Close()
}

func (p *ownPlane) tcpAddr() string {
	if a := p.srv.TCPAddr(); a != nil {
		return a.String()
	}
	return ""
}

// udpCounts counts ICE-TCP frames too: the media plane tells them apart
// only by route, and TCP viewers are the rare fallback.
func (p *ownPlane) udpCounts() (datagrams, refused uint64) {
	st := p.srv.Stats()
	return st.PacketsSent, st.SendErrors
}

// ownTransport is a viewer of the media plane.
type ownTransport struct {
	plane *ownPlane
	v     *mediaplane.Viewer
	one   [1]rtp.Packet // audio goes out a packet at a time
	// batch is the Sender of the pool worker stepping the session's
	// writer, set for the step's duration: writes queue into it and leave
	// with the worker's batch. Without one, a write takes a pooled Sender
	// and sends at once.
	batch *mediaplane.Sender
	// unwatch stops the watch on the session's end (see answer).
	unwatch func() bool
}

// opusFmtp is the answer's Opus fmtp, as the pion plane answers it.
var opusFmtp = opusCodec.SDPFmtpLine

func (p *ownPlane) answer(_ context.Context, sess *session, audio bool) (transport, string, error) {
	o := sess.offer
	vc := mediaplane.ViewerConfig{
		Video:  mediaplane.Codec{PayloadType: o.payloadType, Fmtp: o.fmtp()},
		OnRTCP: sess.onRTCP,
		// Whatever ends the viewer (consent lost, a DTLS alert, the
		// handshake timing out) ends the session, whose writer may be
		// waiting for a frame.
		OnDone: func(err error) { sess.cancel(ownEndReason(err)) },
		Log:    sess.log,
	}
	if audio {
		vc.Audio = &mediaplane.Codec{PayloadType: o.audioPT, Fmtp: opusFmtp}
	}
	// Faults of the offer come back as the *sdpoffer.Error they are.
	v, answer, err := p.srv.NewViewer(o.model, vc)
	switch {
	case errors.Is(err, mediaplane.ErrServerClosed):
		return nil, "", errServerShutdown
	case err != nil:
		return nil, "", err
	}
	// The viewer ends with the session, at once: a writer blocked on a
	// full ICE-TCP connection (a viewer that reads nothing) must not hold
	// a kick or a shutdown until the link drains. No goroutine waits for
	// it; the closing one starts only then.
	unwatch := context.AfterFunc(sess.ctx, v.Close)
	return &ownTransport{plane: p, v: v, unwatch: unwatch}, answer, nil
}

// errTransportFailed ends a session whose viewer's DTLS failed.
var errTransportFailed = errors.New("connection failed")

// ownEndReason maps why a media-plane viewer ended to the session's
// reasons, so logs and the handshake-failure count read as with pion.
func ownEndReason(err error) error {
	switch {
	case errors.Is(err, mediaplane.ErrViewerClosed):
		return errPCClosed // the session closed it: its own reason stands
	case errors.Is(err, mediaplane.ErrConsentExpired):
		return errICEFailed
	case errors.Is(err, mediaplane.ErrPeerClosed):
		return errPCClosed
	case errors.Is(err, mediaplane.ErrHandshakeTimeout):
		return errHandshakeTimeout
	case errors.Is(err, mediaplane.ErrServerClosed):
		return errServerShutdown
	}
	return fmt.Errorf("%w: %v", errTransportFailed, err)
}

func (t *ownTransport) connected() <-chan struct{} { return t.v.Connected() }
func (t *ownTransport) iceStarted() bool           { return t.v.ICEStarted() }

func (t *ownTransport) state() string {
	select {
	case <-t.v.Done():
		if errors.Is(t.v.Err(), mediaplane.ErrViewerClosed) || errors.Is(t.v.Err(), mediaplane.ErrServerClosed) {
			return "closed"
		}
		return "failed"
	default:
	}
	select {
	case <-t.v.Connected():
		return "connected"
	default:
	}
	if t.v.ICEStarted() {
		return "connecting"
	}
	return "new"
}

func (t *ownTransport) ssrcs() (video, audio uint32) { return t.v.VideoSSRC(), t.v.AudioSSRC() }
func (t *ownTransport) answeredUfrag() string        { return t.v.AnswerUfrag() }

// writeVideo sends the packets as one batch: the media plane encrypts
// them into a pooled Sender and hands them to the kernel as GSO messages
// (or, over ICE-TCP, one blocking writev).
func (t *ownTransport) writeVideo(pkts []rtp.Packet) (int, error) {
	if t.batch != nil {
		if err := t.batch.Queue(t.v, pkts); err != nil {
			return 0, err
		}
		return len(pkts), nil
	}
	snd := t.plane.senders.get()
	err := snd.SendFrame(t.v, pkts)
	t.plane.senders.put(snd)
	if err != nil {
		return 0, err
	}
	return len(pkts), nil
}

func (t *ownTransport) writeAudio(pkt *rtp.Packet) error {
	t.one[0] = *pkt
	_, err := t.writeVideo(t.one[:])
	t.one[0] = rtp.Packet{} // the payload is the path's, not ours to keep
	return err
}

func (t *ownTransport) writeRTCP(pkts []rtcp.Packet) error { return t.v.WriteRTCP(pkts) }

// trickle checks the candidates and keeps none: an ICE-lite server never
// sends checks, it answers those that come, from wherever they come.
func (t *ownTransport) trickle(cands []string) error {
	for i, c := range cands {
		if _, err := ice.UnmarshalCandidate(c); err != nil {
			return fmt.Errorf("candidate %d %q: %v", i+1, c, err)
		}
	}
	return nil
}

func (t *ownTransport) restartICE(_ context.Context, _ string, frag sdpFrag) (localICE, error) {
	if err := t.trickle(frag.candidates); err != nil {
		return localICE{}, sdpoffer.Errorf("%v", err)
	}
	ufrag, pwd, err := t.v.RestartICE(frag.ufrag)
	if err != nil {
		return localICE{}, err
	}
	li := localICE{ufrag: ufrag, pwd: pwd}
	for _, c := range t.plane.srv.Candidates() {
		li.candidates = append(li.candidates, "candidate:"+c)
	}
	return li, nil
}

// close ends the viewer: a connected one gets the RTCP BYE and DTLS
// close_notify. Once Close returns, the media plane calls no callback of
// the session any more.
func (t *ownTransport) close() {
	t.unwatch()
	t.v.Close()
}
