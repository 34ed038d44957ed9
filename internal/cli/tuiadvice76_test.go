package cli

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/tui"
)

// driveDashboard runs `volctl --state-dir dir tui` with the dashboard driven by hand instead of
// on the terminal: its model made from the options volctl gives it, at width x height, its
// commands run to quiescence and its timers never fired, these keys typed in turn. It returns
// the last frame.
func driveDashboard(t *testing.T, dir string, width, height int, keys ...tea.KeyMsg) string {
	t.Helper()
	ios, _, _, errOut := iostreams.Test()
	ios.SetTTY(true, true, true)
	f := NewFactory(ios)
	var frame string
	ran := false
	cmd := newCmdTUI(f, func(o *TUIOptions) error {
		o.Run = func(ctx context.Context, _ io.Reader, _ io.Writer, opts tui.Options) error {
			ran = true
			opts.After = func(time.Duration, func() tea.Msg) tea.Cmd { return nil }
			var m tea.Model = tui.New(ctx, opts)
			run := func(cmd tea.Cmd) {
				queue := []tea.Cmd{cmd}
				for steps := 0; len(queue) > 0; steps++ {
					if steps > 1000 {
						t.Fatal("the dashboard's commands do not settle")
					}
					c := queue[0]
					queue = queue[1:]
					if c == nil {
						continue
					}
					switch msg := c().(type) {
					case nil, tea.QuitMsg:
					case tea.BatchMsg:
						queue = append(queue, msg...)
					default:
						var next tea.Cmd
						m, next = m.Update(msg)
						queue = append(queue, next)
					}
				}
			}
			send := func(msg tea.Msg) {
				var next tea.Cmd
				m, next = m.Update(msg)
				run(next)
			}
			send(tea.WindowSizeMsg{Width: width, Height: height})
			run(m.Init())
			for _, k := range keys {
				send(k)
			}
			frame = m.View()
			return nil
		}
		return tuiRun(context.Background(), o)
	})
	root := newRoot(f, []*cobra.Command{cmd})
	root.SetArgs([]string{"--state-dir", dir, "tui"})
	if err := root.Execute(); err != nil {
		t.Fatalf("volctl --state-dir %s tui: %v\n%s", dir, err, errOut)
	}
	if !ran {
		t.Fatalf("volctl --state-dir %s tui: the dashboard did not run\n%s", dir, errOut)
	}
	return frame
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// unwrapped is what a frame says with the dialog's borders and every space taken out, so that a
// command the box wraps over lines (a long path cut anywhere) reads whole.
func unwrapped(s string) string {
	s = strings.NewReplacer("│", "", "┃", "", "║", "").Replace(s)
	return strings.Join(strings.Fields(s), "")
}

// TestDashboardAdviceCarriesTheStateDirGiven: `volctl --state-dir DIR tui` acts on DIR's state,
// and the errors it shows advise volctl commands: a release the plugin refuses says the claim
// is left for `volctl reconcile` and that, the plugin gone, `volctl volume detach db --force
// --yes` drops it. On the command line, given --state-dir, that advice carries it
// (stateDirAdvice, TestAdviceCarriesTheStateDirGiven); but that rewrites stderr alone, and the
// dashboard draws its errors on the screen, bare. Pasted from the dashboard, the forced detach
// acts on the default state dir, where a volume "db" may be another's: it drops that volume's
// claims and unmounts their targets, and the reconcile reports on a state the dashboard never
// showed. The commands the dashboard advises must carry the --state-dir it was given, as
// those on stderr do. Found by helper review76 (tui).
func TestDashboardAdviceCarriesTheStateDirGiven(t *testing.T) {
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessServing(t, csitest.WithFaults(faults))
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.claim(t, "db", "web-0")
	t.Cleanup(func() {
		faults.Clear(csi.RPCNodeUnpublishVolume)
		_, _ = h.e.Detach(context.Background(), "db", false) // unmount what the test left mounted
	})
	faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.Internal, Message: "device busy"})

	// The claims view (2), its one claim released (x), Release chosen over Cancel (tab, enter).
	frame := driveDashboard(t, h.state, 120, 60,
		runes("2"), runes("x"), tea.KeyMsg{Type: tea.KeyTab}, tea.KeyMsg{Type: tea.KeyEnter})
	said := unwrapped(frame)
	if !strings.Contains(said, "Releasefailed") || !strings.Contains(said, "--force") {
		t.Fatalf("the release the plugin refused is not shown with its advice (a precondition); the screen:\n%s", frame)
	}
	want := "`volctl --state-dir " + shellquote.Arg(h.state) + " "
	with := unwrapped(want)
	bare := regexp.MustCompile("`volctl(volume|reconcile)[^`]*`")
	if got := bare.FindAllString(said, -1); len(got) > 0 || !strings.Contains(said, with) {
		t.Errorf("volctl --state-dir %s tui advises %q (spaces taken out), without the state dir it acts on: pasted, they act on the default state dir; want each to begin %s. The screen:\n%s",
			h.state, got, want, frame)
	}
}
