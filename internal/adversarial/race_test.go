//go:build race

package adversarial_test

// raceEnabled: the flightd under test is built with -race too.
const raceEnabled = true
