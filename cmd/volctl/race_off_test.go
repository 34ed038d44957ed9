//go:build !race

package main

// raceBuilt reports whether this test binary was built with -race (scriptVolctl).
const raceBuilt = false
