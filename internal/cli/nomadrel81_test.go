package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadStatusNamesWhyEachVolumeFailed: volumes db and db2 are both handed over to Nomad
// A, and `volctl nomad status` runs with NOMAD_ADDR naming Nomad B. Each row rightly says
// "error" and the command exits 1, but in text mode only the last failing volume's reason
// reaches the user: nomadStatusRun keeps one `failed` error, overwritten by each volume that
// fails, so db's row reads "error" with nothing anywhere saying why, nor the
// `NOMAD_ADDR=... volctl nomad status db` that asks the cluster it was handed to (the advice
// printed names db2 alone). Correct behaviour: every volume that failed is named with its own
// reason (as register and release do through manyFailed, joining every volume's error).
// Found by helper review81 (nomadrel).
func TestNomadStatusNamesWhyEachVolumeFailed(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db2", Name: "db2", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	a, b := newFakeNomad(t), newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db", "db2"}}); err != nil {
		t.Fatalf("precondition: register db and db2 in Nomad A: %v", err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: b.client, Volumes: []string{"db", "db2"}})
	if err == nil {
		t.Fatalf("precondition: nomad status against another cluster than both volumes' succeeded:\n%s", out)
	}
	said := err.Error() + "\n" + errOut.String()
	for _, id := range []string{"db", "db2"} {
		if !strings.Contains(said, `volume "`+id+`" is handed over to Nomad at `+a.srv.URL) {
			t.Errorf("nomad status of db and db2 (both handed over to %s, NOMAD_ADDR %s): nothing says why volume %q failed, whose row reads \"error\":\nstdout:\n%s\nstderr: %s\nerror: %v",
				a.srv.URL, b.srv.URL, id, out, errOut, err)
		}
	}
}

// TestNomadStatusOfManyInterruptedShowsEveryRow: Ctrl-C while `volctl nomad status` waits for
// Nomad's answer about its first volume. stopAsking sees the interruption and would show the
// rest as rows "not asked" (as for a Nomad that stops answering: `nomad status` still shows
// their local rows, and names the volumes not asked and the command that does them), but the
// loop reads each volume's local record with the interrupted context first (e.Volume(ctx, id)),
// which fails, and the command returns "nomad status: ... context canceled" having printed no
// row at all, nor which volumes were not asked. Correct behaviour: every volume's row is
// printed, and the error says the command was interrupted and names the volumes not asked.
// Found by helper review81 (nomadrel).
func TestNomadStatusOfManyInterruptedShowsEveryRow(t *testing.T) {
	h := nomadHarness(t)
	manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") {
			cancel() // Ctrl-C while Nomad is asked about the first volume
			<-r.Context().Done()
			return
		}
		inner.ServeHTTP(w, r)
	})
	ios, _, out, _ := iostreams.Test()
	err := nomadStatusRun(ctx, &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client})
	if err == nil {
		t.Fatalf("precondition: nomad status interrupted succeeded:\n%s", out)
	}
	if rows := strings.Count(out.String(), "\n"); rows != 5 {
		t.Errorf("nomad status interrupted while Nomad was asked about its first volume printed %d lines, want a header and a row for each of its 4 volumes:\n%s\nerror: %v", rows, out, err)
	}
	saysAll(t, "nomad status interrupted", err, "interrupted", `"v1", "v2", "v3": not asked`)
}
