package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// What answers at NOMAD_ADDR answers a volume's read 200 with JSON of another shape (a proxy's
// or an API gateway's `{"message": ...}`, a session page's JSON): it is no volume, and not
// Nomad's, which answers a volume's read with that volume. Taken for Nomad's copy it would be
// "another volume by that ID" (ID "", plugin "", ...), and release would advise --force, taking
// the volume back from a Nomad that may well have it.
func TestNomadAnswerOfAnotherShapeIsNotAVolume(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.readBack = func(v map[string]any) {
		for k := range v {
			delete(v, k)
		}
		v["message"] = "session expired"
	}
	a.mu.Unlock()
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("released on an answer that is not Nomad's: %v", err)
	}
	if err == nil {
		t.Fatal("release: no error")
	}
	for _, bad := range []string{"another volume", "--force db`"} {
		if strings.Contains(err.Error(), bad) && !strings.Contains(err.Error(), "cluster is gone") {
			t.Errorf("release: %v\nsays %q of an answer that is no volume", err, bad)
		}
	}
	if !strings.Contains(err.Error(), "not Nomad's") {
		t.Errorf("release: %v\nwant it to say the answer is not Nomad's", err)
	}

	// nomad status does not show it as Nomad's copy of the volume.
	ios, _, out, _ := iostreams.Test()
	err = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client})
	if err == nil || !strings.Contains(err.Error(), "not Nomad's") {
		t.Errorf("nomad status: %v, want an error saying the answer is not Nomad's", err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "error") {
		t.Errorf("nomad status table:\n%s\nwant the volume's row to say error, not that Nomad has it", out)
	}
}

// What answers at NOMAD_ADDR refuses a registration with an error that quotes the request's
// body (a WAF's or an API gateway's refusal, a validation error quoting its input): the body is
// JSON, in which a secret value with a quote, a backslash, <, > or & is written escaped
// ("pa\u0026ss"), and so is the token when it holds one. Neither is shown in that form either.
func TestNomadErrorQuotingTheRequestDoesNotShowSecrets(t *testing.T) {
	const secret, password = `pa&ss"w\ord<1>`, `pw&<x>"y`
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "admin:"+password)
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Secrets:      spec.Secrets{"key": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	a := newFakeNomad(t)
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		a.mu.Lock()
		body := a.puts[len(a.puts)-1]
		a.mu.Unlock()
		auth, _ := json.Marshal(map[string]string{"user": "admin", "password": password})
		return http.StatusBadRequest, "request refused by policy: " + body + " from " + string(auth)
	})
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"sec"}})
	if err == nil || !strings.Contains(err.Error(), "request refused by policy") {
		t.Fatalf("register refused: %v", err)
	}
	shown := out.String() + errOut.String() + err.Error()
	for _, leak := range []string{secret, `pa\u0026ss`, `w\\ord\u003c1\u003e`, password, `pw\u0026\u003cx\u003e`} {
		if strings.Contains(shown, leak) {
			t.Errorf("the refusal shows %s:\n%s", leak, shown)
		}
	}
}

// Between nomad register's first read of a volume and the volume's lock, another process
// deregisters it and registers a volume by the same ID in another namespace. The mark names the
// namespace of the first read; were the volume read under the lock registered as it is, Nomad
// would have it in the other one, and nomad release, asking where the mark says, would get
// Nomad's 404 and take it back while Nomad has it: two orchestrators on one volume. The
// volume is registered only where the mark says, or not at all.
func TestNomadRegisterOfAVolumeReplacedMeanwhile(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	other := openEngine(t, h.state) // the second process's engine
	before, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	a.onPlugin = func() {
		once.Do(func() {
			ctx := context.Background()
			if _, _, err := other.DeregisterVolumeReleasing(ctx, "db", false); err != nil {
				t.Errorf("deregister from the other process: %v", err)
			}
			if _, err := other.RegisterVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "hp", Namespace: "team",
				ExternalID: before.ExternalID, Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
				t.Errorf("register in namespace team from the other process: %v", err)
			}
		})
	}
	_, _, rerr := registerIn(h, a)
	hs, err := h.e.Handovers(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"default", "team"} {
		if a.has(ns, "db") && (len(hs) != 1 || hs[0].Namespace != ns) {
			t.Fatalf("Nomad has volume db in namespace %s, and the mark is %+v (register: %v): nomad release asks where the mark says", ns, hs, rerr)
		}
	}
	if rerr == nil && len(hs) == 0 {
		t.Fatal("register succeeded and left no mark")
	}
	if rerr != nil && !strings.Contains(rerr.Error(), "`volctl nomad register db` again") {
		t.Errorf("register of a volume replaced meanwhile: %v\nwant it to say to run it again", rerr)
	}
	// Run again, it registers the volume as it is now, where the mark says.
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatalf("register again: %v", err)
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || hs[0].Namespace != "team" || !a.has("team", "db") {
		t.Errorf("after register again: mark %+v, Nomad has team/db: %v", hs, a.has("team", "db"))
	}
}

// volume status of a volume whose handover ended without Nomad saying how (the connection lost
// with the registration on its way; a volctl killed then leaves the same mark) says so and what
// works: the registration again, not "after nomad volume deregister, release", which the
// release refuses while Nomad may yet apply that registration.
func TestVolumeStatusOfAnUnsettledHandoverSaysWhatWorks(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.setOnPut(hangUp)
	if _, _, err := registerIn(h, a); err == nil {
		t.Fatal("register with the connection lost: no error")
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || !hs[0].Unsettled {
		t.Fatalf("mark after the connection was lost: %+v, want one, unsettled", hs)
	}
	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"without Nomad saying how", "volctl nomad register db` (NOMAD_REGION unset) again"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("volume status:\n%s\nwant it to say %q", out, want)
		}
	}
	if strings.Contains(out.String(), "which claims it now") {
		t.Errorf("volume status:\n%s\nsays Nomad claims it, which Nomad may not", out)
	}
}

// A registration whose outcome Nomad did not say leaves the mark unsettled; then the same
// command again gets a 200 that is not Nomad's (no X-Nomad-Index, which Nomad sets on its
// answer to every registration: a proxy or a maintenance page answering for it), and Nomad,
// asked, has no such volume. That OK is not Nomad's word, and does not settle the mark: the
// first registration may still be applied, so release must not take the volume back on
// Nomad's 404.
func TestNomadRegisterOKNotFromNomadDoesNotSettle(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.setOnPut(hangUp)
	if _, _, err := registerIn(h, a); err == nil {
		t.Fatal("register without an answer: no error")
	}
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		w.Header().Del("X-Nomad-Index")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
		return -1, ""
	})
	_, _, rerr := registerIn(h, a)
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || !hs[0].Unsettled {
		t.Fatalf("mark after an OK not from Nomad: %+v (register: %v), want it kept, unsettled", hs, rerr)
	}
	if rerr == nil || !strings.Contains(rerr.Error(), "X-Nomad-Index") {
		t.Errorf("register answered OK without Nomad's header: %v, want an error naming it", rerr)
	}
	_, err := runNomadRelease(h, a.client, nil)
	if !handedOver(t, h) {
		t.Fatalf("nomad release took the volume back on Nomad's 404 after an OK that was not Nomad's: %v", err)
	}
}
