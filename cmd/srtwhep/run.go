package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/edge"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/ingest"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/metrics"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/player"
	"github.com/srtwhep/srtwhep/pkg/refusallog"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/srtread"
	"github.com/srtwhep/srtwhep/pkg/turncred"
	"github.com/srtwhep/srtwhep/pkg/version"
	"github.com/srtwhep/srtwhep/pkg/web"
	"github.com/srtwhep/srtwhep/pkg/whep"
	"github.com/srtwhep/srtwhep/pkg/whepevents"
	"github.com/srtwhep/srtwhep/pkg/wheplayer"
)

// server is the composition root: the only place that knows every
// component. Each component gets its own small config copied from cfg.
type server struct {
	cfg    *config.Config // as started; what a reload may change is read through config()
	conf   atomic.Pointer[config.Config]
	log    *slog.Logger
	policy *auth.Policy
	hub    *hub.Hub
	ingest *ingest.Manager
	srt    *srt.Server
	srtRd  *srtread.Server
	edge   *edge.Puller
	whep   *whep.Server
	// events are the WHEP server's server-sent events.
	events *whepevents.Streams
	// layers is its layer selection and each session's switch between
	// renditions (the layers event goes out on events).
	layers *wheplayer.Layers
	// plane is whep's media plane, for its metrics.
	plane *mediaplane.Plane
	// latency and resends are what every viewer's sender shares: the
	// server's share of each live frame's delay and the retransmission
	// budget, for the metrics.
	latency rtpsend.Latency
	resends rtpsend.Resends
	load    *admission.Controller
	// transcodes is the one CPU budget every transcode draws on.
	transcodes *cpubudget.Budget
	hooks      *events.Poster // nil without hooks.url

	ready     chan struct{}
	addrs     atomic.Pointer[boundAddrs] // nil until ready
	readyFile string                     // -ready-file
	playerICE []player.ICEServer
	// iceFromEndpoint: some ICE server has credentials, so the player page
	// asks the WHEP endpoint for the list instead of carrying it.
	iceFromEndpoint bool
}

