package config

import (
	"strings"
	"testing"
)

// TestOverridePublisherValues: true and false keep working, any is the
// third value, from the file and the environment alike, and a Dump of
// each reads back the same.
func TestOverridePublisherValues(t *testing.T) {
	for _, tc := range []struct {
		yaml, env string
		want      Takeover
	}{
		{"true", "", TakeoverEntitled},
		{"false", "", TakeoverNever},
		{"any", "", TakeoverAny},
		{"1", "", TakeoverEntitled}, // strconv.ParseBool's spellings, as for every bool key
		{"false", "any", TakeoverAny},
	} {
		env := map[string]string{}
		if tc.env != "" {
			env["SRTWHEP_PATHDEFAULTS_OVERRIDEPUBLISHER"] = tc.env
		}
		c, err := parseEnv("x.yml", []byte("pathDefaults:\n  overridePublisher: "+tc.yaml+"\n"), env)
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.yaml, tc.env, err)
		}
		if got := c.PathDefaults.OverridePublisher; got != tc.want {
			t.Errorf("overridePublisher %s (env %q) = %q, want %q", tc.yaml, tc.env, got, tc.want)
		}
		out, err := c.Dump()
		if err != nil {
			t.Fatal(err)
		}
		back, err := parse("dump.yml", out)
		if err != nil || back.PathDefaults.OverridePublisher != tc.want {
			t.Errorf("dump of %q read back as %v, %v", tc.want, back, err)
		}
	}
	_, err := parse("x.yml", []byte("pathDefaults:\n  overridePublisher: maybe\n"))
	want := `x.yml:2: pathDefaults.overridePublisher: "maybe" is not a takeover rule; write true (the live publisher's own address, or anyone with the path's publish credentials), any (anyone) or false (nobody)`
	if err == nil || err.Error() != want {
		t.Errorf("overridePublisher: maybe: %v\nwant %s", err, want)
	}
	c := Default()
	c.PathDefaults.OverridePublisher = "sometimes"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "pathDefaults.overridePublisher") {
		t.Errorf("Validate of a Go-built bad rule: %v", err)
	}
}
