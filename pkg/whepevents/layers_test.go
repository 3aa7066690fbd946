package whepevents

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// TestSSELayersQueue: a reader that never reads holds one layers event,
// the latest ladder, beside one viewercount, however many changes came.
func TestSSELayersQueue(t *testing.T) {
	es := newEventStream("s", "sess", "live/a", allEvents)
	for i := range 10 * queueMax {
		es.push(event{typ: evLayers, data: []byte(fmt.Sprintf(`{"0":[{"rid":"source","active":%v}]}`, i%2 == 0))})
		es.push(viewerCountEvent(i))
		if i%3 == 0 {
			es.push(newEvent(evActive, struct{}{}))
		}
	}
	got := es.take(nil)
	var layers []string
	for _, ev := range got {
		if ev.typ == evLayers {
			layers = append(layers, string(ev.data))
		}
	}
	if want := `{"0":[{"rid":"source","active":false}]}`; len(got) > queueMax || len(layers) != 1 || layers[0] != want {
		t.Errorf("queue of %d (max %d) holds layers %q, want only the latest %s", len(got), queueMax, layers, want)
	}
}

// TestSSELayersChange: the watcher's look sends a session's layers when
// they changed since the last sent and only then, LayersChanged at once,
// and only to the streams that asked for layers.
func TestSSELayersChange(t *testing.T) {
	var mu sync.Mutex
	data := `{"0":[{"rid":"source","active":true}]}`
	h := hub.New(hub.Config{})
	e, err := New(Config{State: h.State, Session: func(string, string) bool { return true },
		Layers: func(path, id string) ([]byte, bool) {
			mu.Lock()
			defer mu.Unlock()
			return []byte(data), id == "sess"
		}})
	if err != nil {
		t.Fatal(err)
	}
	set := func(d string) { mu.Lock(); data = d; mu.Unlock() }
	layersOf := func(es *eventStream) []string {
		var out []string
		for _, ev := range es.take(nil) {
			if ev.typ == evLayers {
				out = append(out, string(ev.data))
			}
		}
		return out
	}
	es, _ := e.open("sess", "live/a", allEvents)
	none, _ := e.open("sess", "live/a", eventBit(evViewerCount))
	if got := layersOf(es); len(got) != 1 || got[0] != data {
		t.Fatalf("at open: layers %q, want %s", got, data)
	}
	e.pollLayers()
	if got := layersOf(es); len(got) != 0 {
		t.Errorf("unchanged ladder sent again: %q", got)
	}
	set(`{"0":[{"rid":"source","active":false},{"rid":"360p","active":true}]}`)
	e.pollLayers()
	if got := layersOf(es); len(got) != 1 || got[0] != data {
		t.Errorf("after a switch: layers %q, want %s", got, data)
	}
	set(`{"0":[{"rid":"source","active":false},{"rid":"360p","active":true,"pinned":true}]}`)
	e.LayersChanged("live/a", "sess")
	if got := layersOf(es); len(got) != 1 || got[0] != data {
		t.Errorf("after a pin: layers %q, want %s", got, data)
	}
	if got := layersOf(none); len(got) != 0 {
		t.Errorf("a stream that did not ask for layers got %q", got)
	}
	if link := e.Link("live/a", "sess"); !strings.Contains(link, `events="active,inactive,reconnect,viewercount,layers"`) {
		t.Errorf("Link %s does not advertise layers", link)
	}
	e.SessionEnded("sess")
}
