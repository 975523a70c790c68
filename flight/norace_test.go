//go:build !race

package flight_test

const raceEnabled = false
