package ingest

import (
	"cmp"
	"fmt"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// pictureWatch warns once when a publisher's video arrives but no IDR
// with its parameter sets does within wait: GStreamer's srtsink without
// mpegtsmux alignment=7 delivers exactly that, and viewers would get 201,
// sound and a black screen. It runs on a timer, not the publisher's
// goroutine, which sits in Read; Stats is safe from any goroutine.
type pictureWatch struct {
	m      *Manager
	c      conn
	d      *tsdemux.Demuxer
	wait   time.Duration
	mu     sync.Mutex
	timer  *time.Timer
	warned bool
	done   bool
}

func (m *Manager) watchPicture(c conn, d *tsdemux.Demuxer) *pictureWatch {
	w := &pictureWatch{m: m, c: c, d: d, wait: cmp.Or(m.pictureWait, defaultPictureWait)}
	w.mu.Lock()
	w.timer = time.AfterFunc(w.wait, w.check)
	w.mu.Unlock()
	return w
}

// check runs wait after the tracks were found, and again every wait while
// no video came at all (a publisher that starts with audio).
func (w *pictureWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	st := w.d.Stats()
	switch {
	case st.IDRs > 0:
		return
	case st.DroppedAUs == 0:
		w.timer.Reset(w.wait)
		return
	}
	w.warned = true
	text := fmt.Sprintf(problemText(ReasonNoPicture), w.wait)
	w.m.problems.note(w.c.Path(), w.c.Remote(), ReasonNoPicture, true, time.Now(), text)
	w.m.log.Warn("no decodable picture", "path", w.c.Path(), "remote", w.c.Remote(),
		"reason", ReasonNoPicture, "dropped", st.DroppedAUs, "detail", text)
}

// proven is called once the publisher's stream passed provenAfter
// pictures from its first IDR: the warning, if given, no longer holds,
// and neither does an earlier publisher's refusal.
func (w *pictureWatch) proven() {
	w.mu.Lock()
	warned := w.warned
	w.warned, w.done = false, true
	w.timer.Stop()
	w.mu.Unlock()
	w.m.problems.clear(w.c.Path(), keepProfile)
	if warned {
		w.m.log.Info("decodable picture arrived", "path", w.c.Path(), "remote", w.c.Remote())
	}
}

func (w *pictureWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.timer.Stop()
}

// checkProfile warns, once per change, when a path that passes video
// through gets a profile browsers cannot decode; video: auto transcodes
// it instead (video.go).
func (m *Manager) checkProfile(c conn, mode string, info av.StreamInfo, warned *bool) {
	if mode != VideoPassthrough {
		return
	}
	bad := unplayableProfile(info.Profile)
	switch {
	case bad && !*warned:
		text := problemText(ReasonProfile)
		m.problems.note(c.Path(), c.Remote(), ReasonProfile, true, time.Now(), text)
		m.log.Warn("no decodable picture", "path", c.Path(), "remote", c.Remote(),
			"reason", ReasonProfile, "profile", info.Profile, "detail", text)
	case !bad && *warned:
		m.problems.clear(c.Path(), keepRefusal)
	}
	*warned = bad
}
