package store

import (
	"fmt"
	"slices"
	"testing"
)

// ForgottenHere keeps the values let go in this process once each, the newest maxGoneHere of
// them, and a list it gave is not changed by values let go after.
func TestForgottenHereKeepsTheNewestValuesOnce(t *testing.T) {
	var g goneValues
	g.add([]string{"a-secret-1", "a-secret-2"})
	first := g.list()
	g.add([]string{"a-secret-2", "a-secret-3"})
	if got := g.list(); !slices.Equal(got, []string{"a-secret-1", "a-secret-2", "a-secret-3"}) {
		t.Fatalf("after a value let go twice: %v", got)
	}
	if !slices.Equal(first, []string{"a-secret-1", "a-secret-2"}) {
		t.Fatalf("a list given before changed to %v", first)
	}
	var many []string
	for i := range maxGoneHere + 10 {
		many = append(many, fmt.Sprintf("value-%05d", i))
	}
	g.add(many)
	got := g.list()
	if len(got) != maxGoneHere || got[len(got)-1] != many[len(many)-1] || slices.Contains(got, "a-secret-1") {
		t.Fatalf("past the bound: %d values, last %q, oldest kept %v; want the newest %d", len(got), got[len(got)-1], slices.Contains(got, "a-secret-1"), maxGoneHere)
	}
}