// whepOpts adjust the WHEP server's and its media plane's configs after
// they are derived from cfg; integration tests use them to install
// instrumentation hooks.
func newServer(cfg *config.Config, log *slog.Logger, whepOpts ...func(*whep.Config, *plane.Config)) (*server, error) {
	s := &server{cfg: cfg, log: log, ready: make(chan struct{})}
	s.conf.Store(cfg)
	s.policy = auth.NewPolicy(accessRules(cfg), auth.ThrottleConfig{})
	if cfg.Hooks.URL != "" {
		var err error
		if s.hooks, err = events.NewPoster(events.PosterConfig{URL: cfg.Hooks.URL, Timeout: time.Duration(cfg.Hooks.Timeout),
			QueueSize: cfg.Hooks.QueueSize, Logger: log.With("component", "hooks")}); err != nil {
			return nil, fmt.Errorf("hooks: %w", err)
		}
	}
	s.load = admission.New(admission.Config{MaxCPU: float64(cfg.Readers.MaxCPUPercent) / 100, Logger: log.With("component", "admission")})
	// The caps are read at every AddReader, so a reload applies to the
	// next viewer and never to one already watching.
	s.hub = hub.New(hub.Config{
		QueueSize:       cfg.Readers.QueueSize,
		MaxReaders:      func(path string) int { return s.config().PathConfig(path).MaxReaders },
		MaxReadersTotal: func() int { return s.config().Readers.MaxTotal },
		Admit:           s.load.Check,
		GOPCache: func(path string) hub.GOPCacheLimits {
			pc := s.config().PathConfig(path)
			return hub.GOPCacheLimits{Duration: time.Duration(pc.GOPCacheDuration), Bytes: pc.GOPCacheBytes}
		},
		Logger: log.With("component", "hub"),
	})
	s.ingest = ingest.New(ingest.Config{
		Hub:    s.hub,
		Policy: s.policy,
		Keep:   func() []string { return slices.Collect(maps.Keys(s.config().Paths)) },
		Audio: func(path string) ingest.AudioSettings {
			pc := s.config().PathConfig(path)
			return ingest.AudioSettings{Off: pc.Audio == config.AudioOff, Bitrate: pc.AudioBitrate}
		},
		Video: func(path string) ingest.VideoSettings {
			pc := s.config().PathConfig(path)
			return ingest.VideoSettings{Mode: pc.Video, MaxKeyframeInterval: time.Duration(pc.MaxKeyframeInterval),
				Ladder: ladderSettings(pc.Renditions)}
		},
		Handover: func(path string) ingest.Handover {
			c := s.config()
			pc := c.PathConfig(path)
			return ingest.Handover{Takeover: takeovers[pc.OverridePublisher], Grace: time.Duration(pc.PublisherGrace),
				Credentialed: pc.PublishUser != "" || c.AuthHook.URL != ""}
		},
		MaxUnitBytes: func(path string) int { return s.config().PathConfig(path).MaxUnitBytes },
		Transcode:    s.transcodeLimits(cfg.Transcode),
		Events:       s.hooks.Func(),
		Logger:       log,
	})

	var err error
	if s.edge, err = newPuller(s, log); err != nil {
		return nil, err
	}
	if s.srtRd, err = srtread.New(srtread.Config{Hub: s.hub, Authorizer: s.policy, Events: s.hooks.Func(), Logger: log,
		Demand: s.edge.Demand, Pullable: s.edge.Pullable}); err != nil {
		return nil, err
	}
	s.srt, err = srt.New(srt.Config{
		Listen:             cfg.SRT.Listen,
		Latency:            time.Duration(cfg.SRT.Latency),
		PBKeyLen:           cfg.SRT.PBKeyLen,
		ReadTimeout:        time.Duration(cfg.SRT.ReadTimeout),
		SocketBuffer:       cfg.SRT.SocketBuffer,
		MaxPublishers:      cfg.SRT.MaxPublishers,
		MaxPublishersPerIP: cfg.SRT.MaxPublishersPerIP,
		Passphrase:         func(path string) string { return s.config().Passphrase(path) },
		Admit:              s.ingest.Admit,
		Serve:              s.ingest.Serve,
		PublisherLog:       s.ingest.PublisherLog,
		AdmitRead:          s.srtRd.Admit,
		ServeRead:          s.srtRd.Serve,
		Logger:             log,
	})
	if err != nil {
		return nil, fmt.Errorf("srt: %w", err)
	}

	var servers []turncred.Server
	for _, is := range cfg.WebRTC.ICEServers {
		servers = append(servers, turncred.Server{URLs: is.URLs, Username: is.Username, Credential: is.Credential,
			AuthSecret: is.AuthSecret, CredentialTTL: time.Duration(is.CredentialTTL)})
		if is.Username != "" || is.Credential != "" || is.AuthSecret != "" {
			// The page is served to anyone: credentials reach a viewer
			// only from the endpoint, after viewer auth.
			s.iceFromEndpoint = true
			continue
		}
		s.playerICE = append(s.playerICE, player.ICEServer{URLs: is.URLs})
	}
	pcfg := plane.Config{
		UDPListen:         cfg.WebRTC.UDPListen(),
		TCPListen:         cfg.WebRTC.TCPListen(),
		PublicIPs:         cfg.WebRTC.PublicIPStrings(),
		Interfaces:        cfg.WebRTC.Interfaces,
		IncludeLoopback:   cfg.WebRTC.AdvertiseLoopback(),
		SocketBuffer:      cfg.WebRTC.SocketBuffer,
		MaxTCPPerClient:   cfg.WebRTC.MaxTCPPerClient,
		HandshakeTimeout:  time.Duration(cfg.WebRTC.HandshakeTimeout),
		DisconnectTimeout: time.Duration(cfg.WebRTC.DisconnectTimeout),
		Logger:            log.With("component", "whep"),
	}
	s.resends.SetMaxBitrate(cfg.WebRTC.MaxResendBitrate)
	wcfg := whep.Config{
		ICEServers:       servers,
		HandshakeTimeout: time.Duration(cfg.WebRTC.HandshakeTimeout),
		AllowOrigin:      cfg.HTTP.AllowOrigin,
		MaxBodyBytes:     cfg.HTTP.MaxBodyBytes,
		Limits: admission.ViewerLimits{
			MaxHandshakes:          cfg.HTTP.MaxHandshakes,
			MaxHandshakesPerClient: cfg.HTTP.MaxHandshakesPerClient,
			OfferRate:              cfg.HTTP.OfferRate,
			OfferBurst:             cfg.HTTP.OfferBurst,
			MaxPendingOffers:       cfg.HTTP.MaxPendingOffers,
		},
		Source:     hubSource(s.hub),
		Demand:     s.edge.Demand,
		PublicURL:  cfg.HTTP.PublicURL,
		Latency:    &s.latency,
		Resends:    &s.resends,
		Authorizer: s.policy,
		Problem:    s.streamProblem,
		Events:     s.hooks.Func(),
		Logger:     log.With("component", "whep"),
	}
	for _, opt := range whepOpts {
		opt(&wcfg, &pcfg)
	}
	// Its errors name whep already.
	if s.plane, err = mediaplane.NewPlane(pcfg); err != nil {
		return s, err
	}
	wcfg.Plane = s.plane
	// The event streams ask the WHEP server for its sessions, and it
	// tells them of their ends: whichever is built first reaches the
	// other through s. Their refusals are logged like the WHEP server's
	// own.
	eventsRefused := refusallog.New(wcfg.Logger, "event stream refused")
	if s.events, err = whepevents.New(whepevents.Config{
		State:        s.hub.State,
		Session:      func(path, id string) bool { return s.whep.HasSession(path, id) },
		Layers:       func(path, id string) ([]byte, bool) { return s.layers.EventData(path, id) },
		MaxStreams:   cfg.HTTP.MaxEventStreams,
		PublicURL:    cfg.HTTP.PublicURL,
		ReconnectURL: cfg.HTTP.ReconnectURL,
		AllowOrigin:  cfg.HTTP.AllowOrigin,
		Refused: func(r *http.Request, path string, status int, slug, detail string) {
			eventsRefused.Refused(r, path, status, slug, detail, "")
		},
		Logger: wcfg.Logger,
	}); err != nil {
		return s, err
	}
	layersRefused := refusallog.New(wcfg.Logger, "layer selection refused")
	if s.layers, err = wheplayer.New(wheplayer.Config{
		Renditions:  s.hub,
		PublicURL:   cfg.HTTP.PublicURL,
		AllowOrigin: cfg.HTTP.AllowOrigin,
		Pinned:      func(path, id string) { s.events.LayersChanged(path, id) },
		Refused: func(r *http.Request, path string, status int, slug, detail string) {
			layersRefused.Refused(r, path, status, slug, detail, "")
		},
		Logger: wcfg.Logger,
	}); err != nil {
		return s, err
	}
	// The spec lists the events Link with the layer Link it needs.
	wcfg.Extensions = []whep.Extension{s.events, s.layers}
	wcfg.SenderSource = s.layers.Source
	if s.whep, err = whep.New(wcfg); err != nil {
		return s, err
	}
	return s, nil
}

