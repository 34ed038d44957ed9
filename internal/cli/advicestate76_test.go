package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
)

// A command given --state-dir advised bare volctl commands (`volctl status`, `volctl
// reconcile`, `volctl volume detach db --force --yes`): pasted, they acted on the default state
// dir, not the one the command acted on, where a volume of the same ID may be another's. The
// advice on stderr carries the --state-dir given, made absolute (a relative one names another
// directory from elsewhere), and advice naming a state dir already is left as it is.
func TestAdviceCarriesTheStateDirGiven(t *testing.T) {
	dir := t.TempDir()
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs([]string{"--state-dir", dir, "volume", "status", "nope"})
	code := f.Report(root.Execute())
	_ = f.CloseAtExit()
	if code != ExitError {
		t.Fatalf("volume status nope: exit %d, want %d\n%s", code, ExitError, errOut)
	}
	want := "`volctl --state-dir " + shellquote.Arg(dir) + " status`"
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("volume status nope with --state-dir %s said:\n%s\nwant its advice to carry the state dir: %q", dir, errOut, want)
	}
	if strings.Contains(errOut.String(), "`volctl status`") {
		t.Errorf("advice left bare, acting on the default state dir:\n%s", errOut)
	}
	if strings.Contains(out.String(), "--state-dir") {
		t.Errorf("stdout rewritten: %q", out)
	}

	// A relative --state-dir is made absolute; advice that names one already is kept.
	var buf bytes.Buffer
	w := withStateDirAdvice(&buf, "rel")
	abs, _ := filepath.Abs("rel")
	if _, err := w.Write([]byte("run `volctl reconcile`, or `volctl --state-dir /q status`; not volctl alone\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "run `volctl --state-dir "+shellquote.Arg(abs)+" reconcile`, or `volctl --state-dir /q status`; not volctl alone\n"; got != want {
		t.Errorf("rewritten = %q, want %q", got, want)
	}
}
