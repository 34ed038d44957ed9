package store

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// What the store keeps of a message is bounded, whatever built it: an event's, a claim's and a
// plugin's last error. volctl's words around a plugin's data (IDs, names, topologies a plugin
// may make as large as gRPC's 4 MiB) reached the event log whole, megabytes an event, of which
// it keeps 10,000. Cut, a message says how much was left out.
func TestStoredMessagesAreBounded(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	huge := "plugin data: " + strings.Repeat("z", 1<<20)
	claim := Claim{VolumeID: "v", Alloc: "a", Mode: ClaimWrite, State: ClaimTaken, LastError: huge}
	update(t, s, func(tx *Tx) error {
		if err := insertReady(tx, "v"); err != nil {
			return err
		}
		if err := tx.Claims().Insert(&claim); err != nil {
			return err
		}
		if err := tx.Plugins().Put(&Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/s"}); err != nil {
			return err
		}
		if err := tx.Plugins().SetHealth("hp", Health{LastError: huge}); err != nil {
			return err
		}
		return tx.Events().Append(&Event{Kind: "k", Message: huge})
	})
	var got map[string]string
	view(t, s, func(tx *Tx) error {
		c, err := tx.Claims().Get(claim.ID)
		if err != nil {
			return err
		}
		p, err := tx.Plugins().Get("hp")
		if err != nil {
			return err
		}
		evs, err := tx.Events().Recent(0, EventFilter{})
		if err != nil {
			return err
		}
		got = map[string]string{"claim's last error": c.LastError, "plugin's last error": p.Health.LastError, "event's message": evs[0].Message}
		return nil
	})
	for what, msg := range got {
		if len(msg) > MaxStoredMessage+64 || !strings.HasPrefix(msg, "plugin data: zzz") || !strings.Contains(msg, "bytes more") {
			t.Errorf("%s: %d bytes stored (%.40q...); want the first %d and how many were left out", what, len(msg), msg, MaxStoredMessage)
		}
	}
}
