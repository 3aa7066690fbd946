package config

import (
	"reflect"
	"strings"
)

// yamlNames lists the YAML keys of struct type t in declaration order (the
// order of configs/srtwhep.yml), which is also the order error messages
// list them in.
func yamlNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name := tagName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// fieldIndex maps the position of a key in yamlNames back to the field.
func fieldIndex(t reflect.Type, nameIdx int) int {
	for i := range t.NumField() {
		if tagName(t.Field(i)) == "" {
			continue
		}
		if nameIdx == 0 {
			return i
		}
		nameIdx--
	}
	panic("config: field index out of range")
}

func tagName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// indexFold is indexOf ignoring case, for environment variable names.
func indexFold(names []string, name string) int {
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

// suggest returns the valid key closest to a mistyped one (same letters in
// another case, or at most two edits away), or "".
func suggest(name string, names []string) string {
	if i := indexFold(names, name); i >= 0 {
		return names[i]
	}
	best, bestDist := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99 // a long key is no typo of ours; don't spend time on it
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