// Run starts every component and blocks until ctx ends or one of them
// fails; it returns only after all of them have stopped.
func (s *server) Run(ctx context.Context) error {
	defer s.policy.Close()
	warnOpenPublishing(s.log, s.cfg)
	warnOpenTURN(s.log, s.cfg)
	if s.hooks != nil {
		// The poster outlives the components (this defer runs after
		// g.Wait), so the events of their shutdown still go out, within
		// the poster's own bounded flush.
		hooksCtx, stopHooks := context.WithCancel(context.WithoutCancel(ctx))
		hooksDone := make(chan struct{})
		go func() { _ = s.hooks.Run(hooksCtx); close(hooksDone) }()
		defer func() { stopHooks(); <-hooksDone }()
	}
	var metricsLn net.Listener
	if s.cfg.Metrics.Listen != "" {
		var err error
		if metricsLn, err = metrics.Listen(s.cfg.Metrics.Listen); err != nil {
			return err
		}
	}
	httpSrv, err := web.Listen(web.Config{
		Listen:            s.cfg.HTTP.Listen,
		IdleTimeout:       time.Duration(s.cfg.HTTP.IdleTimeout),
		BodyTimeout:       time.Duration(s.cfg.HTTP.BodyTimeout),
		MaxConns:          s.cfg.HTTP.MaxConns,
		MaxConnsPerClient: s.cfg.HTTP.MaxConnsPerClient,
		// Each viewer that plays holds its event stream's connection, and
		// a browser keeps another alive: a crowd behind one address gets
		// room for both.
		ExtraConnsPerClient: func(key string) int { return 2 * s.whep.LiveViewers(key) },
		TrustedProxies:      s.cfg.HTTP.TrustedProxies,
		TLS:                 web.TLS(s.cfg.HTTP.TLS),
		WHEP:                func(next http.Handler) http.Handler { return s.whep.Handler(s.events.Handler(s.layers.Handler(next))) },
		API:                 api.NotServed(),
		APIPrefix:           api.Prefix,
		Player: player.New(player.Config{Logger: s.log.With("component", "player"), ICEServers: s.playerICE, ICEFromEndpoint: s.iceFromEndpoint,
			PublicURL: s.cfg.HTTP.PublicURL, ReconnectURL: s.cfg.HTTP.ReconnectURL}),
		Ready:  s.readyValue,
		Logger: s.log,
	})
	if err != nil {
		if metricsLn != nil {
			metricsLn.Close()
		}
		return err
	}
	apiSrv, err := s.listenAPI()
	if err != nil {
		if metricsLn != nil {
			metricsLn.Close()
		}
		httpSrv.Close()
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	for _, run := range []func(context.Context) error{s.hub.Run, s.load.Run, s.watchConfig, s.srt.Run, s.whep.Run, s.events.Run, s.edge.Run, httpSrv.Serve} {
		g.Go(func() error { return run(ctx) })
	}
	if apiSrv != nil {
		g.Go(func() error { return apiSrv.Serve(ctx) })
	}
	if metricsLn != nil {
		// Each component describes itself in the metrics' types at scrape
		// time; the metrics package imports none of them.
		m := metrics.New(metrics.Sources{Build: metrics.BuildInfo{Version: version.String()}, Profiling: s.cfg.Metrics.Pprof,
			Paths: s.ingest.PathSamples, SRT: s.ingest.SRTSamples, WebRTC: webRTCSample(s.whep, s.events, s.plane, &s.latency, &s.resends), Hooks: s.hooks.MetricsSource(),
			MediaPlane: s.mediaPlaneSample, Refusals: s.ingest.Refusals, Panics: panicCounts, Transcode: s.transcodeSample,
			Renditions: s.renditionSample})
		g.Go(func() error { return m.Serve(ctx, metricsLn, s.log.With("component", "metrics")) })
	}
	g.Go(func() error {
		for _, ch := range []<-chan struct{}{s.srt.Ready(), s.whep.Ready()} {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil
			}
		}
		return s.announceReady(httpSrv.Addr(), apiSrv, metricsLn)
	})
	return g.Wait()
}

// listenAPI binds the control API's own listener; nil when api.listen is
// "". It trusts no proxy: nothing forwards to it but on purpose.
func (s *server) listenAPI() (*web.Server, error) {
	if s.cfg.API.Listen == "" {
		return nil, nil
	}
	return web.Listen(web.Config{
		Listen: s.cfg.API.Listen,
		API: api.Handler(api.Config{Paths: s.ingest, Sessions: viewerSessions{whepSessions{s.whep}, s.srtRd}, Authorizer: s.policy,
			AllowedHosts: s.cfg.API.AllowedHosts, Logger: s.log.With("component", "api")}),
		APIPrefix: api.Prefix,
		Ready:     s.readyValue,
		Key:       "api.listen",
		Logger:    s.log.With("component", "api"),
	})
}

// readyValue is what /readyz answers: the bound addresses, nil until
// then.
func (s *server) readyValue() any {
	if a := s.addrs.Load(); a != nil {
		return a
	}
	return nil // not a typed nil inside the interface
}

// Ready is closed once every listener is bound.
func (s *server) Ready() <-chan struct{} { return s.ready }

// config is the live configuration: the latest valid file (see reload.go).
func (s *server) config() *config.Config { return s.conf.Load() }
