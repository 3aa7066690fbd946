package main

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/config"
)

// openPaths names what anyone who reaches the SRT port may publish on: no
// credentials, no address list and no auth hook stand in the way. The
// unlisted paths (pathDefaults) come first as "every unlisted path".
func openPaths(cfg *config.Config) []string {
	return unguardedPaths(cfg, func(p config.Path) bool { return p.PublishUser == "" && len(p.PublishIPs) == 0 })
}

// unguardedPaths names the paths open says are unguarded, unlisted ones
// (pathDefaults) first; with an auth hook none is.
func unguardedPaths(cfg *config.Config, open func(config.Path) bool) []string {
	if cfg.AuthHook.URL != "" {
		return nil
	}
	var out []string
	if open(cfg.PathDefaults) {
		out = append(out, "every path not listed under paths")
	}
	var listed []string
	for name, p := range cfg.Paths {
		if open(p) {
			listed = append(listed, name)
		}
	}
	slices.Sort(listed)
	return append(out, listed...)
}

// warnOpenPublishing says once at start that publishing is open, the
// default of a workstation run (deploy.sh and the compose file set
// credentials), so an internet-facing server is not left open unnoticed.
func warnOpenPublishing(log *slog.Logger, cfg *config.Config) {
	if open := openPaths(cfg); len(open) > 0 {
		log.Warn("anyone who can reach the SRT port may publish on "+strings.Join(open, ", ")+
			"; set pathDefaults.publishUser and publishPass (or the path's own, publishIPs, or authHook.url) to require a secret",
			"srt", cfg.SRT.Listen)
	}
}

// openReadPaths names the paths anyone may watch without a token: no read
// tokens and no auth hook. An address list does not count, it is no
// secret a viewer holds.
func openReadPaths(cfg *config.Config) []string {
	return unguardedPaths(cfg, func(p config.Path) bool { return len(p.ReadTokens) == 0 })
}

// warnOpenTURN says once at start that static TURN credentials go to
// anyone: the WHEP endpoint lists them to every viewer it lets watch, and
// on an open path that is everybody, who may then relay through the TURN
// server for as long as the credentials stand. Minted ones (authSecret)
// expire, so they are not warned about.
func warnOpenTURN(log *slog.Logger, cfg *config.Config) {
	var static []string
	for _, is := range cfg.WebRTC.ICEServers {
		if is.AuthSecret == "" && (is.Username != "" || is.Credential != "") {
			static = append(static, is.URLs...)
		}
	}
	if len(static) == 0 {
		return
	}
	if open := openReadPaths(cfg); len(open) > 0 {
		log.Warn("the static TURN credentials of "+strings.Join(static, ", ")+" are served to anyone who may watch "+strings.Join(open, ", ")+
			"; set the TURN server's static-auth-secret as webrtc.iceServers[].authSecret to hand out time-limited credentials instead, or require readTokens",
			"turn", strings.Join(static, ","))
	}
}
