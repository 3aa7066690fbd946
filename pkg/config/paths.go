package config

import (
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/srtwhep/srtwhep/pkg/pathname"
)

// decodePaths decodes each path entry over a copy of pathDefaults.
func (w *walker) decodePaths(c *Config, n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		w.fail(n, "paths", "expected a mapping of path name to settings, found a %s; write e.g. paths: {live/cam1: {maxReaders: 50}}", kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolveAlias(n.Content[i]), n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			w.fail(kn, "paths", "a path name must be a plain string, found a %s; write e.g. live/cam1", kindName(kn))
			continue
		}
		name := kn.Value
		if problem := pathNameProblem(name); problem != "" {
			w.fail(kn, "paths", "%q is not a valid path name: %s; use segments of letters, digits, '.', '_', '~', '-' separated by '/', e.g. live/cam1", name, problem)
			continue
		}
		full := "paths[" + name + "]"
		if first, dup := seen[name]; dup {
			w.fail(kn, full, "listed twice (first at line %d); keep one", first)
			continue
		}
		seen[name] = kn.Line
		w.src.at[full] = w.pos(kn)
		p := c.PathDefaults
		w.decode(reflect.ValueOf(&p).Elem(), vn, full)
		c.Paths[name] = p
	}
}

// pathNameProblem says why name cannot be a path, or "" when it can: a
// name the edges refuse (pathname) could never be published to or
// watched.
func pathNameProblem(name string) string { return pathname.Problem(name) }
