package config

import (
	"maps"
	"reflect"
	"slices"
)

// Every key of the schema says next to its yaml tag what changing it on a
// running server takes:
//
//	reload:"live"     read each time a publisher or viewer arrives, so a
//	                  reload applies it to everyone who comes after
//	reload:"restart"  copied into a listener or component at start-up
//
// Sections (srt, webrtc, pathDefaults, …) and paths carry no tag: their
// keys do. A list is one key, so the fields of list items (iceServers)
// carry none either. TestReloadTags enforces all of this, and that every
// key of Path is live, since paths come and go with a reload.

// Changes lists the keys whose values differ between two configurations,
// as dotted YAML keys in schema order: "srt.latency",
// "pathDefaults.maxReaders", "paths[live/cam1].readTokens" for a key of a
// listed path, and "paths[live/cam1]" for a path added or removed.
type Changes struct {
	Live    []string // in effect as soon as the new Config is in use
	Restart []string // keep their running values until the server restarts
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Live) == 0 && len(c.Restart) == 0 }

// Diff compares the running configuration with a newly loaded one. A reload
// in cmd applies it like this:
//
//	next, err := config.Load(file)
//	if err != nil {
//		log.Error("config reload refused; still running on the previous config", "err", err)
//		return
//	}
//	ch := config.Diff(cur, next)
//	if len(ch.Restart) > 0 {
//		log.Warn("restart needed for: " + strings.Join(ch.Restart, ", "))
//	}
//	conf.Store(config.Reloaded(cur, next)) // ch.Live are now in effect
func Diff(old, next *Config) Changes {
	var ch Changes
	diffStruct(reflect.ValueOf(old).Elem(), reflect.ValueOf(next).Elem(), "", &ch)
	return ch
}

// Reloaded returns next with every restart key set back to its value in
// running: the configuration a running server switches to on reload. It
// still describes what the server does, so the next Diff against a file
// reports a restart key again until the server restarts. next is not
// modified.
func Reloaded(running, next *Config) *Config {
	out := *next
	keepRestart(reflect.ValueOf(running).Elem(), reflect.ValueOf(&out).Elem())
	return &out
}

// isSection reports whether a field of type t is a group of keys rather
// than one value: a struct the walker descends into, as decode does.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType)
}

func diffStruct(a, b reflect.Value, prefix string, ch *Changes) {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := tagName(f)
		if name == "" {
			continue
		}
		key := joinKey(prefix, name)
		switch {
		case f.Type == pathsType:
			diffPaths(a.Field(i).Interface().(map[string]Path), b.Field(i).Interface().(map[string]Path), ch)
		case isSection(f.Type):
			diffStruct(a.Field(i), b.Field(i), key, ch)
		case !sameValue(a.Field(i), b.Field(i)):
			if f.Tag.Get("reload") == "live" {
				ch.Live = append(ch.Live, key)
			} else {
				ch.Restart = append(ch.Restart, key)
			}
		}
	}
}

// diffPaths reports a path added or removed as a whole and a listed path's
// changed keys one by one. Every key of Path is live, so all of it is.
func diffPaths(a, b map[string]Path, ch *Changes) {
	names := slices.Collect(maps.Keys(a))
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		pa, inA := a[n]
		pb, inB := b[n]
		if inA != inB {
			ch.Live = append(ch.Live, "paths["+n+"]")
			continue
		}
		diffStruct(reflect.ValueOf(pa), reflect.ValueOf(pb), "paths["+n+"]", ch)
	}
}

// sameValue treats a nil and an empty list as equal: a file's "[]" and a
// missing key mean the same.
func sameValue(a, b reflect.Value) bool {
	if a.Kind() == reflect.Slice && a.Len() == 0 && b.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// keepRestart copies every restart key of old into cur, which must be
// settable. Paths need nothing: all their keys are live.
func keepRestart(old, cur reflect.Value) {
	t := old.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case tagName(f) == "" || f.Type == pathsType:
		case isSection(f.Type):
			keepRestart(old.Field(i), cur.Field(i))
		case f.Tag.Get("reload") != "live":
			cur.Field(i).Set(old.Field(i))
		}
	}
}
