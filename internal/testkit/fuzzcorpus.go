package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteCorpusEnv names the variable that makes SeedCorpus write files:
// `SRTWHEP_WRITE_FUZZ_CORPUS=1 go test -run TestFuzzCorpus ./...`.
const WriteCorpusEnv = "SRTWHEP_WRITE_FUZZ_CORPUS"

// SeedCorpus writes each seed as a file of the checked-in corpus
// testdata/fuzz/<target>/ when WriteCorpusEnv is set, and does nothing
// otherwise. Each seed is one input: a []any holding the fuzz function's
// arguments in order. The files are named by a hash of their content, as
// `go test -fuzz` names the failures it saves, so writing twice is
// idempotent and a seed shared by two tables is one file.
//
// The seeds come from the unit tests' own tables, so the corpus that
// `make test` fuzzes from starts at the cases a person thought of; the
// files make that start point visible and reviewable in the tree.
func SeedCorpus(t testing.TB, target string, seeds ...[]any) {
	t.Helper()
	if os.Getenv(WriteCorpusEnv) == "" {
		return
	}
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range seeds {
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, a := range args {
			switch v := a.(type) {
			case string:
				fmt.Fprintf(&b, "string(%q)\n", v)
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			case int:
				fmt.Fprintf(&b, "int(%d)\n", v)
			case uint16:
				fmt.Fprintf(&b, "uint16(%d)\n", v)
			case bool:
				fmt.Fprintf(&b, "bool(%t)\n", v)
			default:
				t.Fatalf("SeedCorpus: %T is not a fuzz argument type this helper writes", a)
			}
		}
		sum := sha256.Sum256([]byte(b.String()))
		name := filepath.Join(dir, "seed-"+hex.EncodeToString(sum[:8]))
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// SeedCorpusBytes is SeedCorpus for a fuzz function of one []byte.
func SeedCorpusBytes(t testing.TB, target string, seeds [][]byte) {
	t.Helper()
	args := make([][]any, len(seeds))
	for i, s := range seeds {
		args[i] = []any{s}
	}
	SeedCorpus(t, target, args...)
}
