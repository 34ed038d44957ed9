//go:build !race

package store

// raceEnabled is true when the tests run under the race detector, which slows SQLite a lot.
const raceEnabled = false
