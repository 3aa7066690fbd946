package mediaplane

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"

	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// Plane is the own media plane as the WHEP server uses it: a Server on
// the shared socket, with the writer pool that steps its UDP viewers'
// senders. NewPlane checks its config, Start binds and starts, Close ends.
type Plane struct {
	cfg plane.Config
	// srv is set by Start; the methods that read it are called after.
	srv     *Server
	drops   *sockbuf.Drops
	senders senderPool // for senders on goroutines of their own
	pool    *writerPool
	started atomic.Bool
}

// NewPlane checks cfg and starts nothing.
func NewPlane(cfg plane.Config) (*Plane, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("whep: %w", err)
	}
	return &Plane{cfg: cfg.WithDefaults()}, nil
}

// Start binds the sockets and starts the Server and the pool.
func (p *Plane) Start() error {
	cfg := p.cfg
	ua, err := net.ResolveUDPAddr("udp", cfg.UDPListen)
	if err != nil {
		return fmt.Errorf("whep: UDP listen address %q: %w; use host:port like 0.0.0.0:8189", cfg.UDPListen, err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("whep: listen on UDP %s: %w; is another process (or srtwhep) using the port?", cfg.UDPListen, err)
	}
	drops := sockbuf.SizeWebRTC(uc, cfg.SocketBuffer, cfg.Logger)
	var ln net.Listener
	if cfg.TCPListen != "" {
		if ln, err = net.Listen("tcp", cfg.TCPListen); err != nil {
			uc.Close()
			return fmt.Errorf("whep: listen on TCP %s for ICE-TCP: %w; free the port or set the TCP port to 0 to disable ICE-TCP", cfg.TCPListen, err)
		}
	}
	closeAll := func() {
		uc.Close()
		if ln != nil {
			ln.Close()
		}
	}
	hosts, err := HostIPs(uc.LocalAddr().(*net.UDPAddr), cfg.PublicIPs, cfg.Interfaces, cfg.IncludeLoopback)
	if err != nil {
		closeAll()
		return err
	}
	srv, err := New(Config{
		Conn:             uc,
		TCPListener:      ln,
		HostIPs:          hosts,
		HandshakeTimeout: cfg.HandshakeTimeout,
		MaxTCPPerClient:  cfg.MaxTCPPerClient,
		// The disconnect timeout is RFC 7675's consent timeout: a viewer
		// silent this long is gone.
		ConsentTimeout: cfg.DisconnectTimeout,
		Logger:         cfg.Logger.With("component", "mediaplane"),
	})
	if err != nil {
		closeAll()
		return fmt.Errorf("whep: media plane: %w", err)
	}
	p.srv, p.drops = srv, drops
	p.senders = senderPool{srv: srv, free: make(chan *Sender, 2*runtime.GOMAXPROCS(0))}
	p.pool = newWriterPool(srv)
	srv.Start()
	p.pool.start()
	p.started.Store(true)
	return nil
}

// UDPAddr is the shared socket's address.
func (p *Plane) UDPAddr() *net.UDPAddr { return p.srv.LocalAddr() }

// TCPAddr is the ICE-TCP listener's address, "" without one.
func (p *Plane) TCPAddr() string {
	if a := p.srv.TCPAddr(); a != nil {
		return a.String()
	}
	return ""
}

// SocketStats are the media datagrams handed to the kernel and those it
// refused, and the kernel's receive drops. They count ICE-TCP frames too:
// the Server tells them apart only by route, and TCP viewers are the rare
// fallback. All are 0 before Start.
func (p *Plane) SocketStats() (datagrams, refused, receiveDrops uint64) {
	if !p.started.Load() {
		return 0, 0, 0
	}
	st := p.srv.Stats()
	return st.PacketsSent, st.SendErrors, p.drops.Count0()
}

// Stats are the Server's counters, false before Start.
func (p *Plane) Stats() (Stats, bool) {
	if !p.started.Load() {
		return Stats{}, false
	}
	return p.srv.Stats(), true
}

// Close runs once every viewer's connection has closed, so no sender is
// in the pool.
func (p *Plane) Close() {
	p.pool.close()
	_ = p.srv.Close()
}

// Answer makes the viewer for o and returns its connection with the
// answer.
func (p *Plane) Answer(_ context.Context, o plane.Offer) (plane.Conn, plane.Answer, error) {
	vc := ViewerConfig{
		Video:  Codec{PayloadType: o.Video.PayloadType, Fmtp: o.Video.Fmtp, Video: o.Video.Video},
		OnRTCP: o.OnRTCP,
		// Whatever ends the viewer (consent lost, a DTLS alert, the
		// handshake timing out) ends the session, whose sender may be
		// waiting for a frame.
		OnDone:     o.OnDone,
		OnICEStart: o.OnICEStart,
		Log:        o.Log,
	}
	if o.Audio != nil {
		a := Codec{PayloadType: o.Audio.PayloadType, Fmtp: o.Audio.Fmtp}
		vc.Audio = &a
	}
	// Faults of the offer come back as the *sdpoffer.Error they are.
	v, answer, err := p.srv.NewViewer(o.Model, vc)
	if err != nil {
		return nil, plane.Answer{}, err
	}
	c := &conn{plane: p, v: v}
	c.watch(o.Session)
	return c, plane.Answer{SDP: answer, Ufrag: v.AnswerUfrag()}, nil
}

// localICE is our side of an ICE generation: its credentials and the
// shared socket's candidates.
func (p *Plane) localICE(ufrag, pwd string) plane.ICE {
	li := plane.ICE{Ufrag: ufrag, Pwd: pwd}
	for _, c := range p.srv.Candidates() {
		li.Candidates = append(li.Candidates, "candidate:"+c)
	}
	return li
}

// senderPackets is a pooled Sender's capacity: a P-frame or a small IDR
// per system call; a larger frame takes a few (Queue flushes when full).
// Each packet slot costs 1,500 bytes, so a Sender costs about 190 KiB.
const senderPackets = 128

// senderPool lends Senders to viewers' senders on goroutines of their own
// for one frame at a time, so their buffers are as many as the senders
// sending at once (about the CPUs, plus ICE-TCP senders blocked on a full
// link), not one per viewer.
type senderPool struct {
	srv  *Server
	free chan *Sender
}

func (p *senderPool) get() *Sender {
	select {
	case snd := <-p.free:
		return snd
	default:
		return p.srv.NewSender(senderPackets)
	}
}

func (p *senderPool) put(snd *Sender) {
	select {
	case p.free <- snd:
	default: // enough are idle: this one goes to the garbage collector
	}
}
