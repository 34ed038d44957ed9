package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// `volctl nomad register --dry-run` of a volume whose own spec names namespace "team", which
// Nomad lacks: the plan says it would be refused (exit 4, held), and its way out reads "`nomad
// namespace apply team` makes it, or name another with NOMAD_NAMESPACE or the spec's
// namespace". Neither of the two others works: NOMAD_NAMESPACE is read only for a volume of the
// default namespace (nomad.Client.namespaceFor), so the plan run again with it names "team"
// again; and a volume's namespace cannot change (create and register refuse it, exit 4: the
// registration's own refusal, nomad.Client.noNamespace, says just that and advises only the
// namespace apply). Each way out the plan names must work when run.
func TestDryRunMissingNamespaceAdvisesOnlyWhatWorks(t *testing.T) {
	h := nomadHarness(t)
	tv := spec.Volume{ID: "tv", Name: "tv", Type: "csi", PluginID: "hp", Namespace: "team", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	if _, err := h.e.CreateVolume(h.ctx, tv); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/namespace/team" {
			w.Header().Set("X-Nomad-Index", "1") // Nomad's own 404: it has no namespace team
			http.Error(w, "namespace not found", http.StatusNotFound)
			return
		}
		inner.ServeHTTP(w, r)
	})
	plan := func(nomadNamespace string) (string, error) {
		ios, _, out, _ := iostreams.Test()
		client := func() (*nomad.Client, error) {
			c, err := n.client()
			if err == nil {
				c.Namespace = nomadNamespace // as NOMAD_NAMESPACE sets it
			}
			return c, err
		}
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"tv"}, DryRun: true})
		return out.String(), err
	}
	out, err := plan("")
	t.Logf("plan: exit %d: %v\n%s", ExitCode(err), err, out)
	if ExitCode(err) != ExitConflict || !strings.Contains(out, "Nomad has no namespace team") {
		t.Fatalf("premise: the plan into namespace team, which Nomad lacks, = exit %d:\n%s", ExitCode(err), out)
	}
	if !strings.Contains(out, "`nomad namespace apply team`") {
		t.Errorf("the plan does not name the way out that works, `nomad namespace apply team`:\n%s", out)
	}
	if strings.Contains(out, "NOMAD_NAMESPACE") {
		again, aerr := plan("prod")
		t.Logf("plan with NOMAD_NAMESPACE=prod: exit %d\n%s", ExitCode(aerr), again)
		if strings.Contains(again, "Nomad has no namespace team") {
			t.Errorf("the plan advises naming another namespace with NOMAD_NAMESPACE; with NOMAD_NAMESPACE=prod it still plans volume tv (namespace team from its spec) into namespace team:\n%s", again)
		}
	}
	if strings.Contains(out, "the spec's namespace") {
		moved := tv
		moved.Namespace = "prod"
		_, cerr := h.e.CreateVolume(h.ctx, moved)
		t.Logf("create of tv's spec with namespace prod: exit %d: %v", ExitCode(cerr), cerr)
		if cerr != nil {
			t.Errorf("the plan advises naming another namespace in the spec; the spec submitted so is refused (exit %d): %v", ExitCode(cerr), cerr)
		}
	}
}
