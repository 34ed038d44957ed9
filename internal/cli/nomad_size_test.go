package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// growAsNomadDoes expands volume db through its plugin, as Nomad does for a registration of
// it asking a larger capacity_min (`nomad volume register`): ControllerExpandVolume to size,
// sent by someone else than volctl, which records nothing.
func growAsNomadDoes(t *testing.T, h *cliHarness, size int64) {
	t.Helper()
	asNomadOnDB(t, h, func(c *csi.Client, id string) {
		if got, err := c.ControllerExpandVolume(context.Background(), csi.ControllerExpandVolumeRequest{VolumeID: id, CapacityMin: size}); err != nil || got.CapacityBytes != size {
			t.Fatalf("ControllerExpandVolume of db to %d, as Nomad sends it: %+v, %v", size, got, err)
		}
	})
}

// asNomadOnDB calls do with a client of volume db's plugin of its own, as Nomad's, and db's
// storage ID: what Nomad sends the plugin, volctl records nothing of.
func asNomadOnDB(t *testing.T, h *cliHarness, do func(c *csi.Client, id string)) {
	t.Helper()
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	c, err := csi.New(csi.Config{ControllerSocket: hpSocket(t, h)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	do(c, info.ExternalID)
}

// grownInNomadThenDeregistered hands volume db (10MiB) over to a fake Nomad, which grows it to
// 20MiB through the plugin and then deregisters it (`nomad volume deregister db`): a take-back
// is due, and the size to record.
func grownInNomadThenDeregistered(t *testing.T) (*cliHarness, *fakeNomad) {
	t.Helper()
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	growAsNomadDoes(t, h, 20<<20)
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
	return h, n
}

// A volume Nomad expanded while it had it (through the plugin, for a registration asking a
// larger capacity_min) was taken back by `volctl nomad release` at the size volctl had handed
// over: volume status said 10MiB of a 20MiB volume, a handover again sent 10MiB as its
// capacity_min, and nothing said the record was behind (nomad status names capacity_bytes only
// while Nomad has the volume). The take-back now asks the plugin what size the volume has,
// records it, and says so; the file system is owed the node expansion to it.
func TestNomadReleaseRecordsTheSizeNomadGrewTheVolumeTo(t *testing.T) {
	h, n := grownInNomadThenDeregistered(t)
	out, err := runNomadRelease(h, n.client, nil)
	if err != nil || handedOver(t, h) {
		t.Fatalf("release once Nomad has no such volume: %v (still marked: %v)", err, handedOver(t, h))
	}
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if info.CapacityBytes != 20<<20 {
		t.Errorf("capacity recorded after the take-back = %d, want %d: the size Nomad grew the volume to, as its plugin lists it", info.CapacityBytes, 20<<20)
	}
	if info.NodeExpansionOwed != 20<<20 {
		t.Errorf("node expansion owed after the take-back = %d, want %d: Nomad grew the file system only where its allocs had the volume", info.NodeExpansionOwed, 20<<20)
	}
	if want := `Volume "db" is 20MiB as its plugin lists it, grown while in Nomad (volctl had 10MiB): recorded`; !strings.Contains(out, want) {
		t.Errorf("release: %q\nwant it to say %q", out, want)
	}
	// A handover again is refused while the node expansion is owed (Nomad would never send
	// it): the take-back says so now, with what finishes it, rather than the next handover.
	for _, want := range []string{"a handover to Nomad again", "`volctl volume claim db --alloc expand`", "`volctl volume release db --alloc expand`", "--force"} {
		if !strings.Contains(out, want) {
			t.Errorf("release: %q\nwant it to say %q", out, want)
		}
	}
	// A claim sends the file system the node expansion, as the refusal of a handover owed
	// one says; a handover again then sends the size the volume has.
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "expand"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "db", "expand"); err != nil {
		t.Fatal(err)
	}
	if info, err := h.e.Volume(h.ctx, "db"); err != nil || info.NodeExpansionOwed != 0 {
		t.Fatalf("node expansion owed after a claim and its release: %d, %v; want none", info.NodeExpansionOwed, err)
	}
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	if last := n.puts[len(n.puts)-1]; !strings.Contains(last, `"RequestedCapacityMin":20971520`) {
		t.Errorf("the registration after the take-back sent %s; want capacity_min 20MiB", last)
	}
}

// The take-back's line could not be printed (stdout a file on a full disk, a closed
// descriptor), or volctl died right after the mark went (killed, a power loss, SIGPIPE from the
// reader of its output gone): the mark was removed before the plugin was asked the volume's
// size, by another call after the line, so the record stayed at the size handed over for good,
// no node expansion owed, and nothing said so; the command's error said the volume was taken
// back, "only printing it failed". The size is asked before the mark goes and recorded with its
// removal: what is left to print is the report of work done.
func TestNomadReleaseWhoseLineCannotBePrintedStillRecordsTheSize(t *testing.T) {
	h, n := grownInNomadThenDeregistered(t)
	ios, _, _, _ := iostreams.Test()
	ios.Out = fullWriter{}
	err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}})
	if err == nil || !strings.Contains(err.Error(), "only printing it failed") || handedOver(t, h) {
		t.Fatalf("release with stdout full: %v (still marked: %v), want the take-back done and its line said unprinted", err, handedOver(t, h))
	}
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if info.CapacityBytes != 20<<20 || info.NodeExpansionOwed != 20<<20 {
		t.Errorf("after a take-back whose line could not be printed: capacity %d, node expansion owed %d; want %d and %d, the size Nomad grew the volume to",
			info.CapacityBytes, info.NodeExpansionOwed, 20<<20, 20<<20)
	}
}

