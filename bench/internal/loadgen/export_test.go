package loadgen

// StartTestServer lets the ladder's acceptance test (package loadgen_test,
// which may import internal/ladder without a cycle) reuse the real-server
// fixture of server_test.go.
var StartTestServer = startTestServer
