package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
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
		inStateDir(f, h.state)
		root := NewRootCmd(f)
		root.SetArgs(c.args)
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
	msg := withNext(afterDone(errors.New("writing to standard output: broken pipe"), "claim done"), claimKeptNext(engine.ClaimInfo{VolumeID: "db", Alloc: "web[0]"})).Error()
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

// TestActingCommandsSayWhatTheyDidWhenTheirResultIsLost: `volume create`, `snapshot create`,
// `snapshot delete`, `group run` and `reconcile` printed their text result without checking
// the write. Their reader gone (`| head -c0`) they exited 0, silent, against the docs' exit 1
// for an acting command's result unprinted (claim, release, delete and the rest do); on a full
// disk they exited 1 saying only that stdout failed, not that the volume or snapshot was made.
// Now each exits 1 saying what it did, which stands, as claim does.
func TestActingCommandsSayWhatTheyDidWhenTheirResultIsLost(t *testing.T) {
	requireMount(t) // group run claims
	h := newCLIHarness(t)
	dir := t.TempDir()
	volSpec := filepath.Join(dir, "db.hcl")
	if err := os.WriteFile(volSpec, []byte(`id = "db"
name = "db"
type = "csi"
plugin_id = "mem"
capability {
  access_mode = "multi-node-multi-writer"
  attachment_mode = "file-system"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	groupSpec := filepath.Join(dir, "g.hcl")
	if err := os.WriteFile(groupSpec, []byte(`group "g" {
  volume "d" {
    type            = "csi"
    source          = "db"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The group at two allocs, for a step's run at one (g.hcl) to scale down.
	groupSpec2 := filepath.Join(dir, "g2.hcl")
	if err := os.WriteFile(groupSpec2, []byte(`group "g" {
  count = 2
  volume "d" {
    type            = "csi"
    source          = "db"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		want string
		// before runs, its stdout kept, ahead of each of the step's two runs: the snapshot
		// deleted by the first is made again for the second, which would otherwise delete a
		// snapshot the plugin no longer has ("not found, nothing deleted").
		before []string
		// again is what the step's second run says, where it differs: the same create run
		// again finds the volume made, unchanged, and did nothing, so its lost line is the
		// write's error alone, never "created" (TestCreateAgainUnchangedWhoseFilterFailsIsNotSaidCreated).
		again string
	}{
		{[]string{"volume", "create", volSpec}, `volume "db" created; only printing it failed: `, nil, "writing to standard output: "},
		{[]string{"volume", "snapshot", "create", "db", "s1"}, `snapshot "s1" (ID `, nil, ""},
		{[]string{"volume", "snapshot", "delete", "mem", "s1", "--yes"}, `snapshot "s1" of plugin "mem" deleted; only printing it failed: `,
			[]string{"volume", "snapshot", "create", "db", "s1"}, ""},
		{[]string{"group", "run", groupSpec}, `group "g" run: 1 of 1 allocs have their volumes; only printing it failed: `, nil, ""},
		// What a scale-down and a stop released, which their lost output would have named.
		{[]string{"group", "run", groupSpec}, `group "g" run: 1 of 1 allocs have their volumes; scaled down to 1: released "db" for alloc "g[1]"; only printing it failed: `,
			[]string{"group", "run", groupSpec2}, ""},
		{[]string{"group", "stop", "g"}, `group "g" stopped; released "db" for alloc "g[0]"; only printing it failed: `,
			[]string{"group", "run", groupSpec}, ""},
		{[]string{"reconcile"}, `reconcile: 0 action(s) done, 0 problem(s) left; only printing it failed: `, nil, ""},
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	for _, s := range steps {
		for run, lost := range []string{"broken pipe", "no space left on device"} {
			want := s.want
			if run > 0 && s.again != "" {
				want = s.again
			}
			if s.before != nil {
				if code, _, errOut := h.runReported(s.before...); code != ExitOK {
					t.Fatalf("volctl %s: exit %d: %s", strings.Join(s.before, " "), code, errOut)
				}
			}
			out := full
			var w *os.File
			if lost == "broken pipe" {
				r, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				r.Close() // the reader gone before the first line
				out, w = pw, pw
			}
			ios, _, _, errOut := iostreams.Test()
			ios.Out = &iostreams.Stdout{File: out}
			f := NewFactory(ios)
			inStateDir(f, h.state)
			root := NewRootCmd(f)
			root.SetArgs(s.args)
			code := f.Report(f.RedactError(h.ctx, root.ExecuteContext(h.ctx)))
			f.Close()
			if w != nil {
				w.Close()
			}
			cmd := "volctl " + strings.Join(s.args, " ")
			if code != ExitError || !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), lost) {
				t.Errorf("%s, its stdout lost (%s): exit %d, stderr %q; want exit 1 saying %q and %q", cmd, lost, code, errOut.String(), want, lost)
			}
			if run > 0 && s.again != "" && strings.Contains(errOut.String(), "created") {
				t.Errorf("%s run again, the volume found unchanged, its stdout lost: stderr %q says created", cmd, errOut.String())
			}
		}
	}
}

// TestRegistrationThatFailsIsNotHiddenByAReaderGone: `volctl plugin register a.hcl b.hcl |
// head -c0`, a's plugin registered and b's refused (its socket missing): the error joined the
// unprinted line (a reader gone, quiet) with b's refusal, and Report kept quiet about both: exit
// 1, stderr empty, b's failure said nowhere. Now both are said.
func TestRegistrationThatFailsIsNotHiddenByAReaderGone(t *testing.T) {
	t.Parallel()
	socket, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()))
	state := e.StateDir()
	specFile := filepath.Join(t.TempDir(), "plugins.hcl")
	if err := os.WriteFile(specFile, []byte(`plugin "a" {
  type = "monolith"
  socket = "`+socket+`"
}
plugin "b" {
  type = "monolith"
  socket = "`+filepath.Join(t.TempDir(), "none.sock")+`"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	ios, _, _, errOut := iostreams.Test()
	ios.Out = &iostreams.Stdout{File: w}
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs([]string{"--state-dir", state, "plugin", "register", specFile, "--wait", "0s"})
	code := f.Report(f.RedactError(context.Background(), root.ExecuteContext(context.Background())))
	f.Close()
	for _, want := range []string{`plugin "a" registered; only printing it failed: `, "broken pipe", `"b"`, "none.sock"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("plugin register of a (registered) and b (no socket) | head -c0: exit %d, stderr %q; want it to say %q", code, errOut.String(), want)
		}
	}
	if code == 0 {
		t.Errorf("plugin register with b refused: exit 0")
	}
}
