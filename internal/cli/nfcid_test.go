package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestTypedIDsMatchInNFC: a spec's IDs are read in NFC (HCL normalises every string), so a
// volume whose file says "é" is stored as U+00E9. A terminal may send the same name decomposed
// (e U+0301, as macOS's input does): typed on the command line — a positional ID, --alloc,
// events' filters — it must name the same volume and claim, not answer "not found"; typed when
// registering a plugin it must be stored as a volume's plugin_id names it.
func TestTypedIDsMatchInNFC(t *testing.T) {
	requireMount(t) // it claims
	const pre, dec = "caf\u00e9", "cafe\u0301"
	h := newCLIHarness(t)
	h.createVolume(t, pre, spec.SingleNodeWriter)
	h.claim(t, pre, "web-"+pre)

	run := func(args ...string) (string, error) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios)
		f.engine = h.e
		err := runCmd(t, NewRootCmd(f), args...)
		return out.String() + errOut.String(), err
	}
	for _, args := range [][]string{
		{"volume", "status", dec, "--json"},
		{"status", dec, "--json"},
		{"events", "--volume", dec, "--alloc", "web-" + dec, "--json"},
	} {
		out, err := run(args...)
		if err != nil || !strings.Contains(out, `"`+pre) {
			t.Errorf("volctl %+q: %v\n%s\nwant the volume stored as %+q", args, err, out, pre)
		}
	}
	if out, err := run("volume", "release", dec, "--alloc", "web-"+dec); err != nil {
		t.Errorf("volctl volume release %+q --alloc %+q: %v\n%s", dec, "web-"+dec, err, out)
	}
	if claims, err := h.e.Claims(h.ctx); err != nil || len(claims) != 0 {
		t.Errorf("after the release, claims: %v %v, want none", claims, err)
	}
}

// TestTypedIDFlagsReadInNFC: the ID a plugin is registered under, the groups export names and
// a group's name are read in NFC as typed, so that they meet the IDs specs give (and the plugin
// is the one a volume's plugin_id names).
func TestTypedIDFlagsReadInNFC(t *testing.T) {
	const pre, dec = "caf\u00e9", "cafe\u0301"
	reg, err := parseOptions(t, newCmdPluginRegister, "--id", dec, "--socket", "/run/p.sock")
	if err != nil || reg.ID != pre {
		t.Errorf("plugin register --id %+q: ID %+q (%v), want %+q", dec, reg.ID, err, pre)
	}
	exp, err := parseOptions(t, newCmdExportNomad, dec, "--group", dec)
	if err != nil || len(exp.Volumes) != 1 || exp.Volumes[0] != pre || len(exp.Groups) != 1 || exp.Groups[0] != pre {
		t.Errorf("export nomad %+q --group %+q: volumes %+q, groups %+q (%v), want %+q", dec, dec, exp.Volumes, exp.Groups, err, pre)
	}
	grp, err := parseOptions(t, newCmdGroupStatus, dec)
	if err != nil || grp.Name != pre {
		t.Errorf("group status %+q: %+q (%v), want %+q", dec, grp.Name, err, pre)
	}
	// Every other ID flag and ID argument (docs/architecture.md, Command line: `--alloc`,
	// `--id`, `--volume`, `--plugin`, `--group`, and an ID typed as an argument). Before, this
	// test named a few; a flag declared as a plain string was not seen.
	check := func(what, got string, err error) {
		t.Helper()
		if err != nil || got != pre {
			t.Errorf("%s %+q: read as %+q (%v), want %+q", what, dec, got, err, pre)
		}
	}
	ev, err := parseOptions(t, newCmdEvents, "--volume", dec, "--alloc", dec, "--plugin", dec)
	check("events --volume", ev.Filter.VolumeID, err)
	check("events --alloc", ev.Filter.Alloc, err)
	check("events --plugin", ev.Filter.PluginID, err)
	sl, err := parseOptions(t, newCmdVolumeSnapshotList, "--plugin", dec)
	check("volume snapshot list --plugin", sl.PluginID, err)
	sd, err := parseOptions(t, newCmdVolumeSnapshotDelete, dec, "snap-1", "--yes")
	check("volume snapshot delete PLUGIN", sd.PluginID, err)
	cl, err := parseOptions(t, newCmdVolumeClaim, dec, "--alloc", dec)
	check("volume claim VOLUME", cl.VolumeID, err)
	check("volume claim --alloc", cl.Alloc, err)
	rl, err := parseOptions(t, newCmdVolumeRelease, dec, "--alloc", dec)
	check("volume release VOLUME", rl.VolumeID, err)
	check("volume release --alloc", rl.Alloc, err)
	ps, err := parseOptions(t, newCmdPluginStatus, dec)
	check("plugin status ID", ps.ID, err)
	pd, err := parseOptions(t, newCmdPluginDeregister, dec)
	check("plugin deregister ID", pd.ID, err)
}
