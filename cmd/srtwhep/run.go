package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/metrics"
	"github.com/srtwhep/srtwhep/pkg/player"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// server is the composition root: the only place that knows every
// component. Each component gets its own small config copied from cfg.
type server struct {
	// cfg is the config the server started with: listeners and other
	// settings that cannot change live are read from it. Everything that
	// may change on reload reads config() instead.
	cfg   *config.Config
	conf  atomic.Pointer[config.Config]
	log   *slog.Logger
	hub   *hub.Hub
	srt   *srt.Server
	whep  *whep.Server
	demux demuxers
	load  *admission.Controller

	httpAddr    atomic.Pointer[net.TCPAddr]
	metricsAddr atomic.Pointer[net.TCPAddr]
	ready       chan struct{}

	access
	reloader
	rejects rejectCounters
}

// shutdownGrace bounds how long open HTTP requests may finish after a
// signal; the whole shutdown must stay well under 5 s.
const shutdownGrace = 2 * time.Second

// whepOpts adjust the WHEP server's config after it is derived from cfg;
// integration tests use them to install instrumentation hooks.
func newServer(cfg *config.Config, log *slog.Logger, whepOpts ...func(*whep.Config)) (*server, error) {
	s := &server{cfg: cfg, log: log, ready: make(chan struct{})}
	s.conf.Store(cfg)
	s.initAccess(cfg)
	s.initReloader(cfg.File())
	// The caps are read at every AddReader, so a reload applies to the
	// next viewer and never to one already watching.
	s.load = admission.New(admission.Config{
		MaxCPU: float64(cfg.Readers.MaxCPUPercent) / 100,
		Logger: log.With("component", "admission"),
	})
	s.hub = hub.New(hub.Config{
		QueueSize:       cfg.Readers.QueueSize,
		MaxReaders:      func(path string) int { return s.config().PathConfig(path).MaxReaders },
		MaxReadersTotal: func() int { return s.config().Readers.MaxTotal },
		Logger:          log.With("component", "hub"),
	})

	var err error
	s.srt, err = srt.New(srt.Config{
		Listen:      cfg.SRT.Listen,
		Latency:     time.Duration(cfg.SRT.Latency),
		PBKeyLen:    cfg.SRT.PBKeyLen,
		ReadTimeout: time.Duration(cfg.SRT.ReadTimeout),
		Passphrase:  s.passphrase,
		Admit:       s.admitPublisher,
		Serve:       s.servePublisher,
		Logger:      log,
	})
	if err != nil {
		return nil, fmt.Errorf("srt: %w", err)
	}

	servers := make([]whep.ICEServer, 0, len(cfg.WebRTC.ICEServers))
	for _, is := range cfg.WebRTC.ICEServers {
		servers = append(servers, whep.ICEServer{URLs: is.URLs, Username: is.Username, Credential: is.Credential})
	}
	udpListen := net.JoinHostPort(cfg.WebRTC.ListenIP, strconv.Itoa(cfg.WebRTC.UDPPort))
	tcpListen := ""
	if cfg.WebRTC.TCPPort != 0 {
		tcpListen = net.JoinHostPort(cfg.WebRTC.ListenIP, strconv.Itoa(cfg.WebRTC.TCPPort))
	}
	wcfg := whep.Config{
		UDPListen:         udpListen,
		TCPListen:         tcpListen,
		PublicIPs:         cfg.WebRTC.PublicIPStrings(),
		Interfaces:        cfg.WebRTC.Interfaces,
		IncludeLoopback:   advertiseLoopback(cfg.WebRTC.ListenIP),
		ICEServers:        servers,
		HandshakeTimeout:  time.Duration(cfg.WebRTC.HandshakeTimeout),
		DisconnectTimeout: time.Duration(cfg.WebRTC.DisconnectTimeout),
		Keepalive:         time.Duration(cfg.WebRTC.Keepalive),
		AllowOrigin:       cfg.HTTP.AllowOrigin,
		MaxBodyBytes:      cfg.HTTP.MaxBodyBytes,
		MaxHandshakes:     cfg.HTTP.MaxHandshakes,
		Source:            hubSource{s.hub, s.load, &s.rejects},
		Logger:            log.With("component", "whep"),
	}
	for _, opt := range whepOpts {
		opt(&wcfg)
	}
	s.whep, err = whep.New(wcfg)
	if err != nil {
		return nil, fmt.Errorf("webrtc: %w", err)
	}
	return s, nil
}

