// Package lintref compares deploycheck.LintDockerfile with buildkit's lint.
package lintref

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/platforms"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/srtwhep/srtwhep/tools/deploycheck"
)

// TestSameAsBuildkit: over every Dockerfile of deploycheck's rule table,
// testdata/ and the repository's Dockerfile, our lint and buildkit's give the same
// warnings (rule, line, detail) and fail the same builds.
//
// buildkit reads .dockerignore only through a gateway client, which an
// offline lint has not, so both sides lint without one here: the
// CopyIgnoredFile case is held to buildkit's conditions by reading, not
// by this test.
func TestSameAsBuildkit(t *testing.T) {
	var files []string
	for _, pattern := range []string{
		"../deploycheck/testdata/lint/*.Dockerfile", // one per rule
		"testdata/*.Dockerfile",                     // rules interacting, stages on stages, directives, casing
		"../../Dockerfile",
	} {
		found, err := filepath.Glob(pattern)
		if err != nil || len(found) == 0 {
			t.Fatalf("%s: no Dockerfile (%v)", pattern, err)
		}
		files = append(files, found...)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ours, ourErr := deploycheck.LintDockerfile(file, data, nil)
			theirs, theirErr := buildkitLint(t, file, data)
			slices.Sort(ours)
			slices.Sort(theirs)
			if !slices.Equal(ours, theirs) {
				t.Errorf("ours:\n%s\nbuildkit's:\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
			}
			if (ourErr != nil) != (theirErr != "") {
				t.Errorf("ours fails with %v; buildkit's with %q", ourErr, theirErr)
			}
			t.Logf("%d warnings %q, build error %v", len(ours), ours, ourErr)
		})
	}
}

// buildkitLint runs `docker build --check`'s lint as LintDockerfile words
// its warnings; the second result is the build error, if any.
func buildkitLint(t *testing.T, name string, data []byte) ([]string, string) {
	ctx := context.Background()
	st := llb.Scratch()
	sm := llb.NewSourceMap(&st, name, "Dockerfile", data)
	def, err := st.Marshal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sm.Definition = def
	res, err := dockerfile2llb.DockerfileLint(ctx, data, dockerfile2llb.ConvertOpt{SourceMap: sm, MetaResolver: echoResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for _, w := range res.Warnings {
		line := int32(0)
		if w.Location != nil && len(w.Location.Ranges) > 0 && w.Location.Ranges[0].Start != nil {
			line = w.Location.Ranges[0].Start.Line
		}
		warnings = append(warnings, w.RuleName+" (line "+strconv.Itoa(int(line))+"): "+w.Detail)
	}
	if res.Error != nil {
		return warnings, res.Error.Message
	}
	return warnings, ""
}

// echoResolver answers every base image with an empty config of the
// platform asked for: offline there is no registry, so no base image can
// have another platform (InvalidBaseImagePlatform), as in LintDockerfile.
type echoResolver struct{}

func (echoResolver) ResolveImageConfig(_ context.Context, ref string, opt sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	p := platforms.DefaultSpec()
	if opt.ImageOpt != nil && opt.ImageOpt.Platform != nil {
		p = *opt.ImageOpt.Platform
	}
	cfg, err := json.Marshal(ocispecs.Image{Platform: p, RootFS: ocispecs.RootFS{Type: "layers"}})
	return ref, digest.FromString(ref), cfg, err
}
