package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// Nomad runs the volume's driver, but as plugin "hostpath" where volctl has it as "hp" (the
// job's csi_plugin id chosen otherwise). The registration said only that plugin "hp" does not
// run in Nomad, "run its job first": a second job of the same driver under "hp". It names the
// plugin Nomad runs the driver as, and what makes the two agree; nothing is handed over.
func TestNomadRegisterNamesThePluginNomadRunsTheDriverAs(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	lists := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/"):
			w.Header().Set("X-Nomad-Index", "7")
			http.Error(w, "plugin not found", http.StatusNotFound)
		case r.URL.Path == "/v1/plugins":
			lists++
			w.Header().Set("X-Nomad-Index", "7")
			fmt.Fprint(w, `[{"ID":"other","Provider":"nfs.csi.k8s.io","NodesHealthy":1},{"ID":"hostpath","Provider":"hostpath.csi.volctl.dev","NodesHealthy":1}]`)
		default:
			n.serve(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine,
		Nomad: func() (*nomad.Client, error) { return nomad.NewClient(srv.URL) }, Volumes: []string{"db"}})
	if err == nil {
		t.Fatal("the registration went through with no plugin hp in Nomad")
	}
	for _, want := range []string{`volume "db"`, `plugin "hp" does not run in Nomad at ` + srv.URL, `"hostpath.csi.volctl.dev"`, `as plugin "hostpath"`, `csi_plugin { id = "hp" }`, "volctl nomad register db"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), `"other"`) || strings.Contains(err.Error(), "run its job first") {
		t.Errorf("the error names another driver's plugin, or says to run a second job of the driver:\n%v", err)
	}
	if handedOver(t, h) {
		t.Error("volume db is marked handed over")
	}
	if lists != 1 {
		t.Errorf("Nomad's plugins were listed %d times; want once", lists)
	}
}
