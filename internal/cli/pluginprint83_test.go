package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPluginRegisterAgainWhoseFilterFailsIsNotSaidRegistered: a plugin registered again with its
// declaration unchanged, or with another timeout, whose --jq filter then fails, was said
// `plugin "other" registered; only printing it failed`, where its own line says "unchanged" or
// "updated: timeout changed", as `volume create` words each volume by what was done
// (TestCreateAgainUnchangedWhoseFilterFailsIsNotSaidCreated). Still exit 1: a registration again
// fingerprints and records the plugin anew.
// Found by helper review83 (completion).
func TestPluginRegisterAgainWhoseFilterFailsIsNotSaidRegistered(t *testing.T) {
	h := newCLIHarness(t)
	other, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	args := []string{"plugin", "register", "--id", "other", "--socket", other}
	if code, _, errOut := h.runReported(args...); code != ExitOK {
		t.Fatalf("premise: plugin register: exit %d, %s", code, errOut)
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, `plugin "other" registered again, unchanged; only printing it failed: --jq `},
		{[]string{"--timeout", "7s"}, `plugin "other" updated (timeout changed); only printing it failed: --jq `},
	} {
		a := append(append(append([]string{}, args...), c.extra...), "--jq", `error("no")`)
		code, _, errOut := h.runReported(a...)
		if code != ExitError || !strings.Contains(errOut, c.want) {
			t.Errorf("volctl %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(a, " "), code, errOut, ExitError, c.want)
		}
	}
}
