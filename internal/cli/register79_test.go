package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
)

// TestRegistrationRecordedDespiteItsNodeStepIsInItsJSON: `volctl volume register --json` of a
// spec whose larger capacity_min grows a claimed volume, the plugin's NodeExpandVolume failing:
// the storage is grown and the registration recorded with the node step owed (the error says
// "the registration is recorded"), exit 1, and stdout was `[]`, as of a registration that
// recorded nothing: a script reading the JSON had no record of what the error said was done,
// nor of the node expansion owed. Now the list holds the volume as recorded: its new capacity,
// its mount flag, the node expansion owed. Left from earlier rounds; fixed in round 79.
func TestRegistrationRecordedDespiteItsNodeStepIsInItsJSON(t *testing.T) {
	failNodeExpand := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasSuffix(info.FullMethod, "/NodeExpandVolume") {
			return nil, status.Error(codes.Internal, "resize2fs failed")
		}
		return handler(ctx, req)
	}
	h := newCLIHarnessServing(t, csitest.WithInterceptor(failNodeExpand))
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 1 << 20})
	const base = "id = \"db\"\ntype = \"csi\"\nplugin_id = \"mem\"\nexternal_id = \"ext-db\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	if code, _, errOut := h.runReported("volume", "register", specFile61(t, "db.hcl", base+"capacity_min = \"1MiB\"\n")); code != 0 {
		t.Fatalf("register: exit %d: %s", code, errOut)
	}
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		t.Fatal(err)
	}
	grown := base + "capacity_min = \"4MiB\"\nmount_options {\n  mount_flags = [\"noatime\"]\n}\n"
	code, out, errOut := h.runReported("volume", "register", specFile61(t, "db.hcl", grown), "--json")
	if code != ExitError || !strings.Contains(errOut, "the registration is recorded") {
		t.Fatalf("register of a larger capacity_min whose NodeExpandVolume fails: exit %d\nstderr: %s\nwant exit %d, the error saying the registration is recorded", code, errOut, ExitError)
	}
	var got []struct {
		ID                string `json:"id"`
		CapacityBytes     int64  `json:"capacity_bytes"`
		NodeExpansionOwed int64  `json:"node_expansion_owed"`
		MountOptions      *struct {
			MountFlags []string `json:"mount_flags"`
		} `json:"mount_options"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	if len(got) != 1 || got[0].ID != "db" || got[0].CapacityBytes != 4<<20 || got[0].NodeExpansionOwed != 4<<20 ||
		got[0].MountOptions == nil || len(got[0].MountOptions.MountFlags) != 1 { // flags are shown redacted
		t.Errorf("register --json of a registration recorded despite its node step printed %s; want volume db as recorded: 4MiB, the node expansion to 4MiB owed, its mount flag", out)
	}
}

// TestRegisterAgainOfAHandedOverVolumeSaysNomadsCopyIsUnchanged: `volctl volume register` again
// of a volume handed over to Nomad, with a changed field (a mount flag), printed `Volume "db"
// updated: mount_options changed` and nothing else: the change is volctl's record only, Nomad's
// copy, which Nomad's allocs use, keeps the old mount options until `volctl nomad register`
// sends it. Now a warning says so, naming that command and the Nomad it goes to; a
// registration that changed nothing says nothing more. Left from earlier rounds; fixed in
// round 79.
func TestRegisterAgainOfAHandedOverVolumeSaysNomadsCopyIsUnchanged(t *testing.T) {
	h := newCLIHarness(t)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 1 << 20})
	const base = "id = \"db\"\ntype = \"csi\"\nplugin_id = \"mem\"\nexternal_id = \"ext-db\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	file := specFile61(t, "db.hcl", base)
	if code, _, errOut := h.runReported("volume", "register", file); code != 0 {
		t.Fatalf("register: exit %d: %s", code, errOut)
	}
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}, false, nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.runReported("volume", "register", file)
	if code != 0 || strings.Contains(errOut, "handed over") {
		t.Errorf("register again, unchanged, of a handed-over volume: exit %d\nstdout: %s\nstderr: %s\nwant exit 0 and no warning (nothing changed)", code, out, errOut)
	}
	changed := specFile61(t, "db.hcl", base+"mount_options {\n  mount_flags = [\"noatime\"]\n}\n")
	code, out, errOut = h.runReported("volume", "register", changed)
	if code != 0 || !strings.Contains(out, `Volume "db" updated`) {
		t.Fatalf("register again, changed, of a handed-over volume: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{`volume "db" is handed over to Nomad at http://127.0.0.1:4646 (namespace default)`, "not Nomad's copy", "NOMAD_NAMESPACE=default volctl nomad register db`"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("register again, changed, of a handed-over volume: stderr %q; want it to say %q", errOut, want)
		}
	}
}
