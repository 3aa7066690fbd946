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
	if cfg.AuthHook.URL != "" {
		return nil
	}
	open := func(p config.Path) bool { return p.PublishUser == "" && len(p.PublishIPs) == 0 }
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
