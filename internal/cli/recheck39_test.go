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
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad/nomadtest"
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

// The honest cases of the handover mark's servers (nomad38): a cluster that gains a server, or
// loses one (its leader among them), between the handover and the take-back is the same
// cluster, and one whose /v1/status/peers a proxy or an ACL in front of it refuses (403) with
// a token that can do the volume calls says nothing of its servers: neither is refused as
// another cluster. A registration again records the servers named then, so a cluster whose
// servers are replaced one at a time, a registration again between each, is still the one.
func TestNomadHandoverToAClusterThatChangesItsServersIsTakenBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps [][]string // the servers named at each registration again; the last at the take-back
	}{
		{"a server added", [][]string{{"10.0.1.1:4647", "10.0.1.2:4647", "10.0.1.3:4647", "10.0.1.4:4647"}}},
		{"the leader removed", [][]string{{"10.0.1.2:4647", "10.0.1.3:4647"}}},
		{"one server left", [][]string{{"10.0.1.3:4647"}}},
		{"every server replaced one at a time, registered again between", [][]string{
			{"10.0.1.2:4647", "10.0.1.3:4647", "10.0.9.1:4647"},
			{"10.0.1.3:4647", "10.0.9.1:4647", "10.0.9.2:4647"},
			{"10.0.9.1:4647", "10.0.9.2:4647", "10.0.9.3:4647"}}},
		{"peers refused 403", [][]string{{"403"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.leader.Store("10.0.1.1:4647")
			a.peers.Store([]string{"10.0.1.1:4647", "10.0.1.2:4647", "10.0.1.3:4647"})
			var forbidden atomic.Bool // /v1/status/peers refused 403, the rest of a's API served
			lb := nomadtest.Pin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if forbidden.Load() && r.URL.Path == "/v1/status/peers" {
					http.Error(w, "Permission denied", http.StatusForbidden)
					return
				}
				a.srv.Config.Handler.ServeHTTP(w, r)
			}))
			ios, _, _, _ := iostreams.Test()
			if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb), Volumes: []string{"db"}}); err != nil {
				t.Fatal(err)
			}
			if info, err := h.e.Volume(h.ctx, "db"); err != nil || info.Handover == nil || len(info.Handover.Peers) != 3 {
				t.Fatalf("the handover's mark has no servers of the cluster: %+v, %v", info.Handover, err)
			}
			for i, servers := range c.steps {
				if servers[0] == "403" {
					forbidden.Store(true)
				} else {
					a.leader.Store(servers[0])
					a.peers.Store(servers)
				}
				if i < len(c.steps)-1 {
					ios, _, out, errOut := iostreams.Test()
					if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb), Volumes: []string{"db"}}); err != nil {
						t.Fatalf("register again with the servers %v: %v\n%s%s", servers, err, out, errOut)
					}
				}
			}
			ios, _, out, errOut := iostreams.Test()
			if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: pinnedAt(lb)}); err != nil || strings.Contains(out.String()+errOut.String(), "another Nomad cluster") {
				t.Errorf("nomad status: %v\n%s%s", err, out, errOut)
			}
			a.mu.Lock()
			delete(a.vols, "default/db")
			a.mu.Unlock()
			if _, err := runNomadRelease(h, pinnedAt(lb), nil); err != nil || handedOver(t, h) {
				t.Fatalf("release once the cluster has let go of the volume: %v (still marked: %v)", err, handedOver(t, h))
			}
		})
	}
}
