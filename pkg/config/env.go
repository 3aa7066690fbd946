package config

import (
	"os"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// envPrefix starts every override variable: SRTWHEP_<SECTION>_<KEY> for a
// key of a section (SRTWHEP_WEBRTC_PUBLICIPS) and SRTWHEP_<KEY> for a
// top-level key (SRTWHEP_LOGLEVEL). Section and key match case-insensitively.
const envPrefix = "SRTWHEP_"

// environ returns the SRTWHEP_* variables of the process, the overrides Load
// applies.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if hasEnvPrefix(name) {
			env[name] = val
		}
	}
	return env
}

func hasEnvPrefix(name string) bool {
	return len(name) >= len(envPrefix) && strings.EqualFold(name[:len(envPrefix)], envPrefix)
}

// applyEnv decodes each override through the same code as the file, so the
// same checks apply; the variable name takes the place of FILE:LINE.
func (w *walker) applyEnv(env map[string]string) {
	names := make([]string, 0, len(env))
	for name := range env {
		if hasEnvPrefix(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names) // one run, one error order
	for _, name := range names {
		w.applyVar(name, env[name])
	}
}

var configType = reflect.TypeFor[Config]()

func (w *walker) applyVar(name, value string) {
	w.pos = func(*yaml.Node) string { return name }
	fail := func(key, format string, args ...any) { w.fail(nil, key, format, args...) }

	rest := name[len(envPrefix):]
	section, sub, hasSub := strings.Cut(rest, "_")
	top := yamlNames(configType)
	idx := indexFold(top, section)
	if idx < 0 {
		fail("", "unknown variable; use SRTWHEP_<KEY> or SRTWHEP_<SECTION>_<KEY> with a key of configs/srtwhep.yml (%s)", envCatalog(top))
		return
	}
	key := top[idx]
	field := configType.Field(fieldIndex(configType, idx))
	if field.Type == pathsType {
		fail(key, "paths can only be listed in the config file; use SRTWHEP_PATHDEFAULTS_<KEY> for settings of every path")
		return
	}
	if field.Type.Kind() != reflect.Struct || field.Type.Implements(unmarshalerType) || reflect.PointerTo(field.Type).Implements(unmarshalerType) {
		if hasSub {
			fail("", "unknown variable; %s is a single value, set it with %s%s", key, envPrefix, strings.ToUpper(key))
			return
		}
		w.decodeEnv(w.top(idx), key, value)
		return
	}
	// Descend through sections (http, then http.tls): key names have no
	// '_', so each one is the text up to the next '_'.
	typ, v := field.Type, w.top(idx)
	for {
		keys := yamlNames(typ)
		if !hasSub {
			fail(key, "%s is a section, not a value; set one of its keys, e.g. %s_%s", key, envName(key), strings.ToUpper(keys[0]))
			return
		}
		name, rest, more := strings.Cut(sub, "_")
		sidx := indexFold(keys, name)
		if rk, msg, ok := retiredKey(key + "." + name); ok && sidx < 0 {
			fail(rk, "%s", msg)
			return
		}
		if sidx < 0 {
			fail("", "unknown variable; keys of %s are %s_ followed by one of %s", key, envName(key), strings.ToUpper(strings.Join(keys, ", ")))
			return
		}
		fi := fieldIndex(typ, sidx)
		typ, v, key = typ.Field(fi).Type, v.Field(fi), key+"."+keys[sidx]
		if !isSection(typ) {
			if more {
				fail("", "unknown variable; %s is a single value, set it with %s", key, envName(key))
				return
			}
			w.decodeEnv(v, key, value)
			return
		}
		sub, hasSub = rest, more
	}
}

// envName is the variable that sets a dotted key: http.tls.domain →
// SRTWHEP_HTTP_TLS_DOMAIN.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// top returns the idx-th top-level key's field of the Config being built.
func (w *walker) top(idx int) reflect.Value {
	return reflect.ValueOf(w.cfg).Elem().Field(fieldIndex(configType, idx))
}

// decodeEnv turns the text of a variable into a node: lists are comma
// separated (or a YAML flow list when they start with '['), everything else
// is one string value.
func (w *walker) decodeEnv(v reflect.Value, key, value string) {
	var n *yaml.Node
	if v.Kind() == reflect.Slice {
		n = envList(v.Type().Elem(), value)
		if n == nil {
			w.fail(nil, key, "%q is not a valid YAML list; write comma-separated items or a flow list such as [{urls: [stun:stun.example.org:3478]}]", value)
			return
		}
	} else {
		n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	}
	w.src.at[key] = w.pos(nil)
	w.decode(v, n, key)
}

func envList(elem reflect.Type, value string) *yaml.Node {
	if strings.HasPrefix(strings.TrimSpace(value), "[") {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(value), &doc); err != nil || len(doc.Content) == 0 {
			return nil
		}
		return doc.Content[0]
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: item}
		if elem.Kind() == reflect.Struct && elem.Field(0).Type.Kind() == reflect.Slice {
			// A bare URL stands for an ICE server without credentials.
			n = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: tagName(elem.Field(0))},
				{Kind: yaml.SequenceNode, Content: []*yaml.Node{n}},
			}}
		}
		seq.Content = append(seq.Content, n)
	}
	return seq
}

func envCatalog(top []string) string {
	parts := make([]string, 0, len(top))
	for i, k := range top {
		f := configType.Field(fieldIndex(configType, i))
		switch {
		case f.Type == pathsType:
		case f.Type.Kind() == reflect.Struct:
			parts = append(parts, envPrefix+strings.ToUpper(k)+"_<KEY>")
		default:
			parts = append(parts, envPrefix+strings.ToUpper(k))
		}
	}
	return strings.Join(parts, ", ")
}
