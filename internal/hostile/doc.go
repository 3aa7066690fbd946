// Package hostile attacks the real srtwhep binary the way a stranger on the
// internet could, from several loopback source addresses (127.0.0.2,
// 127.0.0.3, … bound explicitly), and checks two things each time: the
// attack is refused or bounded, and a bystander publisher and viewer on
// another path keep their full frame rate. Every test states its figure
// (refusals, RSS growth, share of legitimate requests served) in the test
// log; the longer floods live in `make bench`'s hostile section.
//
// The package has no code outside its tests.
package hostile
