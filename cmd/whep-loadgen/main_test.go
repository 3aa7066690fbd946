package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseSteps(t *testing.T) {
	got, err := parseSteps("10, 20,40")
	if err != nil || !slices.Equal(got, []int{10, 20, 40}) {
		t.Errorf("parseSteps = %v, %v", got, err)
	}
	for _, bad := range []string{"", "10,x", "10,5", "0,10", "-3"} {
		if _, err := parseSteps(bad); err == nil {
			t.Errorf("parseSteps(%q) accepted", bad)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"fly"}, "unknown command"},
		{[]string{"run"}, "-url is required"},
		{[]string{"run", "-url", "http://127.0.0.1:1/x/whep", "-ramp", "fast"}, "-ramp"},
		{[]string{"ladder", "-url", "http://127.0.0.1:1/x/whep"}, "-pid is required"},
		{[]string{"ladder", "-url", "http://127.0.0.1:1/x/whep", "-pid", "1", "-steps", "5,4"}, "ascend"},
	}
	for _, c := range cases {
		var stderr strings.Builder
		if code := realMain(c.args, io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, stderr.String(), c.want)
		}
	}
}
