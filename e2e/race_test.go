//go:build race

package e2e

// raceEnabled makes TestMain build mcpmux with the race detector too.
const raceEnabled = true
