package wheplayer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/httpcors"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// Problem slugs of the layer URL.
const (
	probNoSession    = "no-session"
	probBadRequest   = "bad-layer-request"
	probUnsupported  = "unsupported-layer-field"
	probUnknownLayer = "unknown-layer"
	probWrongMedia   = "wrong-media-id"
	probContentType  = "unsupported-media-type"
	probTooLarge     = "layer-request-too-large"
	probMethod       = "method-not-allowed"
)

var problemTitles = map[string]string{
	probNoSession:    "No such session",
	probBadRequest:   "Malformed layer selection",
	probUnsupported:  "Layer selection field not supported",
	probUnknownLayer: "No such layer",
	probWrongMedia:   "No such video",
	probContentType:  "Unsupported Media Type",
	probTooLarge:     "Layer selection too large",
	probMethod:       "Method Not Allowed",
}

// maxBody bounds a selection: every field the text defines fits in 300
// bytes.
const maxBody = 4 << 10

// auto is the encodingId that hands the choice back to the estimator, as
// sending no encoding at all does.
const auto = "auto"

// Handler answers {path}/whep/{session}/layer; every other request goes
// to next. The session URL is the capability, as for its PATCH and
// DELETE: whoever holds it may choose its rendition, nobody else can
// guess it.
func (l *Layers) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.serve(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

func (l *Layers) serve(w http.ResponseWriter, r *http.Request) bool {
	path, session, sub, ok := whep.SplitSessionURL(r.URL.Path)
	if !ok || sub != "/layer" {
		return false
	}
	httpcors.Allow(w.Header(), l.cfg.AllowOrigin)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		l.handleGet(w, r, path, session)
	case http.MethodPost:
		l.handlePost(w, r, path, session)
	case http.MethodOptions:
		httpcors.Preflight(w.Header(), "OPTIONS, GET, POST", "Authorization, Content-Type")
		w.Header().Set("Accept-Post", "application/json")
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "OPTIONS, GET, POST")
		l.refuse(w, r, path, http.StatusMethodNotAllowed, probMethod,
			"POST a layer selection (application/json) to this URL, or GET the session's layers")
	}
	return true
}

func (l *Layers) refuse(w http.ResponseWriter, r *http.Request, path string, code int, slug, detail string) {
	l.cfg.Refused(r, path, code, slug, detail)
	httpproblem.Write(w, r, code, slug, problemTitles[slug], detail)
}

func (l *Layers) noSession(w http.ResponseWriter, r *http.Request, path string) {
	l.refuse(w, r, path, http.StatusNotFound, probNoSession,
		"no such WHEP session (closed, or never existed); a layer URL belongs to a live session")
}

func (l *Layers) handleGet(w http.ResponseWriter, r *http.Request, path, session string) {
	data, ok := l.EventData(path, session)
	if !ok {
		l.noSession(w, r, path)
		return
	}
	writeState(w, r, data)
}

