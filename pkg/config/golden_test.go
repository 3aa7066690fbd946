package config

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

const exampleFile = "../../configs/srtwhep.yml"

// assertDefault compares values only; where they were set is not part of
// the configuration.
func assertDefault(t *testing.T, c *Config) {
	t.Helper()
	got := *c
	got.src = nil
	if !reflect.DeepEqual(&got, Default()) {
		a, _ := got.Dump()
		b, _ := Default().Dump()
		t.Errorf("config differs from Default():\n--- got\n%s\n--- Default()\n%s", a, b)
	}
}

// TestExampleFileIsDefault keeps the documented example and Default() equal,
// since the binary embeds Default() and users read the file.
func TestExampleFileIsDefault(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parse(exampleFile, data)
	if err != nil {
		t.Fatal(err)
	}
	assertDefault(t, c)
}

// TestExampleFileDocumentsEveryKey fails when a key exists in the schema but
// not in the example, or appears without a comment line right above it.
func TestExampleFileDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parse(exampleFile, data)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, key := range allKeys(reflect.TypeFor[Config](), "") {
		pos, ok := c.src.at[key]
		if !ok {
			t.Errorf("%s is not in %s", key, exampleFile)
			continue
		}
		line, err := lineOf(pos)
		if err != nil {
			t.Fatalf("%s: position %q: %v", key, pos, err)
		}
		// Walk up over sibling keys documented by one shared comment
		// (publishUser/publishPass).
		i := line - 2
		for i >= 0 && !strings.HasPrefix(strings.TrimSpace(lines[i]), "#") && strings.Contains(lines[i], ":") &&
			indent(lines[i]) == indent(lines[line-1]) {
			i--
		}
		if i < 0 || !strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
			t.Errorf("%s (%s) has no comment above it", key, pos)
		}
	}
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// allKeys lists the dotted keys of every field, descending into sections
// but not into list items or paths.
func allKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for _, name := range yamlNames(t) {
		f, _ := fieldByTag(t, name)
		key := joinKey(prefix, name)
		keys = append(keys, key)
		if isSection(f.Type) && f.Type.NumField() > 0 {
			keys = append(keys, allKeys(f.Type, key)...)
		}
	}
	return keys
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if tagName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// TestYAMLTags: every exported field of the schema has a camelCase yaml
// tag, so no field silently gets yaml.v3's lowercased default name and the
// walker, the env names and Dump agree on spelling.
func TestYAMLTags(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, where string)
	walk = func(typ reflect.Type, where string) {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != configType.PkgPath() || typ == reflect.TypeFor[IP]() {
			return
		}
		seen[typ] = true
		names := map[string]bool{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name := tagName(f)
			switch {
			case name == "":
				t.Errorf("%s.%s has no yaml tag", where, f.Name)
			case !unicode.IsLower(rune(name[0])) || strings.ContainsAny(name, "_- "):
				t.Errorf("%s.%s: tag %q is not camelCase", where, f.Name, name)
			case names[strings.ToLower(name)]:
				t.Errorf("%s.%s: tag %q differs from another only in case, which env names cannot tell apart", where, f.Name, name)
			}
			names[strings.ToLower(name)] = true
			walk(f.Type, where+"."+f.Name)
		}
	}
	walk(configType, "Config")
	if len(seen) < 8 {
		t.Errorf("walked %d struct types, expected the whole schema", len(seen))
	}
}

// TestDumpRoundTrip: the output of Dump (what -check prints) parses back to
// the same configuration.
func TestDumpRoundTrip(t *testing.T) {
	c := Default()
	c.LogFormat = "json"
	c.WebRTC.PublicIPs = []IP{mustIP("203.0.113.7"), mustIP("2001:db8::1")}
	c.WebRTC.Interfaces = []string{"eth0"}
	c.WebRTC.ICEServers = []ICEServer{{URLs: []string{"turn:t.example.org:3478"}, Username: "u", Credential: "c"}}
	c.PathDefaults = Path{MaxReaders: 3, Passphrase: "0123456789", Audio: AudioOff, AudioBitrate: 64000,
		Video: VideoPassthrough, MaxKeyframeInterval: Duration(10 * time.Second), SourceTimeout: Duration(time.Second), SourceLinger: 0,
		MaxUnitBytes: 1 << 20, GOPCacheDuration: Duration(4 * time.Second), GOPCacheBytes: 0}
	c.Paths["live/cam1"] = Path{MaxReaders: 0, PublishUser: "a", PublishPass: "b-0123456789abcdef", Audio: AudioAuto, AudioBitrate: 128000,
		Video: VideoTranscode, MaxKeyframeInterval: Duration(10 * time.Second),
		Source: "srt://u:p@origin.example.com:8890?latency=200ms&passphrase=0123456789x", SourceTimeout: Duration(2 * time.Second),
		MaxUnitBytes: 8 << 20, GOPCacheDuration: Duration(10 * time.Second), GOPCacheBytes: 64 << 20}
	c.HTTP.PublicURL = "https://edge1.example.com/prefix"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := c.Dump()
	if err != nil {
		t.Fatal(err)
	}
	back, err := parse("dump.yml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	back.src = nil
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip differs:\n%s", out)
	}
	for _, want := range []string{"\n  latency: 120ms\n", "- 2001:db8::1\n", "\n  live/cam1:\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
}

// lineOf returns the line number of a "FILE:LINE" position.
func lineOf(pos string) (int, error) {
	return strconv.Atoi(pos[strings.LastIndexByte(pos, ':')+1:])
}