// Run starts every component and blocks until ctx ends or one of them
// fails; it returns only after all of them have stopped.
func (s *server) Run(ctx context.Context) error {
	httpLn, err := net.Listen("tcp", s.cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen %q: %w; free the port or change http.listen", s.cfg.HTTP.Listen, err)
	}
	s.httpAddr.Store(httpLn.Addr().(*net.TCPAddr))
	httpSrv := &http.Server{
		Handler:           s.gateWHEP(s.whep.Handler(s.routes())),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}

	defer s.closeAccess()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.hub.Run(ctx) })
	g.Go(func() error { return s.load.Run(ctx) })
	g.Go(func() error { return s.watchConfig(ctx) })
	g.Go(func() error { return s.srt.Run(ctx) })
	g.Go(func() error { return s.whep.Run(ctx) })
	metricsReady := make(chan net.Addr, 1)
	if s.cfg.Metrics.Listen != "" {
		m := metrics.New(s.metricsSources())
		g.Go(func() error {
			return m.Serve(ctx, s.cfg.Metrics.Listen, s.log.With("component", "metrics"), metricsReady)
		})
	} else {
		metricsReady <- nil
	}
	g.Go(func() error {
		err := httpSrv.Serve(httpLn)
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("http: %w", err)
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := httpSrv.Shutdown(sctx); err != nil {
			httpSrv.Close()
		}
		return nil
	})
	g.Go(func() error {
		for _, ch := range []<-chan struct{}{s.srt.Ready(), s.whep.Ready()} {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case a := <-metricsReady:
			if ta, ok := a.(*net.TCPAddr); ok {
				s.metricsAddr.Store(ta)
			}
		case <-ctx.Done():
			return nil
		}
		close(s.ready)
		s.log.Info("srtwhep ready",
			"srt", s.srt.Addr().String(),
			"http", httpLn.Addr().String(),
			"webrtc_udp", s.whep.UDPAddr().String())
		return nil
	})
	return g.Wait()
}

// Ready is closed once every listener is bound.
func (s *server) Ready() <-chan struct{} { return s.ready }

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-s.ready:
			io.WriteString(w, "ready\n")
		default:
			http.Error(w, "listeners not bound yet", http.StatusServiceUnavailable)
		}
	})
	// Before the player page, which would otherwise take every GET.
	mux.Handle(api.Prefix, s.controlAPI())
	mux.Handle("/", player.New(player.Config{
		Logger:     s.log.With("component", "player"),
		ICEServers: playerICEServers(s.cfg.WebRTC.ICEServers),
	}))
	return mux
}

// config is the live configuration: the latest valid file (see reload.go).
func (s *server) config() *config.Config { return s.conf.Load() }

func (s *server) passphrase(path string) string {
	cfg := s.config()
	if p := cfg.PathConfig(path).Passphrase; p != "" {
		return p
	}
	return cfg.SRT.Passphrase
}

// servePublisher runs on the publisher's own goroutine: socket → TS demux
// → RTP payloads cut once → hub. Nothing here waits on viewers.
func (s *server) servePublisher(ctx context.Context, c *srt.Conn) error {
	pub, err := s.hub.Publish(c.Path(), c.Remote())
	if err != nil {
		return err
	}
	defer pub.Close()
	log := s.log.With("component", "ingest", "path", c.Path(), "remote", c.Remote())
	d := tsdemux.New(c, tsdemux.Config{Logger: log, OnInfo: func(info av.StreamInfo) {
		pub.SetInfo(info)
		log.Info("stream parameters", "codec", info.Codec, "profile", info.Profile,
			"width", info.Width, "height", info.Height, "fps", info.FPS)
	}})
	s.demux.set(c.Path(), d)
	defer s.demux.remove(c.Path(), d)
	return d.Run(ctx, func(au *av.AccessUnit) error {
		au.Payloads = rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload)
		pub.Write(au)
		return nil
	})
}

// hubSource adapts the hub to the small interface the WHEP server declares,
// counting refusals by reason for srtwhep_webrtc_rejected_total.
type hubSource struct {
	h    *hub.Hub
	load *admission.Controller
	rej  *rejectCounters
}

func (hs hubSource) AddReader(path, session string) (whep.Reader, error) {
	// Past the CPU limit a new viewer is refused before it costs anything:
	// the ones already watching keep the headroom they need.
	if err := hs.load.Check(); err != nil {
		err = fmt.Errorf("%w: %v", hub.ErrServerFull, err)
		hs.rej.hubError(err)
		return nil, err
	}
	r, err := hs.h.AddReader(path, session)
	if err != nil {
		hs.rej.hubError(err)
		return nil, err
	}
	return r, nil
}

// playerICEServers hands the configured STUN/TURN servers to the player
// page in the form RTCPeerConnection takes.
func playerICEServers(in []config.ICEServer) []player.ICEServer {
	out := make([]player.ICEServer, 0, len(in))
	for _, is := range in {
		out = append(out, player.ICEServer{URLs: is.URLs, Username: is.Username, Credential: is.Credential})
	}
	return out
}
