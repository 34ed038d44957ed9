package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadWithoutSecretsWritesNoSecretTheNodeSpellingBringsIn: the plugin's node
// states topology {zone-alice=a} (NodeGetInfo), "alice" being the username a volume's
// secrets hold, echoed there by the plugin; CreateVolume answers the volume accessible from
// {ZONE-ALICE=a}, the same key to CSI and to volctl (keys fold). `export nomad` without
// --include-secrets refuses a volume whose accessible topology holds a secret value
// (echoedIntoIdentity: the file is 0644, and a placeholder would name another volume), but it
// checks the topology as recorded, {ZONE-ALICE=a}, where no secret is (a value under
// spec.MinFoldLen bytes is found in its own case only), and then writes
// nomad.RegisterSpec's, which was respelled with the node's keys when read: {zone-alice = "a"},
// the secret whole, in a file readable by all, written without a word. Now the create's answer
// is recorded in the node's spelling (spelledAsNode), which the check and the file both read.
// Correct behaviour: the check covers the topology the file holds
// (refused naming --include-secrets, as for a recorded topology holding the secret), so no
// secret value volctl knows reaches a file exported without --include-secrets.
// Found by helper review81 (secrets).
func TestExportNomadWithoutSecretsWritesNoSecretTheNodeSpellingBringsIn(t *testing.T) {
	const secret = "alice" // a cifs username: shorter than spec.MinFoldLen
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone-" + secret: "a"}}
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"ZONE-" + strings.ToUpper(secret): "a"}}
	})
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "share", Name: "share", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"username": secret, "password": "pw-9f8e7d6c"},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatalf("precondition: create answered {ZONE-ALICE=a}: %v", err)
	}
	if info, err := h.e.Volume(h.ctx, "share"); err != nil || !info.Schedulable {
		t.Fatalf("precondition: volume share is not schedulable on the plugin's node {zone-alice=a} (%v): %s", err, info.Schedulability())
	}
	var dir string
	stdout, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"share"}; dir = o.OutDir })
	if err != nil {
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "--include-secrets") {
			t.Fatalf("export nomad share = %v: a refusal must name --include-secrets and not the secret", err)
		}
		return // refused, as a recorded topology holding the secret is: correct
	}
	path := filepath.Join(dir, "volume-share.hcl")
	src, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatalf("export nomad share succeeded but wrote no file: %v", rerr)
	}
	fi, _ := os.Stat(path)
	if strings.Contains(string(src), secret) {
		t.Errorf("export nomad share without --include-secrets wrote the secret %q (a value of the volume's secrets, which its plugin echoed into its node's topology key) whole into %s (mode %v), "+
			"its accessible topology respelled with the node's key after the check for secrets (stdout %q, stderr %q):\n%s", secret, path, fi.Mode().Perm(), stdout, stderr, src)
	}
}

// TestVolumeStatusOwedUnpublishLineNamesThePluginAsTheRestOfTheStatusDoes: plugin
// "share-EDA", whose volume's secrets hold "EDA" (a 3-byte value the scrub masks), restarts
// without PUBLISH_UNPUBLISH_VOLUME and the claim's release keeps the attachment, owed.
// `volume status v` shows the new owed-unpublish advice (VolumeInfo.UnpublishWay, held in
// VolumeSummary.unpublishWay), which is scrubbed twice: scrubValue calls scrubUnexported on the
// embedded VolumeSummary and again on *VolumeInfo, which the method is promoted to. The second
// scrub finds "EDA" inside the first one's marker, and the line names plugin
// "share-[R[REDACTED]CTED]", a plugin no other line names (the Plugin row says
// "share-[REDACTED]"): the advice names the wrong thing, the garbling
// TestAmbiguousPrefixErrorLineIsScrubbedOnce ended for the ambiguous-prefix error. Correct
// behaviour: the unexported text is scrubbed once, so the advice names the plugin as the rest
// of the status does.
// Found by helper review81 (secrets).
func TestVolumeStatusOwedUnpublishLineNamesThePluginAsTheRestOfTheStatusDoes(t *testing.T) {
	const secret, plugin = "EDA", "share-EDA"
	h := releasedThroughAPluginWithoutUnpublish(t, plugin, spec.Secrets{"token": secret})
	ctx := h.ctx
	if info, err := h.e.Volume(ctx, "v"); err != nil || !info.UnpublishOwed() {
		t.Fatalf("premise: the release keeps the attachment, its ControllerUnpublishVolume owed (%v)", err)
	}

	code, out, errOut := runOnOut(ctx, h.e, "volume", "status", "v")
	if code != ExitOK {
		t.Fatalf("volume status v: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, plugin) {
		t.Fatalf("premise: the plugin ID's secret is masked:\n%s", out)
	}
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Attached ") {
			row = line
		}
	}
	if !strings.Contains(out, "share-"+spec.Redacted) || row == "" {
		t.Fatalf("premise: volume status v names its plugin share-%s and shows the owed attachment:\n%s", spec.Redacted, out)
	}
	if !strings.Contains(row, "plugin \"share-"+spec.Redacted+"\"") {
		t.Errorf("volume status v names plugin %q as \"share-%s\" but its owed-unpublish advice otherwise (scrubbed twice, the marker garbled):\n%s", plugin, spec.Redacted, row)
	}
}
