package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

func TestVolumeClaimRequest(t *testing.T) {
	tests := []flagCase[engine.ClaimRequest]{
		{name: "defaults", args: []string{"db", "--alloc", "web-0"},
			want: engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}},
		{name: "modes and read-only", args: []string{"db", "--alloc", "r", "--read-only", "--access-mode", "multi-node-reader-only", "--attachment-mode", "file-system"},
			want: engine.ClaimRequest{VolumeID: "db", Alloc: "r", ReadOnly: true, AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}},
		{name: "mount options replace the volume's", args: []string{"db", "--alloc", "a", "--fs-type", "xfs", "--mount-flag", "noatime", "--mount-flag", "nodev"},
			want: engine.ClaimRequest{VolumeID: "db", Alloc: "a", MountOptions: &spec.MountOptions{FSType: "xfs", MountFlags: spec.MountFlags{"noatime", "nodev"}}}},
		{name: "a flag with a comma stays one flag", args: []string{"db", "--alloc", "a", "--mount-flag", "uid=1,gid=2"},
			want: engine.ClaimRequest{VolumeID: "db", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"uid=1,gid=2"}}}},
		{name: "no alloc", args: []string{"db"}, wantErr: "--alloc is required"},
		{name: "unsafe alloc", args: []string{"db", "--alloc", ".."}, wantErr: `alloc ".." is not allowed`},
		{name: "unknown access mode", args: []string{"db", "--alloc", "a", "--access-mode", "rw"},
			wantErr: `--access-mode "rw" is not an access mode; valid modes: single-node-reader-only, single-node-writer, multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer`},
		{name: "access mode with a typo", args: []string{"db", "--alloc", "a", "--access-mode", "single-node-writr"},
			wantErr: "valid modes: single-node-reader-only, single-node-writer, multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer\n\nDid you mean this?\n\tsingle-node-writer"},
		{name: "attachment mode with a typo", args: []string{"db", "--alloc", "a", "--attachment-mode", "filesystem"},
			wantErr: "valid modes: file-system, block-device\n\nDid you mean this?\n\tfile-system"},
		{name: "unknown attachment mode", args: []string{"db", "--alloc", "a", "--attachment-mode", "block"},
			wantErr: `--attachment-mode "block" is not an attachment mode; valid modes: file-system, block-device`},
		{name: "mount options on a block device", args: []string{"db", "--alloc", "a", "--attachment-mode", "block-device", "--mount-flag", "ro"},
			wantErr: "do not apply to a block-device claim"},
		{name: "empty mount flag", args: []string{"db", "--alloc", "a", "--mount-flag", " "}, wantErr: "--mount-flag must not be empty"},
		{name: "no volume", args: []string{"--alloc", "a"}, wantErr: "accepts 1 arg"},
	}
	checkFlagCases(t, newCmdVolumeClaim, tests, func(_ *testing.T, o VolumeClaimOptions) (engine.ClaimRequest, error) {
		return o.request()
	})
}

// A claim's --json output and a template see the same fields; without them only the target
// path is printed, so `TARGET=$(volctl volume claim ...)` works.
func TestVolumeClaimOutput(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	for _, tt := range []struct {
		name  string
		alloc string
		exp   exportFlags
		want  string
	}{
		{"path", "a", exportFlags{}, h.state + "/publish/a/db/rw-file-system-multi-node-multi-writer\n"},
		{"template", "b", exportFlags{Template: "{{.alloc}} {{.state}} {{.mode}}"}, "b published write"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, _ := iostreams.Test()
			err := volumeClaimRun(h.ctx, &VolumeClaimOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: tt.alloc, Exporter: tt.exp})
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("stdout = %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// `volume claim` on a volume whose plugin's Probe says not ready exits 4, as the other
// refusals of a volume that cannot take claims, with --json printing nothing on stdout (as any
// failure, docs/json.md) and the refusal on stderr naming the plugin and what to do; once the
// plugin is ready, the same command claims. Before, it claimed and published through the plugin
// not ready, exit 0.
func TestVolumeClaimOnAPluginNotReadyExits4(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	notReady := false
	h.mem.SetReady(&notReady)
	code, out, errOut := h.runReported("volume", "claim", "db", "--alloc", "web-0", "--json")
	if code != ExitConflict || out != "" || !strings.Contains(errOut, `plugin "mem" is not ready`) || !strings.Contains(errOut, "volctl plugin status mem") {
		t.Fatalf("volume claim through a plugin not ready: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout, the refusal on stderr",
			code, out, errOut, ExitConflict)
	}
	requireMount(t)
	h.mem.SetReady(nil)
	if code, out, errOut := h.runReported("volume", "claim", "db", "--alloc", "web-0", "--json"); code != ExitOK || !strings.Contains(out, `"target_path"`) {
		t.Fatalf("volume claim once the plugin is ready: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := h.runReported("volume", "release", "db", "--alloc", "web-0"); code != ExitOK {
		t.Fatalf("volume release: exit %d, %s", code, errOut)
	}
}
