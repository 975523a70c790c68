//go:build !race

package adversarial_test

const raceEnabled = false
