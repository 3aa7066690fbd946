package config

import (
	"os"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestFuzzCorpusConfig writes FuzzParse's checked-in corpus from the error
// table and the example config when SRTWHEP_WRITE_FUZZ_CORPUS is set.
func TestFuzzCorpusConfig(t *testing.T) {
	var seeds [][]any
	for _, tc := range errorCases {
		seeds = append(seeds, []any{[]byte(tc.yaml)})
	}
	if data, err := os.ReadFile(exampleFile); err == nil {
		seeds = append(seeds, []any{data})
	}
	testkit.SeedCorpus(t, "FuzzParse", seeds...)
}
