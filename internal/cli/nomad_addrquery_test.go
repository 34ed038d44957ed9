package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// NOMAD_ADDR with a token in its query (?token=SECRET): register's text and the handover mark
// it records, and nomad status (its table and --json), showed the address, token and all.
// The query's values are xxxxx everywhere the address is shown (engine.HiddenNomadPathAndQuery);
// the volume is still handed over to, and asked about at, the host written.
func TestNomadRegisterAndStatusHideAnAddressQuery(t *testing.T) {
	const secret = "s3cr3t-qu3ry-t0ken"
	h := nomadHarness(t)
	n := newFakeNomad(t)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	client := func() (*nomad.Client, error) { return nomad.NewClient(n.srv.URL + "/?token=" + secret) }
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}})
	if err != nil {
		t.Fatalf("nomad register: %v\n%s%s", err, out, errOut)
	}
	all := out.String() + errOut.String()
	for _, json := range []bool{false, true} {
		ios, _, out, errOut := iostreams.Test()
		err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: client, Exporter: exportFlags{JSON: json}})
		if err != nil {
			t.Errorf("nomad status: %v", err)
		}
		all += out.String() + errOut.String()
	}
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil || info.Handover == nil {
		t.Fatalf("volume db is not handed over: %v", err)
	}
	all += info.Handover.Address
	if strings.Contains(all, secret) {
		t.Errorf("the address's query token is shown:\n%s", all)
	}
	if !strings.Contains(all, n.srv.URL+"/?token=xxxxx") {
		t.Errorf("the address is not named with its query's value hidden:\n%s", all)
	}
}
