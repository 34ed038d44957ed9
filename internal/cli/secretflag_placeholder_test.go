package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The placeholder volctl export nomad writes in place of a secret, given as a snapshot's
// secret on the command line (--secret token='[REDACTED]', or a --secret-file copied from an
// export), was taken and sent to the plugin as the credential, where a spec's is refused
// (spec.IsPlaceholder). It is refused, naming the flag and key; another tool's spelling of a
// hidden value ("<redacted>") is warned about, naming the key, never the value, and taken.
func TestSecretFlagPlaceholderIsRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(" "+spec.Redacted+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sf := range []secretFlags{
		{Values: []string{"token=" + spec.Redacted}},
		{Values: []string{"token= " + spec.Redacted}},
		{Files: []string{"token=" + file}},
	} {
		got, err := sf.parse(context.Background(), strings.NewReader(""), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "token") || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("%+v: taken as the secret (%d secret(s)), not refused as the placeholder naming the key: %v", sf, len(got), err)
		}
	}
	var warn bytes.Buffer
	sf := secretFlags{Values: []string{"token=<redacted>", "user=ops"}}
	got, err := sf.parse(context.Background(), strings.NewReader(""), &warn)
	if err != nil || got["token"] != "<redacted>" {
		t.Fatalf("another spelling of a placeholder, which may be the real value, is not taken: %v %v", got, err)
	}
	if w := warn.String(); !strings.Contains(w, "--secret token") || !strings.Contains(w, "placeholder") || strings.Contains(w, "user") || strings.Contains(w, "<redacted>") {
		t.Errorf("the warning does not name the key alone (or shows the value): %q", w)
	}
}
