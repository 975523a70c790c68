// Package adversarial holds Weft's adversarial suite: tests only. They
// start a real flightd binary (built from ./cmd/flightd, or $WEFT_FLIGHTD)
// over the fs store and over MinIO, send it hundreds of bad inputs through
// the Go client and raw Flight calls, and check, after each one, that the
// answer is the expected gRPC code with a message a user can act on, that
// every object of the store is byte-for-byte unchanged, and that the
// server still answers. The inputs are shared with the Python suite
// (python/tests/test_adversarial.py) through
// testdata/adversarial/inputs.json; inputs that need Arrow (tickets
// edited in place, puts of bad streams and types) are built here.
//
// The suite is a table: a new category (auth, limits) is new rows. See
// adversarial_test.go for the harness and its counts, types_test.go for
// the type matrix over the wire (DoPut, scan and mix), and
// bugs_test.go for the known failures.
package adversarial
