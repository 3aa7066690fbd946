// Package httpproblem writes the error answers of srtwhep's HTTP endpoints
// (WHEP and its extensions) as RFC 9457 problem details, or as one line of
// text for a client that prefers it.
package httpproblem

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// TypeBase prefixes the type URI of every problem (RFC 9457 §3.1.1): the
// slug after it is stable, so a client can branch on it (the player does
// for no-h264) instead of parsing the detail. The URI identifies; it need
// not resolve.
const TypeBase = "https://srtwhep.dev/problems/"

// MIME is the problem details media type.
const MIME = "application/problem+json"

// Problem is an RFC 9457 problem details object. retry_after repeats the
// Retry-After header in the body: a cross-origin page reads the header only
// when it is exposed, and a log of the body alone still says when to retry.
type Problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

// Write writes an error answer: a problem details body whose type is
// TypeBase+slug, or on a client that prefers text/plain (curl -H 'Accept:
// text/plain'), the detail as one line. title is the same for every
// answer of a slug ("": the status text). A Retry-After header set before
// it is called is mirrored into the body.
func Write(w http.ResponseWriter, r *http.Request, code int, slug, title, detail string) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	// One line, whatever a wrapped parser error contained.
	detail = strings.Join(strings.Fields(detail), " ")
	if r != nil && prefersText(r.Header.Values("Accept")) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, detail+"\n")
		return
	}
	p := Problem{Type: TypeBase + slug, Title: title, Status: code, Detail: detail}
	if p.Title == "" {
		p.Title = http.StatusText(code)
	}
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n > 0 {
		p.RetryAfter = n
	}
	h.Set("Content-Type", MIME)
	w.WriteHeader(code)
	// Quotes and <> as they are: the body is read by people in curl and
	// logs, and no HTML page embeds it.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
}

// prefersText reports whether the Accept fields rank text/plain above
// problem JSON. Each side takes the quality of its most specific matching
// range (RFC 9110 §12.5.1); a tie, no Accept at all, and curl's default
// */* get JSON, the format the WHEP contract documents.
func prefersText(accept []string) bool {
	if len(accept) == 0 {
		return false
	}
	textQ, jsonQ := -1.0, -1.0
	textSpec, jsonSpec := -1, -1
	for _, field := range accept {
		for _, part := range strings.Split(field, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
			if spec := matchSpecificity(mt, "text", "plain"); spec > textSpec {
				textSpec, textQ = spec, q
			}
			spec := max(matchSpecificity(mt, "application", "problem+json"), matchSpecificity(mt, "application", "json"))
			if spec > jsonSpec {
				jsonSpec, jsonQ = spec, q
			}
		}
	}
	return textQ > 0 && textQ > max(jsonQ, 0)
}

// matchSpecificity is how specifically the range mt matches typ/sub: 2 for
// the exact type, 1 for typ/*, 0 for */*, -1 for no match.
func matchSpecificity(mt, typ, sub string) int {
	switch mt {
	case typ + "/" + sub:
		return 2
	case typ + "/*":
		return 1
	case "*/*":
		return 0
	}
	return -1
}
