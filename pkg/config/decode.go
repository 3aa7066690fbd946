package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxErrors bounds the report: past a few errors the rest are usually
// consequences (a broken indentation), and fuzzed input must not make us
// build megabytes of text.
const maxErrors = 10

// fieldError is one problem, formatted as POS: KEY: WHAT; FIX where POS is
// FILE:LINE or the environment variable that set the value.
type fieldError struct {
	pos, key, msg string
}

func (e *fieldError) Error() string {
	var b strings.Builder
	if e.pos != "" {
		b.WriteString(e.pos)
		b.WriteString(": ")
	}
	if e.key != "" {
		b.WriteString(e.key)
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	return b.String()
}

// sources records where each key (dotted, with [i] for list items and
// paths[name] for paths) got its value.
type sources struct {
	file string
	at   map[string]string
}

// Load reads the configuration: defaults, then file (skipped when file is
// ""), then the SRTWHEP_* variables of the process, then Validate.
func Load(file string) (*Config, error) {
	var data []byte
	if file != "" {
		var err error
		data, err = os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read config: %w; check the -config path", err)
		}
	}
	return parseEnv(file, data, environ())
}

// parseEnv decodes data (the contents of file, which is only used in error
// messages) over Default(), applies the overrides in env (variable name →
// value; names without the SRTWHEP_ prefix are ignored) and validates the
// result.
func parseEnv(file string, data []byte, env map[string]string) (*Config, error) {
	c := Default()
	c.src = &sources{file: file, at: map[string]string{}}
	root, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	w := &walker{cfg: c, src: c.src, pos: func(n *yaml.Node) string { return fmt.Sprintf("%s:%d", file, n.Line) }}
	if root != nil {
		w.decode(reflect.ValueOf(c).Elem(), root, "")
	}
	pathsNode, pathsPos := w.paths, w.pos
	w.applyEnv(env)
	// Paths are decoded last, over pathDefaults as the file and the
	// environment left it, so that an unset key in a path inherits.
	w.pos = pathsPos
	w.decodePaths(c, pathsNode)
	if err := w.err(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

const syntaxFix = "check the indentation (spaces, not tabs) and quote values that contain \": \" or start with a special character"

func parseDocument(file string, data []byte) (root *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxError(file, err)
		}
		return nil, &fieldError{pos: fmt.Sprintf("%s:%d", file, extra.Line),
			msg: "a second YAML document; keep all settings in one document and remove this --- separator"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root = resolveAlias(doc.Content[0])
	if isNull(root) {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &fieldError{pos: fmt.Sprintf("%s:%d", file, root.Line),
			msg: "expected a mapping of settings (logLevel: info, srt: ...); start from configs/srtwhep.yml"}
	}
	return root, nil
}

func syntaxError(file string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return &fieldError{pos: file + ":" + m[1], msg: "invalid YAML: " + m[2] + "; " + syntaxFix}
	}
	return &fieldError{pos: file, msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ") + "; " + syntaxFix}
}

// walker decodes yaml.Node trees into the config structs by hand rather
// than with yaml's KnownFields, because the errors must carry the full key
// path, the list of valid keys and a fix, and because paths need to know
// which of their keys were set.
type walker struct {
	cfg   *Config
	src   *sources
	pos   func(*yaml.Node) string
	errs  []error
	paths *yaml.Node // the paths mapping, decoded after the environment
}

func (w *walker) fail(n *yaml.Node, key, format string, args ...any) {
	w.errs = append(w.errs, &fieldError{pos: w.pos(n), key: key, msg: fmt.Sprintf(format, args...)})
}

func (w *walker) err() error {
	if len(w.errs) > maxErrors {
		more := len(w.errs) - maxErrors
		w.errs = append(w.errs[:maxErrors:maxErrors], fmt.Errorf("... and %d more errors", more))
	}
	return errors.Join(w.errs...)
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	pathsType       = reflect.TypeFor[map[string]Path]()
)

// decode writes n into v, which holds the current (default) value.
func (w *walker) decode(v reflect.Value, n *yaml.Node, key string) {
	n = resolveAlias(n)
	if n.Kind == yaml.AliasNode {
		w.fail(n, key, "alias chain too deep; write the value out")
		return
	}
	switch {
	case v.Type() == pathsType:
		if !isNull(n) {
			w.paths = n
		}
		return
	case v.Kind() == reflect.Struct && !reflect.PointerTo(v.Type()).Implements(unmarshalerType):
		w.decodeStruct(v, n, key)
		return
	case v.Kind() == reflect.Slice:
		w.decodeSlice(v, n, key)
		return
	}
	if isNull(n) {
		switch {
		case v.Kind() == reflect.String:
			w.fail(n, key, "has no value; write one such as %q (\"\" for empty), or delete the line to keep the default", v.String())
		case v.IsZero() && v.Kind() == reflect.Struct:
			w.fail(n, key, "has no value; write one or delete the line")
		default:
			w.fail(n, key, "has no value; write one such as %v, or delete the line to keep the default", v.Interface())
		}
		return
	}
	if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
		if err := u.UnmarshalYAML(n); err != nil {
			var le *lineError
			if errors.As(err, &le) {
				w.fail(n, key, "%s", le.msg)
			} else {
				w.fail(n, key, "%v", err)
			}
		}
		return
	}
	if n.Kind != yaml.ScalarNode {
		w.fail(n, key, "expected a single value, found a %s; write e.g. %s: %v", kindName(n), lastKey(key), v.Interface())
		return
	}
	switch v.Kind() {
	case reflect.String:
		// Any scalar is taken as written, so that an unquoted numeric
		// passphrase is not refused for being "an int".
		v.SetString(n.Value)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v.OverflowInt(i) {
			w.fail(n, key, "%q is not a whole number; write digits only, e.g. %d", n.Value, v.Int())
			return
		}
		v.SetInt(i)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			w.fail(n, key, "%q is not true or false; write %s: true or %s: false", n.Value, lastKey(key), lastKey(key))
			return
		}
		v.SetBool(b)
	default:
		panic(fmt.Sprintf("config: no decoder for %s at %s", v.Type(), key))
	}
}

