package main

import "github.com/srtwhep/srtwhep/pkg/api"

// viewerSessions shows the control API every viewer, WHEP and SRT alike,
// and kicks whichever has the id (both are random 128-bit ids).
type viewerSessions []interface {
	APISessions() []api.Session
	KickSession(id string) bool
}

func (vs viewerSessions) APISessions() []api.Session {
	out := []api.Session{}
	for _, v := range vs {
		out = append(out, v.APISessions()...)
	}
	return out
}

func (vs viewerSessions) KickSession(id string) bool {
	for _, v := range vs {
		if v.KickSession(id) {
			return true
		}
	}
	return false
}
