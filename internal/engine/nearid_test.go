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
	t.Parallel()
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

// TestNotFoundNamesEveryIDAsNear: an ID not found that is as near to several stored ones (a
// prefix of data1 and data2, a typo one edit from two) was answered with the first of them,
// `did you mean "data1"?`, as if it were the one meant: the user retyping it acted on a volume
// chosen by the store's order. Every one as near is named, in order, the rest counted past five.
func TestNotFoundNamesEveryIDAsNear(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"data1", "data2", "logs-a", "logs-b", "logs-c", "logs-d", "logs-e", "logs-f", "logs-g", "web"} {
		h.create(volume(id))
	}
	for _, tt := range []struct {
		what string
		run  func() error
		want string
	}{
		{"delete of a prefix of two", func() error { return h.e.DeleteVolume(h.ctx, "data") }, `(did you mean "data1" or "data2"?)`},
		{"claim of a typo one edit from two", func() error {
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data3", Alloc: "a"})
			return err
		}, `(did you mean "data1" or "data2"?)`},
		{"status of a typo one edit from seven", func() error { _, err := h.e.Volume(h.ctx, "logs-x"); return err },
			`(did you mean "logs-a", "logs-b", "logs-c", "logs-d", "logs-e" or one of 2 more?)`},
		{"one nearest", func() error { return h.e.DeleteVolume(h.ctx, "wbe") }, `(did you mean "web"?)`},
	} {
		if err := tt.run(); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want ErrNotFound saying %s", tt.what, err, tt.want)
		}
	}
}
