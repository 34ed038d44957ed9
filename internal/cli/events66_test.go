package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// `volctl events --volume X` that matches nothing names the volume IDs the log holds
// that X was likely meant as (EventFilterNear), printed straight to stderr, with no scrub: a
// volume whose ID holds a secret value the state keeps (volume a's token here) is printed
// whole in "did you mean ...?", while every other place shows it "[REDACTED]-db" (the events
// table itself, and `volume status` given the same typo, whose not-found error says `did you
// mean "[REDACTED]-db"?`). docs/architecture.md: "an ID a plugin made out of a secret prints
// as [REDACTED]"; the doc's rule is that no output shows a secret value the state holds.
// Found by helper review66.
func TestEventsFilterNearShowsNoSecretHeldByAVolumeID(t *testing.T) {
	h := newCLIHarness(t)
	const secret = "tok66-s3cret-value"
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "a", Name: "a", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	h.createVolume(t, secret+"-db", spec.SingleNodeWriter)
	typo := strings.ToUpper(secret) + "-DB" // the ID but for case: the log's own spelling is suggested

	// volume status, given the same typo, suggests the ID with the secret redacted.
	code, out, errOut := h.runReported("volume", "status", typo)
	if code == 0 || strings.Contains(out+errOut, secret) || !strings.Contains(errOut, `did you mean "[REDACTED]-db"?`) {
		t.Fatalf("volume status %s: exit %d; want not found, suggesting \"[REDACTED]-db\":\n%s%s", typo, code, out, errOut)
	}
	// The events table shows the volume's ID redacted too.
	if _, out, errOut = h.runReported("events"); strings.Contains(out+errOut, secret) {
		t.Fatalf("volctl events prints the secret:\n%s%s", out, errOut)
	}
	code, out, errOut = h.runReported("events", "--volume", typo)
	if i := strings.Index(out+errOut, secret); i >= 0 {
		t.Errorf("volctl events --volume %s (exit %d) prints volume a's secret value in its suggestion:\n%s%s", typo, code, out, errOut)
	}
}

// `events --follow` reads, at each poll, the events after the last one it printed;
// the log keeps the newest store.DefaultEventLimit (10,000) and drops the oldest as others are
// recorded. A follow that fell behind by more than the log holds (its reader stopped: a pager,
// a blocked pipe, a suspended terminal, while a busy host or a hostile plugin recorded events)
// goes on from the oldest still there and prints nothing of those it never showed: its output
// reads as the whole log since it began, with a hole no line marks. The ids are dense (the
// store says so: rows leave only from the old end), so the follow can tell: the first id after
// the last it printed is gone. Here 10,005 events are recorded between two polls, the first 5
// of which the log has dropped by the next poll; the follow said nothing of them. Found by
// helper review66.
func TestEventsFollowSaysEventsTheLogDroppedBeforeTheyWereShown(t *testing.T) {
	h := newCLIHarness(t)
	f := followJSON(t, h, "", 50*time.Millisecond)
	out, errOut, wait := f.out, f.errOut, f.wait
	wait("registration event", func() bool { return strings.Contains(out.String(), `"plugin-register"`) })
	shown := strings.Count(out.String(), "\n")

	// Another process records more events than the log keeps, in one commit (a follow
	// behind for longer: the same).
	s, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = store.DefaultEventLimit + 5
	if err := s.Update(h.ctx, func(tx *store.Tx) error {
		for i := range n {
			if err := tx.Events().Append(&store.Event{Kind: "plugin-health", PluginID: "mem", Message: fmt.Sprintf("burst %d", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait("last event of the burst", func() bool { return strings.Contains(out.String(), fmt.Sprintf(`"burst %d"`, n-1)) })
	if err := f.stop(); err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	printed := strings.Count(out.String(), "\n") - shown
	if printed != store.DefaultEventLimit {
		t.Fatalf("premise: the follow printed %d of the burst's %d events, want the %d the log keeps", printed, n, store.DefaultEventLimit)
	}
	want := fmt.Sprintf("%d events left the log before they could be shown", n-printed)
	if got := errOut.String(); strings.Count(got, want) != 1 || strings.Count(got, "\n") != 1 {
		t.Errorf("events --follow printed %d of the %d events recorded since its last poll (the log dropped %d of them before it read them); stderr should say so once (%q):\n%s",
			printed, n, n-printed, want, got)
	}
}

// A follow with a filter that fell behind is told once, as one without: the events the log
// dropped past the last one it showed are counted of every kind (the filter's cannot be told
// once they are gone), and the next polls, which find none of the filter's, go on past them,
// rather than warning again at every poll.
func TestEventsFollowWithAFilterSaysOnceThatTheLogDroppedEvents(t *testing.T) {
	h := newCLIHarness(t)
	f := followJSON(t, h, "volume-deregister", 20*time.Millisecond)
	out, errOut, wait := f.out, f.errOut, f.wait
	s, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendEvents := func(kind string, n int) {
		t.Helper()
		if err := s.Update(h.ctx, func(tx *store.Tx) error {
			for i := range n {
				if err := tx.Events().Append(&store.Event{Kind: kind, PluginID: "mem", Message: fmt.Sprintf("%s %d", kind, i)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	appendEvents("volume-deregister", 1)
	wait("first matching event", func() bool { return strings.Contains(out.String(), `"volume-deregister 0"`) })
	appendEvents("plugin-health", store.DefaultEventLimit+3) // the log held 2: 3 of the burst go
	wait("warning", func() bool { return strings.Contains(errOut.String(), "left the log") })
	time.Sleep(5 * f.poll) // polls that find nothing new of the filter's
	appendEvents("volume-deregister", 1)
	wait("matching event after the burst", func() bool { return strings.Count(out.String(), "\n") == 2 })
	if err := f.stop(); err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	got := errOut.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "3 events left the log before they could be shown (of any kind") || strings.Contains(out.String(), "plugin-health") {
		t.Errorf("a follow of --kind volume-deregister behind a burst of 10,003 other events (the 3 before it dropped unseen) should warn once, of 3 events of any kind, and print none of the burst; stderr:\n%s\nstdout:\n%s", got, out)
	}
}

// followed is an `events --follow --json` running in the background (followJSON).
type followed struct {
	out, errOut *iostreams.SyncBuffer
	poll        time.Duration
	wait        func(what string, ok func() bool) // fails the test when ok is not true within 30 s
	stop        func() error                      // ends the follow, and says what it returned
}

// followJSON starts `events --follow --json` (of kind, when not "") on h's state, polling
// every poll.
func followJSON(t *testing.T, h *cliHarness, kind string, poll time.Duration) *followed {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	f := &followed{out: &iostreams.SyncBuffer{}, errOut: &iostreams.SyncBuffer{}, poll: poll}
	ios.Out, ios.ErrOut = f.out, f.errOut
	ctx, cancel := context.WithCancel(h.ctx)
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: true, Poll: poll}
	opts.Filter.Kind = kind
	opts.Exporter.JSON = true
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()
	stopped := false
	var err error
	f.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = f.stop() })
	f.wait = func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 30s; stdout:\n%s\nstderr:\n%s", what, f.out, f.errOut)
			}
		}
	}
	return f
}
