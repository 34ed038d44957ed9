package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume an older volctl recorded in namespace team_a, which no Nomad namespace can be named
// (Nomad's names are ASCII letters, digits and hyphens): `volctl export nomad` refuses it and
// says how it moves, its data kept (spec.MoveNamespace). `volctl nomad register` sends it to
// Nomad, whose state store refuses it ("is in nonexistent namespace"), and volctl then advises
// `nomad namespace apply team_a` and running the command again: Nomad refuses that namespace's
// name ("invalid name ... Must match regex ^[a-zA-Z0-9-]{1,128}$"), so the advice was a dead
// end, and the way that works never said. It is refused before anything is sent, saying how the
// volume moves, as export nomad says it.
func TestRegisterOfANamespaceNomadCannotNameSaysHowItMoves(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "legacy", Name: "legacy", Namespace: "team_a", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		// Nomad's state store (UpsertCSIVolume), through its HTTP layer: a 500.
		return http.StatusInternalServerError, "volume legacy is in nonexistent namespace team_a"
	})
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"legacy"}})
	if err == nil {
		t.Fatal("register of a volume in namespace team_a: no error")
	}
	if strings.Contains(err.Error(), "nomad namespace apply team_a") {
		t.Errorf("register of a volume in namespace team_a advises a namespace Nomad refuses to create (its names are ASCII letters, digits and hyphens):\n%v", err)
	}
	if !strings.Contains(err.Error(), "volctl volume deregister --yes legacy") {
		t.Errorf("register of a volume in namespace team_a: %v\nwant it to say how the volume moves to a namespace Nomad can have, its data kept, as export nomad does", err)
	}
}

// A volume with a live local claim handed over with --force, whose registration Nomad leaves
// unanswered (the connection cut): the mark stays, unsettled, and the error (as `volctl nomad
// release` and a local claim's refusal do) names `volctl nomad register db` again as what
// finishes the handover. Run as written, without --force, that command was refused for the
// very claim the first one was forced past ("has 1 live local claim(s) ... pass --force"), so
// the advised way out did not work. A volume marked already is registered again past its claims,
// as past the other checks of a first handover.
func TestUnsettledForcedHandoverFinishesAsAdvised(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.e.Release(h.ctx, "db", "local-0") })
	n := newFakeNomad(t)
	n.setOnPut(hangUp)
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, Force: true})
	if err == nil || !handedOver(t, h) || !unsettled(t, h) {
		t.Fatalf("forced register whose registration got no answer: %v (marked %v, unsettled %v), want the mark kept, unsettled", err, handedOver(t, h), unsettled(t, h))
	}
	const advised = "`volctl nomad register db` again"
	if !strings.Contains(err.Error(), advised) {
		t.Fatalf("forced register whose registration got no answer: %v\nwant it to name %s", err, advised)
	}
	// The advice, run as written.
	n.setOnPut(nil)
	ios, _, _, _ = iostreams.Test()
	again := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}})
	if again != nil {
		t.Errorf("the advice of the unsettled forced handover, %s, run as written:\n%v\n(the first error said: %v)", advised, again, err)
	}
}
