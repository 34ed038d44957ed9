package store

import (
	"fmt"
	"strings"
	"time"
)

// The store's entities carry raw secrets and mount flags. spec.Secrets and spec.MountFlags redact
// themselves, but only when fmt asks them: a verb other than %v (say %s or %d) makes fmt print a
// nested pointer or a mismatched value raw, bypassing their String methods. So the entities that
// hold secrets print with %v's rules whatever the verb.

// Method-less copies of the entities, so printing one does not recurse into Format.
type (
	volumeFields         Volume
	claimFields          Claim
	pluginFields         Plugin
	groupFields          Group
	snapshotFields       Snapshot
	snapshotCreateFields SnapshotCreate
	// Not a conversion of PastClaim: the embedded Claim would promote its Format and print only
	// the claim part.
	pastClaimFields struct {
		Claim     Claim
		HistoryID int64
		FreedAt   time.Time
		Outcome   Outcome
	}
)

// goNames puts the entities' own names back into %#v output.
var goNames = strings.NewReplacer(
	"store.volumeFields{", "store.Volume{", "store.claimFields{", "store.Claim{",
	"store.pluginFields{", "store.Plugin{", "store.groupFields{", "store.Group{",
	"store.pastClaimFields{", "store.PastClaim{", "store.snapshotFields{", "store.Snapshot{",
	"store.snapshotCreateFields{", "store.SnapshotCreate{",
)

func formatRedacted(f fmt.State, v any) {
	out := fmt.Sprintf(fmt.FormatString(f, 'v'), v)
	if f.Flag('#') {
		out = goNames.Replace(out)
	}
	fmt.Fprint(f, out)
}

// Format prints the volume with its secrets and mount flags redacted, for every verb.
func (v Volume) Format(f fmt.State, _ rune) { formatRedacted(f, volumeFields(v)) }

// Format prints the claim with its mount flags redacted, for every verb.
func (c Claim) Format(f fmt.State, _ rune) { formatRedacted(f, claimFields(c)) }

// Format prints the freed claim with its mount flags redacted, for every verb.
func (p PastClaim) Format(f fmt.State, _ rune) {
	formatRedacted(f, pastClaimFields{Claim: p.Claim, HistoryID: p.HistoryID, FreedAt: p.FreedAt, Outcome: p.Outcome})
}

// Format prints the plugin with its exec environment redacted, for every verb.
func (p Plugin) Format(f fmt.State, _ rune) { formatRedacted(f, pluginFields(p)) }

// Format prints the group with its mount flags redacted, for every verb.
func (g Group) Format(f fmt.State, _ rune) { formatRedacted(f, groupFields(g)) }

// Format prints the snapshot with its secrets redacted, for every verb.
func (s Snapshot) Format(f fmt.State, _ rune) { formatRedacted(f, snapshotFields(s)) }

// Format prints the snapshot intent with its secrets redacted, for every verb.
func (s SnapshotCreate) Format(f fmt.State, _ rune) { formatRedacted(f, snapshotCreateFields(s)) }
