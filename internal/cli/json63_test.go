package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// execState runs statement on the harness's database, bypassing volctl: a row as a damaged
// file or an older volctl left it.
func execState(t *testing.T, h *cliHarness, statement string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.state, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(statement); err != nil {
		t.Fatal(err)
	}
}

// docs/json.md: "A command that fails prints no JSON, neither half an object nor an error
// object: stdout stays empty". Before, `volume status --json` streamed its list
// (writeVolumeListJSON) into a buffered stdout whose flush is deferred whatever the error: a
// read failing after the first row (a damaged row here; an interrupt mid-list likewise) left
// `[` and the rows before it on stdout, an unterminated array, and exited 1. Found by helper
// review63.
func TestVolumeListJSONFailingHalfWayPrintsNothing(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "a", spec.SingleNodeWriter)
	h.createVolume(t, "b", spec.SingleNodeWriter)
	// Volume "b"'s topology column damaged: the list's read of it fails, after "a" was printed.
	execState(t, h, `UPDATE volumes SET accessible_topology = '{not json' WHERE id = 'b'`)
	code, out, errOut := h.runReported("volume", "status", "--json")
	if code == 0 {
		t.Fatalf("volume status --json over a damaged row exited 0:\n%s", out)
	}
	if out != "" {
		t.Errorf("volume status --json failed (exit %d, %s) and still printed on stdout, half a list:\n%s\nwant nothing on stdout (docs/json.md: a command that fails prints no JSON, neither half an object)",
			code, strings.TrimSpace(errOut), out)
	}
}

// docs/json.md, `nomad register --json` (with --dry-run): "0 when every volume would be
// registered, 4 when any has `would_fail` (beside an `error` or not), else 1 when any has
// `error`". Before, a volume in a namespace no Nomad namespace can be named (team_a, which an
// older volctl took: nomadRegisterOne refuses it, exit 4) was planned with `error` alone, no
// `would_fail`, and the plan exited 4: a CI gating the handover on the plan reads 4 as "a
// registration would be refused, see would_fail", and found no would_fail to say why. Found by
// helper review63.
func TestDryRunExitFourHasAWouldFail(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	execState(t, h, `UPDATE volumes SET namespace = 'team_a' WHERE id = 'db'`)
	ios, _, out, _ := iostreams.Test()
	opts := &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true}
	opts.Exporter.JSON = true
	err := nomadRegisterRun(context.Background(), opts)
	code := ExitCode(err)
	var plans []map[string]any
	if jerr := json.Unmarshal([]byte(out.String()), &plans); jerr != nil || len(plans) != 1 {
		t.Fatalf("plan is not one JSON object in an array (%v):\n%s", jerr, out)
	}
	wouldFail, _ := plans[0]["would_fail"].([]any)
	_, hasError := plans[0]["error"]
	switch {
	case code == ExitConflict && len(wouldFail) == 0:
		t.Errorf("dry-run plan exited 4 with no would_fail in its plan (error: %v):\n%s\nwant 4 only beside a would_fail saying why (docs/json.md), or exit 1 for an `error` alone", hasError, out)
	case len(wouldFail) == 0 && hasError && code != ExitError:
		t.Errorf("dry-run plan with an error alone exited %d, want 1:\n%s", code, out)
	}
}
