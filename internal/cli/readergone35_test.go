package cli

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
	"github.com/volctl/volctl/internal/spec"
)

// TestActingCommandWhoseReaderIsGoneSaysWhatItKept: a script's `volctl volume claim db --alloc
// a | head -c0` (or a reader that died) made the claim, kept it (the command outlives its
// reader: TestCommandThatWritesFinishesWhenItsReaderIsGone), and exited 1 with nothing on
// stderr: the same exit and the same silence as a claim the plugin failed and volctl rolled back
// with its error lost, so the script could not tell a volume held from one free. Now stderr says
// what was done and stands, as for a full disk, and how to get the target path or release it,
// commands that paste as printed. The claim is still kept and the exit is still 1.
func TestActingCommandWhoseReaderIsGoneSaysWhatItKept(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"volume", "claim", "db", "--alloc", "a"}, []string{`claim "db" for alloc "a" published at `, "broken pipe",
			"the claim stands: `volctl volume claim db --alloc a` prints its target path again, `volctl volume release db --alloc a` releases it"}},
		{[]string{"volume", "claim", "db", "--alloc", "a", "--json"}, []string{`claim "db" for alloc "a" published at `, "broken pipe", "`volctl volume release db --alloc a` releases it"}},
		{[]string{"volume", "release", "db", "--alloc", "a"}, []string{`claim "db" for alloc "a" released; only printing it failed: `, "broken pipe"}},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader gone before the first line
		ios, _, _, errOut := iostreams.Test()
		ios.Out = &iostreams.Stdout{File: w}
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs(append([]string{"--state-dir", h.state}, c.args...))
		code := f.Report(f.RedactError(h.ctx, root.ExecuteContext(h.ctx)))
		f.Close()
		w.Close()
		cmd := "volctl " + strings.Join(c.args, " ") + " | head -c0"
		if code != ExitError {
			t.Errorf("%s: exit status %d, want %d (its result unprinted)", cmd, code, ExitError)
		}
		for _, want := range c.want {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("%s: stderr %q; want it to say %q", cmd, errOut.String(), want)
			}
		}
	}
	// The claim was kept by the first command and the second (the same claim again), then
	// released by the third.
	if code, out, errOut := h.runReported("volume", "status", "db", "--jq", ".claims | length"); code != 0 || out != "0\n" {
		t.Errorf("volume status db after the release: exit %d, %q %q; want no claim left", code, out, errOut)
	}
}

// The advice's commands paste as printed for an alloc the shell would read otherwise (a
// group's "web[0]" is a glob).
func TestClaimKeptAdviceQuotesTheAlloc(t *testing.T) {
	t.Parallel()
	msg := withNext(afterDone(errors.New("writing to standard output: broken pipe"), "claim done"), claimKeptNext("db", "web[0]")).Error()
	advised := regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(msg, -1)
	if len(advised) != 2 {
		t.Fatalf("advice %q: want two commands in backquotes", msg)
	}
	for i, verb := range []string{"claim", "release"} {
		if err := parseAdvised(t, advised[i][1]); err != nil {
			t.Errorf("advised %q: %v", advised[i][1], err)
		}
		got := shellquotetest.RunArgs(t, advised[i][1])
		if want := []string{"volume", verb, "db", "--alloc", "web[0]"}; !slices.Equal(got, want) {
			t.Errorf("advised %q runs as %q; want %q", advised[i][1], got, want)
		}
	}
}
