// Package adversarial holds Weft's adversarial suite: tests only. They
// start a real flightd binary (built from ./cmd/flightd, or $WEFT_FLIGHTD)
// over the fs store and over MinIO, send it hundreds of bad inputs through
// the Go client and raw Flight calls, and check, after each one, that the
// answer is the expected gRPC code with a message a user can act on, that
// every object of the store is byte-for-byte unchanged, and that the
// server still answers. The inputs are shared with the Python suite
// (python/tests/test_adversarial.py) through
// testdata/adversarial/inputs.json; inputs that need Arrow or the store
// are built here: tickets edited, forged, or signed with the store's own
// key to reach the decoders behind the signature (generated_test.go);
// puts of bad streams and types; raw protobuf messages that are not valid
// (proto_test.go); idempotency keys (idempotency_test.go); and calls to a
// second flightd over the same store with --auth tokens, with tokens made
// by `flightd admin token create` (auth_test.go).
//
// The suite is a table: a new category is new rows. See
// adversarial_test.go for the harness and its counts, types_test.go for
// the type matrix over the wire (DoPut, scan and mix), and
// bugs_test.go for the known failures.
package adversarial
