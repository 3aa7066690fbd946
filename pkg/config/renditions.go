package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Renditions is a path's ladder of lower renditions (pkg/ingest's
// ladder): auto (the zero value: one rung at half the source's height and
// about a third of its rate, a second at a third of the height for
// sources of 1080 lines or more), off, or a list of rungs.
type Renditions struct {
	Off   bool        `yaml:"off"`
	Steps []Rendition `yaml:"steps"`
}

// Rendition is one rung of an explicit ladder.
type Rendition struct {
	Height  int `yaml:"height"`  // even, 144 to 2160
	Bitrate int `yaml:"bitrate"` // bit/s, 100k to 20M
}

// The renditions key's scalar values.
const (
	RenditionsAuto = "auto"
	RenditionsOff  = "off"
)

const renditionsFix = "write auto, off, or a list such as [{height: 360, bitrate: 700k}]"

// UnmarshalYAML accepts auto, off, or a list of {height, bitrate}.
func (r *Renditions) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Value {
		case RenditionsAuto:
			*r = Renditions{}
		case RenditionsOff:
			*r = Renditions{Off: true}
		default:
			return &lineError{n.Line, fmt.Sprintf("%q is not a ladder; %s", n.Value, renditionsFix)}
		}
		return nil
	case yaml.SequenceNode:
	default:
		return &lineError{n.Line, "expected auto, off or a list; " + renditionsFix}
	}
	if len(n.Content) == 0 {
		return &lineError{n.Line, "an empty list; write off for no renditions, or list at least one, e.g. [{height: 360, bitrate: 700k}]"}
	}
	if len(n.Content) > maxRenditions {
		return &lineError{n.Line, fmt.Sprintf("%d renditions; list at most %d (each costs a transcoder while watched)", len(n.Content), maxRenditions)}
	}
	steps := make([]Rendition, 0, len(n.Content))
	seen := map[int]bool{}
	for _, e := range n.Content {
		st, err := rendition(e)
		if err != nil {
			return err
		}
		if seen[st.Height] {
			return &lineError{e.Line, fmt.Sprintf("height %d is listed twice; give each rendition its own height", st.Height)}
		}
		seen[st.Height] = true
		steps = append(steps, st)
	}
	*r = Renditions{Steps: steps}
	return nil
}

// maxRenditions bounds a ladder: each rung is a transcoder.
const maxRenditions = 4

func rendition(n *yaml.Node) (Rendition, error) {
	if n.Kind != yaml.MappingNode {
		return Rendition{}, &lineError{n.Line, "expected {height: H, bitrate: B}; e.g. {height: 360, bitrate: 700k}"}
	}
	var st Rendition
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "height":
			h, err := strconv.Atoi(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode || h < 144 || h > 2160 || h%2 != 0 {
				return Rendition{}, &lineError{v.Line, fmt.Sprintf("height %q is not an even picture height from 144 to 2160; write e.g. 360", v.Value)}
			}
			st.Height = h
		case "bitrate":
			b, ok := parseBitrate(v.Value)
			if !ok || v.Kind != yaml.ScalarNode || b < 100_000 || b > 20_000_000 {
				return Rendition{}, &lineError{v.Line, fmt.Sprintf("bitrate %q is not a bitrate from 100k to 20M; write bit/s with an optional k or M, e.g. 700k", v.Value)}
			}
			st.Bitrate = b
		default:
			return Rendition{}, &lineError{k.Line, fmt.Sprintf("unknown key %q in a rendition; a rendition has height and bitrate, e.g. {height: 360, bitrate: 700k}", k.Value)}
		}
	}
	if st.Height == 0 || st.Bitrate == 0 {
		return Rendition{}, &lineError{n.Line, "a rendition needs both height and bitrate, e.g. {height: 360, bitrate: 700k}"}
	}
	return st, nil
}

// parseBitrate reads 700000, 700k or 1.5M.
func parseBitrate(s string) (int, bool) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, false
	}
	return int(f*mult + 0.5), true
}

// MarshalYAML writes the form UnmarshalYAML reads.
func (r Renditions) MarshalYAML() (any, error) {
	switch {
	case r.Off:
		return RenditionsOff, nil
	case len(r.Steps) == 0:
		return RenditionsAuto, nil
	}
	out := make([]map[string]any, len(r.Steps))
	for i, st := range r.Steps {
		out[i] = map[string]any{"height": st.Height, "bitrate": st.Bitrate}
	}
	return out, nil
}
