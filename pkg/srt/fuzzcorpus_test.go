package srt

import (
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestFuzzCorpusStreamID writes FuzzParseStreamID's checked-in corpus from
// the streamid table (both forms, accepted and refused) when
// SRTWHEP_WRITE_FUZZ_CORPUS is set.
func TestFuzzCorpusStreamID(t *testing.T) {
	var seeds [][]any
	for _, tc := range streamIDCases {
		seeds = append(seeds, []any{tc.in})
	}
	testkit.SeedCorpus(t, "FuzzParseStreamID", seeds...)
}
