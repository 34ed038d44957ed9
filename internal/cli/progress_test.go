package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// On a terminal, a claim shows on stderr each step it is in (every RPC as it is sent) on one
// redrawn line, erased at the end; stdout carries only the target path. Off a terminal, and
// with --json on one, stderr stays empty.
func TestClaimProgressOnATerminalOnly(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	for _, tt := range []struct {
		name      string
		stderrTTY bool
		json      bool
		alloc     string
		wantSteps bool
	}{
		{name: "terminal", stderrTTY: true, alloc: "a1", wantSteps: true},
		{name: "not a terminal", alloc: "a2"},
		{name: "terminal with --json", stderrTTY: true, json: true, alloc: "a3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			ios.SetTTY(false, false, tt.stderrTTY)
			opts := &VolumeClaimOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: tt.alloc}
			opts.Exporter.JSON = tt.json
			if err := volumeClaimRun(h.ctx, opts); err != nil {
				t.Fatal(err)
			}
			stderr := errOut.String()
			if !tt.wantSteps {
				if stderr != "" {
					t.Fatalf("stderr = %q, want nothing", stderr)
				}
				return
			}
			for _, rpc := range []string{"NodeStageVolume… ", "NodePublishVolume… "} {
				if !strings.Contains(stderr, "\r"+rpc) {
					t.Errorf("stderr has no step %q: %q", rpc, stderr)
				}
			}
			// The line is erased at the end: the last write blanks it and returns the cursor.
			if i := strings.LastIndex(stderr, "\r"); i < 0 || strings.TrimSpace(stderr[strings.LastIndex(stderr[:i], "\r")+1:i]) != "" {
				t.Errorf("the progress line is not erased at the end: %q", stderr)
			}
			if !strings.HasSuffix(strings.TrimSpace(out.String()), "/rw-file-system-multi-node-multi-writer") || strings.Contains(out.String(), "…") {
				t.Errorf("stdout = %q, want the target path only", out.String())
			}
		})
	}
}

// A step's line says how long it has run, is redrawn over the previous one (padded so that a
// shorter line leaves nothing of a longer one) and never wider than the terminal.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(100, 0)
	p := &progress{w: &buf, width: 30, now: func() time.Time { return now },
		stop: make(chan struct{}), exited: make(chan struct{})}
	close(p.exited) // no ticker: draws happen only when the test asks
	p.enter("NodeStageVolume")
	now = now.Add(2100 * time.Millisecond)
	p.mu.Lock()
	p.draw()
	p.mu.Unlock()
	p.enter("waiting for the lock on volume \"db\" (another volctl is working on it)")
	p.enter("Probe")
	p.end()
	want := "\rNodeStageVolume… 0.0s" +
		"\rNodeStageVolume… 2.1s" +
		"\rwaiting for the lock on volu…" +
		"\rProbe… 0.0s                  " +
		"\r           \r"
	if got := buf.String(); got != want {
		t.Errorf("progress wrote\n%q\nwant\n%q", got, want)
	}
	p.enter("after the end")
	if buf.String() != want {
		t.Errorf("a step after the end was drawn: %q", buf.String())
	}
}

// TestProgressLineCountsCells: a step naming a CJK volume takes two cells a character. Cut by
// runes, the line ran past the terminal's width and wrapped, and the carriage return that
// redraws it then rewrote the second half only, leaving the first on screen for good; the
// spaces that erase it must cover cells too.
func TestProgressLineCountsCells(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, width: 30, now: func() time.Time { return time.Unix(100, 0) },
		stop: make(chan struct{}), exited: make(chan struct{})}
	close(p.exited)
	p.enter("lock on \"数据库数据库数据库数据库\"")
	drawn := strings.TrimPrefix(buf.String(), "\r")
	if w := display.Width(drawn); w > 29 {
		t.Errorf("the progress line is %d cells wide on a terminal of 30, and wraps: %q", w, drawn)
	}
	buf.Reset()
	p.end()
	if erased := strings.Trim(buf.String(), "\r"); len(erased) < display.Width(drawn) {
		t.Errorf("the line of %d cells is erased with %d spaces: %q", display.Width(drawn), len(erased), buf.String())
	}
}
