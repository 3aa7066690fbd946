package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestReloadTags walks the schema: every key that holds a value says
// reload:"live" or reload:"restart"; sections, paths and the fields of list
// items say nothing (Diff would ignore it there); every key of Path is live,
// because Diff and Reloaded let paths come and go at run time.
func TestReloadTags(t *testing.T) {
	leaves := 0
	var walk func(typ reflect.Type, where string, inList bool)
	walk = func(typ reflect.Type, where string, inList bool) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if tagName(f) == "" {
				continue
			}
			at := where + "." + f.Name
			mode, tagged := f.Tag.Lookup("reload")
			elem := f.Type
			for elem.Kind() == reflect.Slice || elem.Kind() == reflect.Map {
				elem = elem.Elem()
			}
			switch {
			case inList || f.Type == pathsType || isSection(f.Type):
				if tagged {
					t.Errorf("%s: reload tag on a section, a path map or a list item's field, where Diff ignores it; tag the keys it holds instead", at)
				}
			case mode != "live" && mode != "restart":
				t.Errorf("%s: reload tag %q; every key says reload:\"live\" (read per publisher or viewer) or reload:\"restart\" (used at start-up)", at, mode)
			default:
				leaves++
			}
			if typ == reflect.TypeFor[Path]() && mode != "live" {
				t.Errorf("%s: a key of Path must be live, since paths are added and removed on reload", at)
			}
			if isSection(elem) && elem.PkgPath() == configType.PkgPath() {
				walk(elem, at, inList || f.Type.Kind() == reflect.Slice)
			}
		}
	}
	walk(configType, "Config", false)
	if leaves < 30 {
		t.Errorf("found %d keys, expected the whole schema", leaves)
	}
}

// TestLiveKeys pins which keys a reload applies: changing a tag is a
// change of behaviour that cmd must support, so it has to be made here too.
func TestLiveKeys(t *testing.T) {
	want := []string{"srt.passphrase", "readers.maxTotal", "api.token",
		"authHook.url", "authHook.timeout", "authHook.cacheTTL",
		"pathDefaults.maxReaders", "pathDefaults.passphrase", "pathDefaults.publishUser", "pathDefaults.publishPass",
		"pathDefaults.readTokens", "pathDefaults.publishIPs", "pathDefaults.readIPs",
		"pathDefaults.audio", "pathDefaults.audioBitrate", "pathDefaults.video", "pathDefaults.maxKeyframeInterval", "pathDefaults.renditions",
		"pathDefaults.overridePublisher", "pathDefaults.publisherGrace",
		"pathDefaults.source", "pathDefaults.sourceTimeout", "pathDefaults.sourceLinger",
		"pathDefaults.maxUnitBytes", "pathDefaults.gopCacheDuration", "pathDefaults.gopCacheBytes"}
	var live []string
	for _, key := range allKeys(configType, "") {
		if f, ok := fieldByKey(key); ok && f.Tag.Get("reload") == "live" {
			live = append(live, key)
		}
	}
	if !slices.Equal(live, want) {
		t.Errorf("live keys:\n got %v\nwant %v", live, want)
	}
}

func fieldByKey(key string) (reflect.StructField, bool) {
	typ := configType
	var f reflect.StructField
	for name := range strings.SplitSeq(key, ".") {
		var ok bool
		if f, ok = fieldByTag(typ, name); !ok {
			return f, false
		}
		typ = f.Type
	}
	return f, true
}

const pathsFile = `pathDefaults:
  maxReaders: 10
paths:
  live/cam1:
    readTokens: [viewer-token-0001]
  live/cam2: {}
`

