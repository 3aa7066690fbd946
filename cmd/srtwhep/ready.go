package main

import (
	"encoding/json"
	"net"
	"os"

	"github.com/srtwhep/srtwhep/pkg/version"
	"github.com/srtwhep/srtwhep/pkg/web"
)

// boundAddrs are the addresses the listeners actually bound, which differ
// from the config when it asks for port 0. /readyz answers with them and
// -ready-file writes them, so tests and supervisors never guess a port.
type boundAddrs struct {
	SRT       string `json:"srt"`
	HTTP      string `json:"http"`
	WebRTCUDP string `json:"webrtcUDP"`
	WebRTCTCP string `json:"webrtcTCP"` // "" when ICE-TCP is off
	Metrics   string `json:"metrics"`   // "" when metrics are off
	API       string `json:"api"`       // "" when the API is off
}

// announceReady records the bound addresses and writes the ready file
// before it opens /readyz, so whoever sees either can use every listener.
// The file is written under another name and renamed, so a reader polling
// for it never sees half of it.
func (s *server) announceReady(httpAddr net.Addr, apiSrv *web.Server, metricsLn net.Listener) error {
	a := &boundAddrs{SRT: s.srt.Addr().String(), HTTP: httpAddr.String(),
		WebRTCUDP: s.whep.UDPAddr().String(), WebRTCTCP: s.whep.TCPAddr()}
	if apiSrv != nil {
		a.API = apiSrv.Addr().String()
	}
	if metricsLn != nil {
		a.Metrics = metricsLn.Addr().String()
	}
	if s.readyFile != "" {
		data, _ := json.MarshalIndent(a, "", "  ")
		tmp := s.readyFile + ".tmp"
		if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, s.readyFile); err != nil {
			return err
		}
	}
	s.addrs.Store(a)
	close(s.ready)
	s.log.Info("srtwhep ready", "srt", a.SRT, "http", a.HTTP, "webrtc_udp", a.WebRTCUDP, "api", a.API, "version", version.String())
	return nil
}
