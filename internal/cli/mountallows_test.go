package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// Published volumes are not nosuid or nodev unless their mount flags say so (as in Nomad), and
// mount flags are never shown (they may carry credentials): a spec asking for suid, or a claim's
// --mount-flag dev, left no trace in `volume status`, which showed "mount_flags=[REDACTED] (3)"
// whether the flags hardened the mount or loosened it. It names which of suid, dev and exec
// they ask for, the volume's and each claim's, and nothing else of them.
func TestVolumeStatusSaysWhichMountFlagsAllowSuidOrDevices(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	caps := []spec.Capability{{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Capabilities: caps,
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime,suid", "password=hunter2", "nodev"}}}); err != nil {
		t.Fatal(err)
	}
	h.claim(t, "db", "web")
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "build",
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"dev", "exec"}}}); err != nil {
		t.Fatal(err)
	}

	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mount_flags=[REDACTED] (3), asking for suid", "alloc build asks for dev, exec", "alloc web asks for suid"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("volume status db:\n%s\nwant it to say %q", out, want)
		}
	}
	for _, hidden := range []string{"hunter2", "noatime"} {
		if strings.Contains(out.String(), hidden) {
			t.Errorf("volume status db shows the mount flag %q:\n%s", hidden, out)
		}
	}

	ios, _, out, _ = iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db", Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		MountOptions struct {
			MountFlags []string `json:"mount_flags"`
		} `json:"mount_options"`
		MountAllows []string `json:"mount_allows"`
		Claims      []struct {
			Alloc       string   `json:"alloc"`
			MountAllows []string `json:"mount_allows"`
		} `json:"claims"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("volume status db --json: %v\n%s", err, out)
	}
	if !slices.Equal(got.MountAllows, []string{"suid"}) || len(got.MountOptions.MountFlags) != 3 || strings.Contains(out.String(), "hunter2") {
		t.Errorf("volume status db --json mount_allows = %v, mount_options = %+v; want [suid], and 3 flags redacted\n%s", got.MountAllows, got.MountOptions, out)
	}
	claims := map[string][]string{}
	for _, c := range got.Claims {
		claims[c.Alloc] = c.MountAllows
	}
	if !slices.Equal(claims["web"], []string{"suid"}) || !slices.Equal(claims["build"], []string{"dev", "exec"}) {
		t.Errorf("volume status db --json claims' mount_allows = %v, want web [suid], build [dev exec]", claims)
	}
}
