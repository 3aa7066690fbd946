# Prints what each failed test logged in a `go test -v` log. Parallel tests
# interleave: their lines come under `=== NAME`/`=== CONT` headers far
# from their `--- FAIL`, which a tail or grep -A does not reach.
# Usage: awk -f scripts/failed-tests.awk LOG LOG (the log twice: pass one
# finds the failed tests, pass two prints their blocks).
function top(name) { sub(/\/.*/, "", name); return name }
FNR == NR {
	if (match($0, /--- FAIL: [^ ]+/)) failed[top(substr($0, RSTART + 10, RLENGTH - 10))] = 1
	next
}
/^=== (RUN|CONT|NAME|PAUSE)/ { current = top($3); printing = (current in failed); if (printing && !(current in shown)) { print "== " current; shown[current] = 1 }; next }
/^[ ]*--- (PASS|FAIL|SKIP)/ { if (match($0, /--- [A-Z]+: [^ ]+/) && top(substr($0, RSTART + 10, RLENGTH - 10)) in failed) print; printing = 0; next }
/^time=/ { next }
printing { print }