// A take-back whose plugin cannot be asked (its socket gone: the plugin not running) is done
// all the same, and a warning says that volctl's record may be behind and what records the
// size.
func TestNomadReleaseWithThePluginGoneSaysTheSizeMayBeBehind(t *testing.T) {
	h, out, errOut, err := releasedWithThePluginGone(t)
	if err != nil || handedOver(t, h) {
		t.Fatalf("release --force with the plugin gone: %v (still marked: %v)", err, handedOver(t, h))
	}
	if !strings.Contains(out.String(), `Took volume "db" back`) {
		t.Errorf("release: stdout %q, want the take-back said", out)
	}
	for _, want := range []string{`Warning: volume "db": volctl could not learn from its plugin what size it has now`, "does not exist",
		"volctl's record of it (10MiB) is behind", "`volctl volume expand db --size SIZE`"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("release: stderr %q\nwant it to say %q", errOut, want)
		}
	}
}

// releasedWithThePluginGone hands volume db over to a fake Nomad, removes its plugin's socket
// (the plugin not running), and takes db back with nomad release --force; it returns the
// harness, the release's stdout and stderr, and its error.
func releasedWithThePluginGone(t *testing.T) (*cliHarness, *bytes.Buffer, *bytes.Buffer, error) {
	t.Helper()
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hpSocket(t, h)); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Volumes: []string{"db"}, Force: true})
	return h, out, errOut, err
}

// hpSocket is the socket of the harness's hostpath plugin, hp.
func hpSocket(t *testing.T, h *cliHarness) string {
	t.Helper()
	ps, err := h.e.Plugins(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.ID == "hp" {
			return p.ControllerSocket
		}
	}
	t.Fatalf("no plugin hp among %+v", ps)
	return ""
}

// A plugin whose size check failed is not asked again for the other volumes of one release:
// one that hangs would hold each volume of a release --all for its RPCs' timeouts and retries.
// Each volume's warning still says its record may be behind.
func TestNomadReleaseAsksAFailedPluginOnce(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db2", Name: "db2", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db", "db2"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hpSocket(t, h)); err != nil {
		t.Fatal(err)
	}
	ios, _, _, errOut := iostreams.Test()
	if err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, All: true, Force: true}); err != nil {
		t.Fatalf("release --all --force with the plugin gone: %v", err)
	}
	warnings := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(warnings) != 2 {
		t.Fatalf("release: stderr %q, want a warning for each volume", errOut)
	}
	if !strings.Contains(warnings[1], "not asked: ") || !strings.Contains(warnings[1], "for another volume of this command") {
		t.Errorf("release: the second warning %q\nwant it to say its plugin was not asked again", warnings[1])
	}
}
