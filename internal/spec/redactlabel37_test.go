package spec

import (
	"strings"
	"testing"
)

// The adversary: a secrets block (or another a name says holds secrets) written with a label,
// the secret in it: `secrets "TOPSECRET" {`. The snippet masks the label, as every string of
// a sensitive name's value, but the snippet's "on FILE:LINE:COL, in BLOCK" line named the
// enclosing block with its labels quoted (blockNav.ContextString), and printed the secret
// there. The label of such a block is masked there too; another block's label is still named.
func TestSensitiveBlocksLabelIsNotNamedInTheContext(t *testing.T) {
	t.Parallel()
	const secret = "TOPSECRET"
	for _, src := range []string{
		baseVolume + "secrets \"TOPSECRET\" {\n  k = \"v\"\n}",
		baseVolume + "secrets \"TOPSECRET\" {\n  k = [\"v\"]\n}",
		baseVolume + "db_password \"TOPSECRET\" {\n}",
		baseVolume + "mount_options {\n  fs_type = \"ext4\"\n}\nSecrets \"x\" \"TOPSECRET\" {\n}",
		// HCL1's quoted block name, rewritten.
		baseVolume + "\"secrets\" \"TOPSECRET\" { k = \"v\", \"bad key\" = \"x\" }",
	} {
		text, diags := renderFailure(t, src, 80)
		if strings.Contains(text, secret) {
			t.Errorf("secret rendered:\n%s", text)
		}
		if !strings.Contains(text, `, in `) || !strings.Contains(text, Redacted) {
			t.Errorf("the context line does not name the block with its label masked:\n%s", text)
		}
		for _, j := range JSONDiagnostics("t.spec", diags) {
			if strings.Contains(j.Summary+j.Detail, secret) {
				t.Errorf("secret in JSON diagnostic: %+v", j)
			}
		}
	}
	// Honest: another block's label is named as written.
	text, _ := renderFailure(t, baseVolume+"capability \"rw-node\" {\n  access_mode = \"single-node-writer\"\n}", 80)
	if !strings.Contains(text, `, in capability "rw-node":`) {
		t.Errorf("a capability block's label is not named:\n%s", text)
	}
}
