// Package wheplayer is the layer selection extension of WHEP ("WHEP Core
// Extensions", urn:ietf:params:whep:ext:core:layer, in the working
// group's repository beside draft-ietf-wish-whep): the 201 of every
// session names a URL where the player reads its path's renditions and
// pins one, or hands the choice back to the server's bandwidth estimate.
//
// A rendition is what the text calls an encoding: its ID is the
// encoding's rid (and encodingId, the name earlier versions of the text
// used). Our renditions are separate encodings, never spatial or temporal
// layers of one, so the fields for those are refused, not ignored: a
// player that asked for them would otherwise think it got them.
//
// The session side is here too (sessions.go): each WHEP session's switch
// between its path's renditions (pkg/abr), which its sender reads
// (whep.Config.SenderSource). The layers event is pkg/whepevents', with
// data this package makes (EventData), so the event, the GET and the
// POST's answer read the same.
package wheplayer

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/srtwhep/srtwhep/pkg/abr"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// Rel is the Link relation of the extension.
const Rel = "urn:ietf:params:whep:ext:core:layer"

// Config of the extension.
type Config struct {
	// Renditions, when set, gives the paths' renditions (*hub.Hub): a
	// viewer of a path with a ladder is moved between them from its
	// bandwidth estimate, or as its player pins. Nil: every viewer gets
	// the source.
	Renditions Renditions
	// PublicURL, as the WHEP server's: the layer URLs are absolute under
	// it, since they live on the server that holds the session.
	PublicURL string
	// AllowOrigin is the Access-Control-Allow-Origin value; default "*".
	AllowOrigin string
	// Pinned is told of every accepted pin, so the layers event can go
	// out at once rather than at the watcher's next look (nil: nobody).
	Pinned func(path, session string)
	// Refused logs a refused request (nil: not logged); the composition
	// root passes a rate-limited refusal log.
	Refused func(r *http.Request, path string, status int, slug, detail string)
	Logger  *slog.Logger
}

// Layers serves the extension and holds each WHEP session's switch.
type Layers struct {
	cfg Config
	log *slog.Logger
	// switches counts the viewers' moves between renditions.
	switches abr.Counters

	mu       sync.Mutex
	sessions map[string]*session // by session id
}

// New checks cfg and fills in defaults. It starts nothing.
func New(cfg Config) (*Layers, error) {
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.AllowOrigin == "" {
		cfg.AllowOrigin = "*"
	}
	if cfg.Pinned == nil {
		cfg.Pinned = func(string, string) {}
	}
	if cfg.Refused == nil {
		cfg.Refused = func(*http.Request, string, int, string, string) {}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Layers{cfg: cfg, log: log, sessions: make(map[string]*session)}, nil
}

// layerURL is a session's layer selection URL, under Config.PublicURL
// like its Location.
func (l *Layers) layerURL(path, id string) string {
	return whep.SessionURL(l.cfg.PublicURL, path, id, "/layer")
}

// Link is the Link header of every 201 (whep.Extension).
func (l *Layers) Link(path, id string) string {
	return "<" + l.layerURL(path, id) + `>; rel="` + Rel + `"`
}

// layer is one entry of the layers event: the text's names, plus
// encodingId (the same value as rid: earlier versions of the text and
// players written to them use it), and active and pinned, which say
// where this viewer stands on the ladder.
type layer struct {
	RID           string `json:"rid"`
	EncodingID    string `json:"encodingId"`
	Width         int    `json:"width,omitempty"`
	Height        int    `json:"height,omitempty"`
	TargetBitrate int    `json:"targetBitrate,omitempty"`
	Active        bool   `json:"active"`
	Pinned        bool   `json:"pinned,omitempty"`
}

// EventData is the layers event's data for session id on path, as the
// text has it: the video m-line's index (the mediaId) → the layers, top
// first. The GET and the POST's answer carry the same. False when path
// has no such session.
func (l *Layers) EventData(path, id string) ([]byte, bool) {
	st, ok := l.state(path, id)
	if !ok {
		return nil, false
	}
	media, ok := l.media(path, id)
	if !ok {
		return nil, false
	}
	return eventData(media, st), true
}

func eventData(media string, st LayerState) []byte {
	list := make([]layer, len(st.Layers))
	for i, x := range st.Layers {
		list[i] = layer{RID: x.ID, EncodingID: x.ID, Width: x.Width, Height: x.Height,
			TargetBitrate: x.Bitrate, Active: x.ID == st.Active, Pinned: x.ID == st.Pinned && st.Pinned != ""}
	}
	b, _ := json.Marshal(map[string][]layer{media: list}) // strings and ints
	return b
}
