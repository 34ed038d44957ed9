package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
)

// A plugin's GetPluginInfo name is plugin text; the agent logs it ("registered plugin",
// provider=...). The text log escapes its C1 CSI and bidi override (strconv.Quote); before,
// --log-format json wrote them raw (encoding/json leaves C1 raw, and U+009B is a terminal's
// CSI). Found by helper review64.
func TestAgentJSONLogEscapesPluginText(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := hostpathtest.ShortDir(t)
			cfg := csitest.DefaultMemConfig()
			cfg.Name = "mem.csi\u009b2J\u202eevil"
			mem := csitest.NewMountingMemPlugin(t, cfg)
			socket, _ := csitest.Serve(t, csitest.WithServer(mem))
			conf := filepath.Join(dir, "agent.hcl")
			src := "plugin \"p\" {\n  type   = \"monolith\"\n  socket = \"" + socket + "\"\n}\n"
			if err := os.WriteFile(conf, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			ios, _, _, _ := iostreams.Test()
			stderr := &iostreams.SyncBuffer{}
			ios.ErrOut = stderr
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := &AgentOptions{IO: ios, StateDir: func() (string, error) { return filepath.Join(dir, "state"), nil },
				ConfigFile: conf, LogFormat: format, Settings: agent.Settings{ProbeInterval: 50 * time.Millisecond}}
			done := make(chan error, 1)
			go func() { done <- agentRun(ctx, opts) }()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(stderr.String(), "registered plugin") {
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("the agent did not register the plugin: %v\n%s", <-done, stderr)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("agent: %v", err)
			}
			log := stderr.String()
			for _, bad := range []string{"\u009b", "\u202e"} {
				if strings.Contains(log, bad) {
					t.Errorf("--log-format %s writes the plugin's %q raw to the log:\n%q", format, bad, log)
				}
			}
		})
	}
}

// A plugin's snapshot ID is plugin data; the lines wording such data show each character that
// shows as nothing (spec.IsInvisible: COMBINING GRAPHEME JOINER, a variation selector, a Hangul
// filler) as a visible escape, as `snapshot list`'s table does. Before, the create line quoted
// it with %q only, which leaves those raw: "snap-1\u034f" read as "snap-1", an ID the user then
// typed and was refused. Found by helper review64.
func TestSnapshotCreateLineEscapesAnInvisibleID(t *testing.T) {
	ctx := context.Background()
	const id = "snap-1\u034f\ufe0f\u3164"
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateSnapshotResponse); ok && err == nil {
			r.Snapshot.SnapshotId = id
		}
		if r, ok := resp.(*csipb.ListSnapshotsResponse); ok && err == nil {
			for _, e := range r.Entries {
				e.Snapshot.SnapshotId = id
			}
		}
		return resp, err
	}
	_, e, eng := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithInterceptor(answer))
	createSingleWriter(t, e, "db")
	ios, _, out, errOut := iostreams.Test()
	if err := snapshotCreateRun(ctx, &SnapshotCreateOptions{IO: ios, Engine: eng, VolumeID: "db", Name: "nightly"}); err != nil {
		t.Fatalf("snapshot create: %v\n%s", err, errOut)
	}
	ios, _, list, _ := iostreams.Test()
	if err := snapshotListRun(ctx, &SnapshotListOptions{IO: ios, Engine: eng, Now: nowFunc, PluginID: "mem"}); err != nil {
		t.Fatal(err)
	}
	shown := `snap-1\u034f\ufe0f\u3164`
	if !strings.Contains(list.String(), shown) {
		t.Fatalf("snapshot list does not show the ID escaped, so this tests nothing:\n%s", list)
	}
	for _, r := range []string{"\u034f", "\ufe0f", "\u3164"} {
		if strings.Contains(out.String(), r) {
			t.Errorf("snapshot create prints the plugin's snapshot ID with %+q raw (snapshot list shows %s):\n%s", r, shown, out)
		}
	}

}

// A plugin answers CreateSnapshot with "snap-1\u034f" (COMBINING GRAPHEME JOINER: shows as
// "snap-1"), and `snapshot delete mem snap-1`, an ID volctl does not record, is refused as a
// near spelling (a folding backend would delete the recorded one). Before, the refusal advised
// `volctl volume snapshot deregister mem snap-1`, which fails: volctl has no record of it. It
// advises deleting the recorded one by its ID, which works. Found by helper review64.
func TestNearSnapshotDeleteOfAnUnrecordedIDAdvisesACommandThatWorks(t *testing.T) {
	ctx := context.Background()
	const id = "snap-1\u034f"
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateSnapshotResponse); ok && err == nil {
			r.Snapshot.SnapshotId = id
		}
		return resp, err
	}
	_, e, eng := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithInterceptor(answer))
	createSingleWriter(t, e, "db")
	ios, _, _, _ := iostreams.Test()
	if err := snapshotCreateRun(ctx, &SnapshotCreateOptions{IO: ios, Engine: eng, VolumeID: "db", Name: "nightly"}); err != nil {
		t.Fatal(err)
	}
	yes := func(bool, string) error { return nil }
	ios, _, _, _ = iostreams.Test()
	delErr := snapshotDeleteRun(ctx, &SnapshotDeleteOptions{IO: ios, Engine: eng, Confirm: yes, PluginID: "mem", SnapshotID: "snap-1", Yes: true})
	advised := shellquote.Command("volctl volume snapshot delete", "mem", id)
	if delErr == nil || strings.Contains(delErr.Error(), "deregister mem snap-1") || !strings.Contains(delErr.Error(), advised) {
		t.Fatalf("snapshot delete mem snap-1, volctl recording only %+q = %v; want the near-spelling refusal advising `%s`, not a deregister of the ID it does not record", id, delErr, advised)
	}
	ios, _, _, _ = iostreams.Test()
	if err := snapshotDeleteRun(ctx, &SnapshotDeleteOptions{IO: ios, Engine: eng, Confirm: yes, PluginID: "mem", SnapshotID: id, Yes: true}); err != nil {
		t.Errorf("the delete's refusal advises `%s`, which fails: %v", advised, err)
	}
}
