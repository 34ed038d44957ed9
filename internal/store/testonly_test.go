package store

import (
	"fmt"
	"slices"
)

// What only the store's tests use: no command reads an alloc's claims on their own, lists the
// unsettled ones apart (reconcile reads every claim, to compare it with the mount table),
// deletes a group, or builds the whole list of briefs (the list is streamed: EachBrief).

// Path is the database file's path.
func (s *Store) Path() string { return s.path }

// Valid reports whether s is one of ClaimStates.
func (s ClaimState) Valid() bool {
	return slices.Contains(ClaimStates, s)
}

// ByAlloc returns an alloc's live claims, oldest first.
func (cs claims) ByAlloc(alloc string) ([]Claim, error) {
	return cs.list(fmt.Sprintf("claims of alloc %q", alloc), `WHERE alloc = ?`, alloc)
}

// ListUnsettled returns the claims that are not at rest (see Claim.AtRest), oldest first.
func (cs claims) ListUnsettled() ([]Claim, error) {
	return cs.list("list unsettled claims", `WHERE state != ? OR releasing = 1 OR needs_reconcile = 1`, ClaimPublished)
}

// Briefs lists every volume's list fields with its live claims counted, ordered by ID, as
// EachBrief streams them, every field read.
func (vs volumes) Briefs() ([]VolumeBrief, error) {
	out := []VolumeBrief{}
	err := vs.EachBrief(BriefAll|BriefTopologies, func(b *VolumeBrief) error {
		out = append(out, *b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadConns counts the read connections opened since Open: each reads and parses the schema,
// which a command that reads little is spared (ViewShort).
func (s *Store) ReadConns() int64 { return s.reader().opened.Load() }
