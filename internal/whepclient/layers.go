package whepclient

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// LayerRel is the Link relation of WHEP's layer selection extension.
const LayerRel = "urn:ietf:params:whep:ext:core:layer"

// LayerLink returns the target of the layer selection Link among links,
// resolved against base; "" when there is none.
func LayerLink(base string, links []string) string {
	for _, field := range links {
		for _, l := range strings.Split(field, ",<") {
			l = strings.TrimPrefix(strings.TrimSpace(l), "<")
			end := strings.IndexByte(l, '>')
			if end < 0 || !strings.Contains(l[end:], `rel="`+LayerRel+`"`) {
				continue
			}
			u, err := url.Parse(base)
			if err != nil {
				return ""
			}
			ref, err := u.Parse(l[:end])
			if err != nil {
				return ""
			}
			return ref.String()
		}
	}
	return ""
}

// Layer is one layer of a layers event (or of the layer URL's GET), as a
// player reads it.
type Layer struct {
	RID           string `json:"rid"`
	EncodingID    string `json:"encodingId"`
	Width         int    `json:"width"`
	Height        int    `json:"height"`
	TargetBitrate int    `json:"targetBitrate"`
	Active        bool   `json:"active"`
	Pinned        bool   `json:"pinned"`
}

// Layers is a layers event's data read for one video: its mediaId and
// its layers, top first.
type Layers struct {
	MediaID string
	List    []Layer
}

// ParseLayers reads the data of a layers event: one video's mediaId and
// its layers.
func ParseLayers(data []byte) (Layers, error) {
	var m map[string][]Layer
	if err := json.Unmarshal(data, &m); err != nil {
		return Layers{}, fmt.Errorf("layers data %s: %w", data, err)
	}
	if len(m) != 1 {
		return Layers{}, fmt.Errorf("layers data %s: want one video, got %d", data, len(m))
	}
	for k, v := range m {
		return Layers{MediaID: k, List: v}, nil
	}
	return Layers{}, nil
}

// Active is the ID of the layer the viewer is sent; "" when none is
// marked.
func (ls Layers) Active() string {
	for _, l := range ls.List {
		if l.Active {
			return l.RID
		}
	}
	return ""
}

// Pinned is the ID of the layer the player pinned; "" while the server
// chooses.
func (ls Layers) Pinned() string {
	for _, l := range ls.List {
		if l.Pinned {
			return l.RID
		}
	}
	return ""
}

// IDs are the layers' IDs, top first.
func (ls Layers) IDs() []string {
	ids := make([]string, len(ls.List))
	for i, l := range ls.List {
		ids[i] = l.RID
	}
	return ids
}
