package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// NOMAD_ADDR names a basic auth user with no password (http://ops@host): nomad status --json
// of a volume named like that user must still name the volume (the JSON is a contract).
func TestNomadStatusJSONKeepsAVolumeNamedAsThePlainUser(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "ops", Name: "ops", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	client := func() (*nomad.Client, error) {
		return nomad.NewClient(strings.Replace(n.srv.URL, "http://", "http://ops@", 1))
	}
	ios, _, out, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"ops"},
		Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatalf("nomad status: %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 1 || got[0]["id"] != "ops" {
		t.Errorf("nomad status --json of volume ops:\n%s", out)
	}
}

// A plain user-only credential (http://opensesame@host) that Nomad's copy of a volume holds
// (a context value a gateway's plugin stored it in) is masked in nomad status --json where it
// stands as a word, while the volume of that name is still named, and a name holding it kept.
// Before, it was shown as it is: only a key-like user was a credential the output was
// scrubbed of.
func TestNomadStatusJSONMasksThePlainUserAsAWord(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	const user = "opensesame"
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: user, Name: user, Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	n.take("default", user)
	n.readBack = func(v map[string]any) { v["Context"] = map[string]string{"login": user, "db": user + "-db"} }
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	client := func() (*nomad.Client, error) {
		return nomad.NewClient(strings.Replace(n.srv.URL, "http://", "http://"+user+"@", 1))
	}
	ios, _, out, _ := iostreams.Test()
	nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{user},
		Exporter: exportFlags{JSON: true}})
	var got []struct {
		ID    string `json:"id"`
		Nomad struct {
			Context map[string]string `json:"context"`
		} `json:"nomad"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 1 || got[0].ID != user || got[0].Nomad.Context["login"] != spec.Redacted || got[0].Nomad.Context["db"] != user+"-db" {
		t.Errorf("nomad status --json of volume %s: want its ID, the login masked and the db kept:\n%s", user, out)
	}
}
