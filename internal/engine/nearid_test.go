package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestNotFoundNamesTheNearestID: a volume, plugin or group typed with another case or a typo
// (`volume status Data` for "data", `plugin status hostpth`) was "not found", and the user was
// left to list everything and compare; IDs differ only in case on the host, so the near one
// is likely the one meant. The error names it ("did you mean"), stays ErrNotFound (exit 1),
// and names nothing when no stored ID is near, or when the ID is stored and what is missing
// is something else (a claim).
func TestNotFoundNamesTheNearestID(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("data", capab(spec.MultiNodeMultiWriter)))
	h.create(volume("logs-archive"))
	h.create(volume("db"))
	if _, err := h.e.RunGroup(h.ctx, spec.Group{Name: "web", Count: 1, Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
		AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		what string
		run  func() error
		near string // "" for none
	}{
		{"volume status in another case", func() error { _, err := h.e.Volume(h.ctx, "Data"); return err }, "data"},
		{"claim of a typo", func() error { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "dta", Alloc: "a"}); return err }, "data"},
		{"delete of a typo", func() error { return h.e.DeleteVolume(h.ctx, "logs-archiv") }, "logs-archive"},
		{"plugin status in another case", func() error { _, err := h.e.PluginStatus(h.ctx, "MEM"); return err }, "mem"},
		{"group stop of a typo", func() error { _, err := h.e.StopGroup(h.ctx, "wbe"); return err }, "web"},
		{"nothing near", func() error { _, err := h.e.Volume(h.ctx, "zzzzzzzz"); return err }, ""},
		{"a short ID every character of which differs", func() error { return h.e.DeleteVolume(h.ctx, "x") }, ""},
		{"the volume is there, the claim is not", func() error { _, err := h.e.Release(h.ctx, "data", "nobody"); return err }, ""},
	} {
		err := tt.run()
		if tt.what == "the volume is there, the claim is not" {
			if err != nil && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("%s: %v, want no suggestion", tt.what, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", tt.what, err)
			continue
		}
		want := fmt.Sprintf("did you mean %q?", tt.near)
		switch has := strings.Contains(err.Error(), "did you mean"); {
		case tt.near == "" && has:
			t.Errorf("%s: %v, want no suggestion", tt.what, err)
		case tt.near != "" && !strings.Contains(err.Error(), want):
			t.Errorf("%s: %v, want it to say %s", tt.what, err, want)
		}
	}
}
