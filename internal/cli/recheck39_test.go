package cli

// recheck39b: a Nomad that answers a registration 400 with the request's body echoed, seen
// through volctl nomad register as a user runs it.

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// The adversary: a Nomad (or a proxy before it) that refuses a registration 400 with the
// request's body in its answer, as it is, upper-cased, JSON-quoted (every non-ASCII letter
// escaped) and cut into lines, the way a validation error quotes what it could not read. The
// body carries the volume's secrets and its mount flags, which Nomad's API takes; what volctl
// prints of the answer (the error main reports, stdout, the event log, nomad status) shows none
// of them in any case, and the volume is not handed over. The Nomad client's scrub was tested
// alone (internal/nomad); this is the command, run as main runs it.
func TestNomadRegisterOfABodyEchoedIn400ShowsNoSecret(t *testing.T) {
	// A plugin "hp" of the driver the fake Nomad names, which takes any mount flag (hostpath
	// takes only a bind mount's), on a state dir of this test's.
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "hostpath.csi.volctl.dev"
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	h := &cliHarness{ctx: context.Background(), state: filepath.Join(t.TempDir(), "state")}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	t.Setenv("NOMAD_ADDR", n.srv.URL)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	t.Setenv("NOMAD_NAMESPACE", "")
	t.Setenv("NOMAD_REGION", "")
	const (
		secret   = "Hunter2-Longer-9"
		unicode  = "пароль-секрет-7"
		flagPass = "fl4g-Pass-3141"
	)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: []string{"noatime", "password=" + flagPass}},
		Secrets:      spec.Secrets{"token": secret, "pw": unicode}}); err != nil {
		t.Fatal(err)
	}
	var sent string
	n.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		n.mu.Lock()
		body := n.puts[len(n.puts)-1]
		n.mu.Unlock()
		sent = body
		up := strings.ToUpper(body)
		quoted := strconv.QuoteToASCII(up)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "1 error occurred:\n\t* bad request body: "+body+"\n\t* in upper case: "+up+"\n\t* quoted: "+quoted+
			"\n\t* cut: "+secret[:8]+"\n"+strings.ToUpper(secret[8:])+"\n")
		return -1, ""
	})
	code, out, errOut := h.runReported("nomad", "register", "sec")
	if code == 0 {
		t.Fatalf("nomad register of a volume Nomad refused 400 exited 0:\n%s%s", out, errOut)
	}
	for _, s := range []string{secret, unicode, flagPass} {
		if !strings.Contains(sent, s) {
			t.Fatalf("the registration's body holds no %q: the echo tests nothing:\n%s", s, sent)
		}
	}
	_, status, statusErr := h.runReported("nomad", "status")
	_, events, eventsErr := h.runReported("events", "--json")
	all := out + errOut + status + statusErr + events + eventsErr
	if !strings.Contains(errOut, "400") && !strings.Contains(strings.ToLower(errOut), "bad request") {
		t.Errorf("the error does not say Nomad refused the registration:\n%s", errOut)
	}
	for _, s := range []string{secret, unicode, flagPass} {
		for _, form := range []string{s, strings.ToUpper(s), strings.ToLower(s), strings.Trim(strconv.QuoteToASCII(strings.ToUpper(s)), `"`), s[:8]} {
			if strings.Contains(all, form) || strings.Contains(strings.ToLower(all), strings.ToLower(form)) {
				t.Errorf("%q of a secret is shown:\n%s", form, all)
			}
		}
	}
	if info, err := h.e.Volume(h.ctx, "sec"); err != nil || info.Handover != nil {
		t.Errorf("volume sec refused by Nomad is handed over: %+v, %v", info.Handover, err)
	}
}
