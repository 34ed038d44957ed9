package agent

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// Claim GC releases what it listed as past claims one by one, and a release can take long (a
// slow plugin). A claim it listed may meanwhile have been released by a command and claimed
// again by the same alloc: the new claim is live, in use, and GC must not release it.
func TestAgentClaimGCSparesAClaimMadeAgainMeanwhile(t *testing.T) {
	f := newFixture(t)
	// A plugin that never starts holds the start-up reconcile back for the whole health
	// timeout: here an hour, so only GC releases.
	f.registerBroken()
	faults := f.claimOnMem(csitest.DefaultMemConfig()) // db for web-0
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	for _, id := range []string{"db2", "db3"} {
		if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: id, Name: id, PluginID: "mem", Capabilities: caps}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: id, Alloc: "web-0"}); err != nil {
			t.Fatal(err)
		}
	}
	// Three releases that did not finish, listed by GC in this order: db, db2, db3.
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	for _, id := range []string{"db", "db2", "db3"} {
		if _, err := f.e.Release(f.ctx, id, "web-0"); err == nil {
			t.Fatalf("release of %s succeeded despite NodeUnpublishVolume failing", id)
		}
	}
	faults.Reset()
	// GC's release of db is held in its NodeUnpublishVolume.
	gate := make(chan struct{})
	faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})

	s := testSettings
	s.HealthTimeout, s.ReconcileInterval = time.Hour, time.Hour
	stop := f.startAgent(s)
	waitFor(t, "GC to be releasing db", func() bool { return faults.Calls(csi.RPCNodeUnpublishVolume) >= 1 })

	// Meanwhile a command finishes db2's release and web-0 claims db2 again.
	if _, err := f.e.Release(f.ctx, "db2", "web-0"); err != nil {
		t.Fatal(err)
	}
	again, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db2", Alloc: "web-0"})
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	// db3 comes after db2 in GC's list: once it is released, GC has been past db2.
	waitFor(t, "GC to release db3", func() bool {
		_, err := f.e.ClaimInfo(f.ctx, "db3", "web-0")
		return err != nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	cl, err := f.e.ClaimInfo(f.ctx, "db2", "web-0")
	if err != nil || cl.ID != again.ID || cl.State != "published" || cl.Releasing {
		t.Fatalf("the claim web-0 made again on db2 after GC listed its old one: %+v, %v; want claim %d published, not released", cl, err, again.ID)
	}
	if _, err := f.e.ClaimInfo(f.ctx, "db", "web-0"); err == nil {
		t.Error("GC did not release db's past claim")
	}
}
