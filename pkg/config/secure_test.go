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

// TestAPIListenAndTokens: the API's own listener must stay on loopback
// unless a token guards it, allowedHosts are bare names, and every token
// is long enough not to be guessed; each error says the fix.
func TestAPIListenAndTokens(t *testing.T) {
	const fix = "use at least 16 characters, e.g. the output of `openssl rand -hex 16`"
	for _, tc := range []struct{ yaml, want string }{
		{"api:\n  listen: \":9997\"\n",
			`x.yml:2: api.listen: ":9997" is not a loopback address and api.token is empty, so anyone who reaches the port could list and end sessions; listen on 127.0.0.1:9997, or set api.token (` + fix + ")"},
		{"api:\n  listen: 0.0.0.0:9997\n  token: short\n",
			"x.yml:3: api.token: is 5 characters long, short enough to guess; " + fix},
		{"api:\n  allowedHosts: [\"srtwhep.example.com:9997\"]\n",
			`x.yml:2: api.allowedHosts[0]: "srtwhep.example.com:9997" is not a bare host name; write the name alone (srtwhep.example.com), without scheme or port: any port is allowed`},
		{"pathDefaults:\n  readTokens: [abc]\n", "x.yml:2: pathDefaults.readTokens[0]: is 3 characters long, short enough to guess; " + fix},
		{"paths:\n  live/cam1:\n    publishUser: cam\n    publishPass: secret\n",
			"x.yml:4: paths[live/cam1].publishPass: is 6 characters long, short enough to guess; " + fix},
		{"api:\n  listen: 127.0.0.1:9998\n", "x.yml:2: api.listen: TCP port 9998 is also used by metrics.listen; give each listener its own port"},
	} {
		_, err := parse("x.yml", []byte(tc.yaml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
	for _, ok := range []string{
		"api:\n  listen: 0.0.0.0:9997\n  token: api-token-0123456789\n",
		"api:\n  listen: \"[::1]:9997\"\n  allowedHosts: [srtwhep.internal]\n",
		"api:\n  listen: \"\"\n",
	} {
		if _, err := parse("x.yml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if Default().API.Listen != "127.0.0.1:9997" {
		t.Errorf("api.listen defaults to %q, want 127.0.0.1:9997", Default().API.Listen)
	}
}
