package hostile

import (
	"testing"
	"time"
)

// TestBystanderUndisturbed is the baseline every attack is compared with:
// with nothing attacking, the bystander passes its check (and if it does
// not on this machine, an attack test's failure means nothing).
func TestBystanderUndisturbed(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "")
	b := startBystander(t, srv)
	time.Sleep(3 * time.Second) // the window the check measures, not a wait for a state
	b.Check(t)
}
