package config

import (
	"reflect"
	"testing"
)

func TestRenditions(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Renditions
	}{
		{"default is auto", "", Renditions{}},
		{"auto", "pathDefaults:\n  renditions: auto\n", Renditions{}},
		{"off", "pathDefaults:\n  renditions: off\n", Renditions{Off: true}},
		{"list", "pathDefaults:\n  renditions: [{height: 360, bitrate: 700k}, {height: 240, bitrate: 0.35M}]\n",
			Renditions{Steps: []Rendition{{360, 700_000}, {240, 350_000}}}},
		{"block list", "pathDefaults:\n  renditions:\n    - height: 540\n      bitrate: 1500000\n",
			Renditions{Steps: []Rendition{{540, 1_500_000}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse("srtwhep.yml", []byte(tc.yaml+"logLevel: info\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.PathDefaults.Renditions; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("renditions %+v, want %+v", got, tc.want)
			}
			// Dump writes what parses back to the same ladder.
			out, err := c.Dump()
			if err != nil {
				t.Fatal(err)
			}
			back, err := parse("dump.yml", out)
			if err != nil {
				t.Fatalf("dump does not parse: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(back.PathDefaults.Renditions, tc.want) {
				t.Fatalf("dumped renditions %+v, want %+v", back.PathDefaults.Renditions, tc.want)
			}
		})
	}
}

func TestRenditionsErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown word", "pathDefaults:\n  renditions: some\n",
			`srtwhep.yml:2: pathDefaults.renditions: "some" is not a ladder; write auto, off, or a list such as [{height: 360, bitrate: 700k}]`},
		{"empty list", "pathDefaults:\n  renditions: []\n",
			"srtwhep.yml:2: pathDefaults.renditions: an empty list; write off for no renditions, or list at least one, e.g. [{height: 360, bitrate: 700k}]"},
		{"odd height", "paths:\n  live/cam1:\n    renditions: [{height: 361, bitrate: 700k}]\n",
			`srtwhep.yml:3: paths[live/cam1].renditions: height "361" is not an even picture height from 144 to 2160; write e.g. 360`},
		{"bad bitrate", "pathDefaults:\n  renditions: [{height: 360, bitrate: 7kb}]\n",
			`srtwhep.yml:2: pathDefaults.renditions: bitrate "7kb" is not a bitrate from 100k to 20M; write bit/s with an optional k or M, e.g. 700k`},
		{"too low bitrate", "pathDefaults:\n  renditions: [{height: 360, bitrate: 50k}]\n",
			`srtwhep.yml:2: pathDefaults.renditions: bitrate "50k" is not a bitrate from 100k to 20M; write bit/s with an optional k or M, e.g. 700k`},
		{"missing bitrate", "pathDefaults:\n  renditions: [{height: 360}]\n",
			"srtwhep.yml:2: pathDefaults.renditions: a rendition needs both height and bitrate, e.g. {height: 360, bitrate: 700k}"},
		{"unknown key", "pathDefaults:\n  renditions: [{height: 360, bitrate: 700k, fps: 15}]\n",
			`srtwhep.yml:2: pathDefaults.renditions: unknown key "fps" in a rendition; a rendition has height and bitrate, e.g. {height: 360, bitrate: 700k}`},
		{"twice", "pathDefaults:\n  renditions: [{height: 360, bitrate: 700k}, {height: 360, bitrate: 500k}]\n",
			"srtwhep.yml:2: pathDefaults.renditions: height 360 is listed twice; give each rendition its own height"},
		{"too many", "pathDefaults:\n  renditions: [{height: 720, bitrate: 2M}, {height: 540, bitrate: 1M}, {height: 360, bitrate: 700k}, {height: 240, bitrate: 400k}, {height: 144, bitrate: 200k}]\n",
			"srtwhep.yml:2: pathDefaults.renditions: 5 renditions; list at most 4 (each costs a transcoder while watched)"},
		{"a mapping", "pathDefaults:\n  renditions: {height: 360}\n",
			"srtwhep.yml:2: pathDefaults.renditions: expected auto, off or a list; write auto, off, or a list such as [{height: 360, bitrate: 700k}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("srtwhep.yml", []byte(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