func writeState(w http.ResponseWriter, r *http.Request, data []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

// selection is a POST's body, fields as the text names them.
type selection struct {
	media     string
	encoding  string // "" and auto: the estimator chooses
	maxWidth  int
	maxHeight int
}

// unsupported are the text's fields for layers of one encoding (SVC,
// temporal scalability), which our renditions are not.
var unsupported = []string{"spatialLayerId", "temporalLayerId", "maxSpatialLayerId", "maxTemporalLayerId"}

var known = []string{"mediaId", "rid", "encodingId", "maxWidth", "maxHeight"}

// handlePost applies a selection and answers 200 with the session's
// layers after it, as GET does (the text answers a switch with 200 OK).
func (l *Layers) handlePost(w http.ResponseWriter, r *http.Request, path, session string) {
	st, ok := l.state(path, session)
	if !ok {
		l.noSession(w, r, path)
		return
	}
	sel, code, slug, detail := readSelection(r, st)
	if code != 0 {
		l.refuse(w, r, path, code, slug, detail)
		return
	}
	media, ok := l.media(path, session)
	if !ok {
		l.noSession(w, r, path)
		return
	}
	if sel.media != "" && sel.media != media {
		l.refuse(w, r, path, http.StatusBadRequest, probWrongMedia,
			fmt.Sprintf("mediaId %q is not this session's video: its video is m-line %s, so send \"mediaId\":%q or leave it out", sel.media, media, media))
		return
	}
	pin, detail := choose(sel, st)
	if detail != "" {
		l.refuse(w, r, path, http.StatusBadRequest, probUnknownLayer, detail)
		return
	}
	found, err := l.pin(path, session, pin)
	switch {
	case !found:
		l.noSession(w, r, path)
		return
	case errors.Is(err, ErrUnknownLayer):
		// The ladder changed between the read and the pin.
		st, _ = l.state(path, session)
		l.refuse(w, r, path, http.StatusBadRequest, probUnknownLayer, unknownDetail(pin, st))
		return
	case err != nil:
		l.refuse(w, r, path, http.StatusBadRequest, probUnknownLayer, err.Error())
		return
	}
	l.log.Debug("layer chosen", "path", path, "session", session, "layer", cmpOr(pin, auto))
	l.cfg.Pinned(path, session)
	data, ok := l.EventData(path, session)
	if !ok {
		l.noSession(w, r, path)
		return
	}
	writeState(w, r, data)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readSelection parses the body; a non-zero code refuses it. An empty
// body (or {}) is a selection without constraints: back to the
// estimator, as the text has it.
func readSelection(r *http.Request, st LayerState) (sel selection, code int, slug, detail string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case err != nil:
		return sel, http.StatusBadRequest, probBadRequest, "reading the layer selection failed: " + err.Error()
	case len(body) > maxBody:
		return sel, http.StatusRequestEntityTooLarge, probTooLarge,
			fmt.Sprintf("layer selection larger than %d bytes; send a JSON object such as {\"encodingId\":%q}", maxBody, SourceLayer)
	}
	empty := len(bytes.TrimSpace(body)) == 0
	if ct := r.Header.Get("Content-Type"); !empty || ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return sel, http.StatusUnsupportedMediaType, probContentType,
				fmt.Sprintf("Content-Type must be application/json, got %q; send a JSON object such as {\"encodingId\":%q}", ct, SourceLayer)
		}
	}
	if empty {
		return sel, 0, "", ""
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return sel, http.StatusBadRequest, probBadRequest,
			fmt.Sprintf("the body must be a JSON object such as {\"mediaId\":\"0\",\"encodingId\":%q}: %v", SourceLayer, err)
	}
	for name := range fields {
		if slices.Contains(unsupported, name) {
			return sel, http.StatusBadRequest, probUnsupported,
				fmt.Sprintf("%s is not supported: this server's layers are separate encodings (renditions), not spatial or temporal layers of one; pin one with encodingId (%s) or bound it with maxHeight", name, ladder(st))
		}
		if !slices.Contains(known, name) {
			return sel, http.StatusBadRequest, probUnsupported,
				fmt.Sprintf("unknown field %q; a layer selection has %s", name, strings.Join(known, ", "))
		}
	}
	str := func(name string, dst *string) string {
		raw, ok := fields[name]
		if !ok {
			return ""
		}
		if json.Unmarshal(raw, dst) != nil {
			return fmt.Sprintf("%s must be a string, got %s", name, raw)
		}
		return ""
	}
	num := func(name string, dst *int) string {
		raw, ok := fields[name]
		if !ok {
			return ""
		}
		if json.Unmarshal(raw, dst) != nil || *dst <= 0 {
			return fmt.Sprintf("%s must be a positive whole number of pixels, got %s", name, raw)
		}
		return ""
	}
	var rid string
	for _, d := range []string{str("mediaId", &sel.media), str("rid", &rid), str("encodingId", &sel.encoding),
		num("maxWidth", &sel.maxWidth), num("maxHeight", &sel.maxHeight)} {
		if d != "" {
			return sel, http.StatusBadRequest, probBadRequest, d
		}
	}
	switch {
	case rid != "" && sel.encoding != "" && rid != sel.encoding:
		return sel, http.StatusBadRequest, probBadRequest,
			fmt.Sprintf("rid %q and encodingId %q name different layers; send one of them", rid, sel.encoding)
	case rid != "":
		sel.encoding = rid
	}
	if sel.encoding != "" && sel.encoding != auto && (sel.maxWidth > 0 || sel.maxHeight > 0) {
		return sel, http.StatusBadRequest, probBadRequest,
			"send either an encodingId or maxWidth/maxHeight, not both: an encoding names one layer already"
	}
	return sel, 0, "", ""
}

// choose turns a selection into the layer to pin ("": the estimator's
// choice); detail says why none fits.
func choose(sel selection, st LayerState) (string, string) {
	switch {
	case sel.encoding == auto:
		return "", ""
	case sel.encoding != "":
		for _, x := range st.Layers {
			if x.ID == sel.encoding {
				return x.ID, ""
			}
		}
		return "", unknownDetail(sel.encoding, st)
	case sel.maxWidth == 0 && sel.maxHeight == 0:
		return "", ""
	}
	// The ladder is top first: the first that fits is the largest.
	for _, x := range st.Layers {
		if fits(x.Width, sel.maxWidth) && fits(x.Height, sel.maxHeight) {
			return x.ID, ""
		}
	}
	return "", fmt.Sprintf("no layer fits within %s; this path's layers: %s", bounds(sel), ladder(st))
}

// fits: a size not yet known (0) fits no bound.
func fits(size, bound int) bool { return bound == 0 || size > 0 && size <= bound }

func bounds(sel selection) string {
	var b []string
	if sel.maxWidth > 0 {
		b = append(b, fmt.Sprintf("maxWidth %d", sel.maxWidth))
	}
	if sel.maxHeight > 0 {
		b = append(b, fmt.Sprintf("maxHeight %d", sel.maxHeight))
	}
	return strings.Join(b, " and ")
}

func unknownDetail(id string, st LayerState) string {
	return fmt.Sprintf("no layer %q on this path; its layers: %s (or %q for the server's choice)", id, ladder(st), auto)
}

// ladder lists the layers for a refusal's detail: "source (1280x720), 360p (640x360)".
func ladder(st LayerState) string {
	var b []string
	for _, x := range st.Layers {
		if x.Width > 0 && x.Height > 0 {
			b = append(b, fmt.Sprintf("%s (%dx%d)", x.ID, x.Width, x.Height))
		} else {
			b = append(b, x.ID)
		}
	}
	return strings.Join(b, ", ")
}