func TestDiff(t *testing.T) {
	cases := []struct {
		name          string
		old, next     string
		live, restart []string
	}{
		{"identical", pathsFile, pathsFile, nil, nil},
		{"comments and defaults spelled out change nothing", "", "# hi\nsrt:\n  latency: 120ms\nwebrtc:\n  publicIPs: []\n", nil, nil},
		{"restart key", "", "srt:\n  latency: 300ms\n", nil, []string{"srt.latency"}},
		{"live key in a restart section", "", "srt:\n  passphrase: 0123456789\n", []string{"srt.passphrase"}, nil},
		{"both kinds, schema order", "", "logLevel: debug\nreaders:\n  maxTotal: 5\n  queueSize: 64\napi:\n  token: api-token-0123456789\nwebrtc:\n  publicIPs: [203.0.113.7]\n",
			[]string{"readers.maxTotal", "api.token"}, []string{"logLevel", "webrtc.publicIPs", "readers.queueSize"}},
		{"a list item's field changes the list", "webrtc:\n  iceServers: [{urls: [turn:t.example.org], username: u, credential: c}]\n",
			"webrtc:\n  iceServers: [{urls: [turn:t.example.org], username: u, credential: d}]\n", nil, []string{"webrtc.iceServers"}},
		{"path added", "", "paths:\n  live/cam1: {maxReaders: 3}\n", []string{"paths[live/cam1]"}, nil},
		{"path removed", pathsFile, strings.Replace(pathsFile, "  live/cam2: {}\n", "", 1), []string{"paths[live/cam2]"}, nil},
		{"key of a listed path", pathsFile, strings.Replace(pathsFile, "[viewer-token-0001]", "[viewer-token-0001, viewer-token-0002]", 1), []string{"paths[live/cam1].readTokens"}, nil},
		{"pathDefaults reach the paths that inherit them", pathsFile, strings.Replace(pathsFile, "maxReaders: 10", "maxReaders: 20", 1),
			[]string{"pathDefaults.maxReaders", "paths[live/cam1].maxReaders", "paths[live/cam2].maxReaders"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, next := mustParse(t, tc.old), mustParse(t, tc.next)
			got := Diff(old, next)
			if !slices.Equal(got.Live, tc.live) || !slices.Equal(got.Restart, tc.restart) {
				t.Errorf("Diff:\n got live %v, restart %v\nwant live %v, restart %v", got.Live, got.Restart, tc.live, tc.restart)
			}
			if got.Empty() != (len(tc.live)+len(tc.restart) == 0) {
				t.Errorf("Empty() = %v for %+v", got.Empty(), got)
			}
		})
	}
}

// TestReloaded: the reloaded config takes every live change and no restart
// change, so diffing it against the file again still lists exactly the
// restart keys, and the loaded config is left alone.
func TestReloaded(t *testing.T) {
	running := mustParse(t, pathsFile)
	next := mustParse(t, "logLevel: debug\nsrt:\n  latency: 1s\n  passphrase: 0123456789\nreaders:\n  maxTotal: 7\n"+
		"webrtc:\n  publicIPs: [203.0.113.7]\npathDefaults:\n  readIPs: [10.0.0.0/8]\npaths:\n  live/cam3: {}\n")
	nextBefore, _ := next.Dump()
	ch := Diff(running, next)

	got := Reloaded(running, next)
	if after, _ := next.Dump(); string(after) != string(nextBefore) {
		t.Errorf("Reloaded modified next:\n%s", after)
	}
	if again := Diff(running, got); !slices.Equal(again.Live, ch.Live) || len(again.Restart) != 0 {
		t.Errorf("running → reloaded: %+v, want live %v and no restart", again, ch.Live)
	}
	if rest := Diff(got, next); len(rest.Live) != 0 || !slices.Equal(rest.Restart, ch.Restart) {
		t.Errorf("reloaded → file: %+v, want restart %v only", rest, ch.Restart)
	}
	if got.LogLevel != "info" || got.SRT.Latency != running.SRT.Latency || got.SRT.Passphrase != "0123456789" ||
		got.Readers.MaxTotal != 7 || len(got.WebRTC.PublicIPs) != 0 || len(got.Paths) != 1 {
		t.Errorf("reloaded = %+v", got)
	}
	if got.File() != next.File() {
		t.Errorf("File() = %q, want the new file's %q", got.File(), next.File())
	}
}

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := parse("x.yml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
