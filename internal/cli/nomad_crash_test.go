package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// The credentials a nomad command sends, which a crash report must not print.
const (
	crashNomadToken    = "5d0c1f4e-acl-token-crash-report"
	crashNomadUser     = "ops"
	crashNomadPassword = "basic-auth-password-crash-9e1"
)

// A nomad command's panic is reported scrubbed of the Nomad credentials it sends: NOMAD_TOKEN,
// a basic auth password in NOMAD_ADDR, and that password's Authorization header value, which a
// panic's value may hold (a request, or the client, printed whole). Before, the report was
// scrubbed only of what the state holds and what a command was given in specs and flags.
func TestNomadCredentialsAreScrubbedFromCrashReports(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte(crashNomadUser + ":" + crashNomadPassword))
	if state := os.Getenv("VOLCTL_TEST_NOMAD_CRASH_STATE"); state != "" {
		// The child: `volctl nomad status` as main runs it, then a panic carrying them all.
		defer crash.Recover()
		ios, _, _, _ := iostreams.Test()
		_ = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Nomad: nomadClient,
			Engine: func(ctx context.Context) (*engine.Engine, error) {
				return engine.Open(ctx, engine.Config{StateDir: state})
			}})
		panic("the request held token " + crashNomadToken + ", password " + crashNomadPassword + ", header Basic " + basic)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNomadCredentialsAreScrubbedFromCrashReports$")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_NOMAD_CRASH_STATE="+filepath.Join(t.TempDir(), "state"),
		"NOMAD_TOKEN="+crashNomadToken, "NOMAD_ADDR=http://"+crashNomadUser+":"+crashNomadPassword+"@127.0.0.1:1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != crash.ExitCode {
		t.Fatalf("the nomad command that panicked: %v, want exit status %d\n%s", err, crash.ExitCode, out.String())
	}
	for _, secret := range []string{crashNomadToken, crashNomadPassword, basic} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("the crash report prints %q:\n%s", secret, out.String())
		}
	}
	if !strings.Contains(out.String(), "the request held token [REDACTED]") || !strings.Contains(out.String(), "volctl crashed") {
		t.Errorf("the crash report is not the scrubbed panic:\n%s", out.String())
	}
}
