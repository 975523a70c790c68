//go:build race

package flight_test

// raceEnabled: the race detector's allocations count too (TestPutAllocations).
const raceEnabled = true
