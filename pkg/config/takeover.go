package config

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Takeover is a path's overridePublisher: who may take a busy path over
// from the publisher streaming on it.
type Takeover string

// The overridePublisher values. TakeoverEntitled keeps the spelling true
// so that existing files keep their meaning as closely as safety allows:
// an encoder reconnecting after a blip still takes its path back at once,
// a stranger who only knows the path name no longer does.
const (
	// TakeoverEntitled (true): on a path with publish credentials anyone
	// who presents them; on a path without, only a publisher from the
	// live publisher's own IP address.
	TakeoverEntitled Takeover = "true"
	// TakeoverAny: anyone who may publish takes the path over.
	TakeoverAny Takeover = "any"
	// TakeoverNever (false): a busy path refuses every new publisher. It
	// is the zero value, as false was of the bool this type replaced, so
	// a Path built in Go means what it meant before.
	TakeoverNever Takeover = ""
)

const takeoverFix = "write true (the live publisher's own address, or anyone with the path's publish credentials), any (anyone) or false (nobody)"

// UnmarshalYAML accepts true, false (and YAML's other spellings of them)
// and any.
func (t *Takeover) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &lineError{n.Line, "expected true, false or any; " + takeoverFix}
	}
	if n.Value == string(TakeoverAny) {
		*t = TakeoverAny
		return nil
	}
	b, err := strconv.ParseBool(n.Value)
	if err != nil {
		return &lineError{n.Line, fmt.Sprintf("%q is not a takeover rule; %s", n.Value, takeoverFix)}
	}
	*t = TakeoverNever
	if b {
		*t = TakeoverEntitled
	}
	return nil
}

// MarshalYAML writes true and false as YAML booleans, the form a file
// written before any existed has.
func (t Takeover) MarshalYAML() (any, error) {
	switch t {
	case TakeoverEntitled:
		return true, nil
	case TakeoverNever:
		return false, nil
	}
	return string(t), nil
}