func (w *walker) decodeStruct(v reflect.Value, n *yaml.Node, key string) {
	if isNull(n) {
		return
	}
	names := yamlNames(v.Type())
	if n.Kind != yaml.MappingNode {
		w.fail(n, key, "expected a mapping of keys, found a %s; valid keys: %s", kindName(n), strings.Join(names, ", "))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolveAlias(n.Content[i]), n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			w.fail(kn, key, "a key must be a plain name, found a %s; valid keys: %s", kindName(kn), strings.Join(names, ", "))
			continue
		}
		name := kn.Value
		full := joinKey(key, name)
		if name == "<<" {
			w.fail(kn, key, "merge keys (<<) are not supported; write the keys out (pathDefaults covers settings shared by paths)")
			continue
		}
		if first, dup := seen[name]; dup {
			w.fail(kn, full, "set twice (first at line %d); keep one", first)
			continue
		}
		seen[name] = kn.Line
		idx := indexOf(names, name)
		if msg, ok := retired[full]; ok && idx < 0 {
			w.fail(kn, full, "%s", msg)
			continue
		}
		if idx < 0 {
			msg := "unknown key; "
			if s := suggest(name, names); s != "" {
				msg += "did you mean " + s + "? "
			}
			w.fail(kn, full, "%svalid keys: %s", msg, strings.Join(names, ", "))
			continue
		}
		w.src.at[full] = w.pos(kn)
		w.decode(v.Field(fieldIndex(v.Type(), idx)), vn, full)
	}
}

func (w *walker) decodeSlice(v reflect.Value, n *yaml.Node, key string) {
	if isNull(n) {
		v.SetZero()
		return
	}
	if n.Kind != yaml.SequenceNode {
		w.fail(n, key, "expected a list, found a %s; write [item, ...] or one \"- item\" line per entry", kindName(n))
		return
	}
	var out reflect.Value
	if len(n.Content) > 0 {
		out = reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	} else {
		out = reflect.Zero(v.Type())
	}
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		w.src.at[k] = w.pos(resolveAlias(item))
		w.decode(out.Index(i), item, k)
	}
	v.Set(out)
}

func joinKey(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func lastKey(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "empty value"
		}
		return fmt.Sprintf("value (%q)", n.Value)
	}
	return "node"
}
