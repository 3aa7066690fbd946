package deploycheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintDockerfileRules: each testdata/lint/RULE.Dockerfile (built with
// testdata/lint/.dockerignore) gets exactly RULE's warning, worded as
// docker's. The lintref module holds the same files to buildkit's own lint.
func TestLintDockerfileRules(t *testing.T) {
	files, err := filepath.Glob("testdata/lint/*.Dockerfile")
	if err != nil || len(files) < 20 {
		t.Fatalf("testdata/lint holds %d Dockerfiles (%v); want one per rule", len(files), err)
	}
	ignore, err := os.ReadFile("testdata/lint/.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		rule := strings.TrimSuffix(filepath.Base(file), ".Dockerfile")
		t.Run(rule, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			warnings, err := LintDockerfile(file, data, ignore)
			// With no --build-arg a default that breaks the base image
			// name is a build that fails.
			if wantErr := rule == "InvalidDefaultArgInFrom"; (err != nil) != wantErr {
				t.Errorf("error %v; want one: %v", err, wantErr)
			}
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], rule+" (line ") {
				t.Errorf("warnings %q; want exactly one %s", warnings, rule)
			}
		})
	}
}

// TestLintDockerfileWording: the detail is buildkit's message, the line
// the instruction's.
func TestLintDockerfileWording(t *testing.T) {
	warnings, err := LintDockerfile("Dockerfile", []byte("FROM debian:bookworm-slim\nWORKDIR app\nCMD echo hi\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`WorkdirRelativePath (line 2): Relative workdir "app" can have unexpected results if the base image changes`,
		"JSONArgsRecommended (line 3): JSON arguments recommended for CMD to prevent unintended behavior related to OS signals",
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}
