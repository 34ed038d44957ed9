package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// The adversary: a plugin with GET_SNAPSHOT (no LIST_SNAPSHOTS) whose GetSnapshot, asked about
// a snapshot still being processed (ready_to_use false), answers OK about another snapshot,
// one that is ready (an ID mapped wrongly, a cache keyed badly). The restore's check took the
// answer as the asked snapshot's and sent CreateVolume from a snapshot not ready: a volume
// missing what the processing had not done. An answer about another snapshot says nothing of
// the one asked: the create is refused, a conflict naming both, nothing sent or recorded.
func TestRestoreCheckedByGetSnapshotAnsweringAnotherSnapshot(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, func(c *csitest.MemConfig) {
		c.Controller.ListSnapshots = false
		c.Controller.GetSnapshot = true
	})
	processing := csi.Snapshot{ID: "snap-uploading", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes}
	h.mem.AddSnapshot(processing)
	h.faults.Inject(csi.RPCGetSnapshot, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.GetSnapshotResponse)
		resp.Snapshot.SnapshotId = "snap-done"
		resp.Snapshot.ReadyToUse = true
	}})
	h.mem.ResetCalls()
	sv := volume("restored")
	sv.SnapshotID = processing.ID
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `snapshot "snap-uploading"`) || !strings.Contains(err.Error(), `"snap-done"`) {
		t.Fatalf("restore checked by a GetSnapshot answering about another snapshot = %v; want a conflict naming both snapshots", err)
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCCreateVolume) || !slices.Contains(got, csi.RPCGetSnapshot) {
		t.Errorf("RPCs = %v, want GetSnapshot and no CreateVolume", got)
	}
	if _, err := h.e.Volume(h.ctx, "restored"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume after the refused restore: %v, want not recorded", err)
	}
	h.faults.Clear(csi.RPCGetSnapshot)
	processing.ReadyToUse = true
	h.mem.AddSnapshot(processing)
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("restore once the plugin answers about the snapshot asked, ready: %v", err)
	}
}

// staleTokens is a ListSnapshots or ListVolumes fault: the plugin's listing changed after it
// gave its first next_token, and it answers ABORTED, the CSI spec's code for a starting_token
// it no longer honours, to every call with a token until it is asked from the start again; the
// tokens it gives from then on are good. restarted says whether it was.
func staleTokens(restarted *bool) csitest.Fault {
	var mu sync.Mutex
	refused := false
	return csitest.Fault{Code: codes.Aborted, Message: "starting_token is stale: the listing changed", When: func(m proto.Message) bool {
		mu.Lock()
		defer mu.Unlock()
		tok := m.ProtoReflect().Get(m.ProtoReflect().Descriptor().Fields().ByName("starting_token")).String()
		switch {
		case tok == "":
			*restarted = *restarted || refused
			return false
		case *restarted:
			return false
		}
		refused = true
		return true
	}}
}

// The adversary: a plugin whose listing changed while volctl paged through it (a snapshot made
// or deleted meanwhile) and which answers ABORTED to the next page's starting_token, as the CSI
// spec has it say of a token no longer valid, meaning "list again from the start". volctl
// retried the same token at each of its attempts, ABORTED each time, and gave up: the listing
// failed, the snapshots the plugin has and volctl does not record were not shown, and the
// warning's hint said to list again from the start, which volctl could have done itself. A
// token refused with ABORTED is not retried: the listing starts again from the first page
// (twice at most), and what the pages before held is not kept twice.
func TestListSnapshotsStartsAgainWhenThePluginRefusesItsOwnToken(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
	for _, name := range []string{"a", "b"} {
		h.snapshot(name)
	}
	h.mem.AddSnapshot(csi.Snapshot{ID: "made-elsewhere", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
	restarted := false
	h.faults.Inject(csi.RPCListSnapshots, staleTokens(&restarted))
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Warnings) != 0 || !restarted {
		t.Errorf("listing through a plugin that refused its token with ABORTED: warnings %q (listed again from the start: %t), want none", list.Warnings, restarted)
	}
	var ids []string
	for _, s := range list.Snapshots {
		ids = append(ids, s.ID)
	}
	if len(ids) != 3 || !slices.Contains(ids, "made-elsewhere") {
		t.Errorf("snapshots listed = %q, want the plugin's 3, each once, the one volctl does not record included", ids)
	}
}

// The same plugin refusing every token it gives: the listing starts again twice, never sends a
// refused token again, and then gives up, saying so.
func TestListSnapshotsRefusingEveryTokenGivesUpAfterStartingAgainTwice(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
	for _, name := range []string{"a", "b"} {
		h.snapshot(name)
	}
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Code: codes.Aborted, When: func(m proto.Message) bool {
		return m.(*csipb.ListSnapshotsRequest).GetStartingToken() != ""
	}})
	h.faults.ResetCounts()
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.faults.Calls(csi.RPCListSnapshots); got != 6 {
		t.Errorf("ListSnapshots sent %d times, want 6 (the first page and the refused second, three times)", got)
	}
	if w := strings.Join(list.Warnings, "\n"); !strings.Contains(w, "listed again from the first page 2 times") || !strings.Contains(w, "showing volctl's records only") {
		t.Errorf("warnings = %q, want one saying the listing started again twice, showing volctl's records only", list.Warnings)
	}
}

// A node ID with control characters (a newline read with it from a file, an escape sequence)
// is accepted, as Nomad accepts any non-empty one and the CSI spec bounds only its size: it is
// the plugin's own name for the node, sent back to it byte for byte in every
// ControllerPublishVolume and ControllerUnpublishVolume (refusing it would fail a plugin that
// works, and "cleaning" it would name another node), and escaped wherever it is shown
// (display.Escape, the TUI's cells: TestPluginDataControlCharactersEscaped, whose plugin's node ID
// holds escape sequences, and the TUI's tests). This
// test pins the acceptance and the byte-exact round trip.
func TestNodeIDWithControlCharactersIsAcceptedAndSentBackAsItIs(t *testing.T) {
	t.Parallel()
	const node = "node-1\n\x1b[31mred\x1b[0m\t"
	h := newHarness(t, func(c *csitest.MemConfig) { c.NodeID = node })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{node}) {
		t.Fatalf("attached to %q, want %q, the plugin's node ID as it gave it", nodes, node)
	}
	if st, _ := h.staging("v"); st.NodeID != node {
		t.Errorf("the staging records the attachment to node %q, want %q", st.NodeID, node)
	}
	h.release("v", "a")
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %q after the release", nodes)
	}
}

// The same GetSnapshot answering OK with no snapshot in it: the refusal says so rather than
// naming an empty ID as another snapshot's (before the check above, it was read as a snapshot
// not ready).
func TestRestoreCheckedByGetSnapshotAnsweringNoSnapshot(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, func(c *csitest.MemConfig) {
		c.Controller.ListSnapshots = false
		c.Controller.GetSnapshot = true
	})
	h.mem.AddSnapshot(csi.Snapshot{ID: "snap-1", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
	h.faults.Inject(csi.RPCGetSnapshot, csitest.Fault{Answer: func(m proto.Message) { m.(*csipb.GetSnapshotResponse).Snapshot = nil }})
	sv := volume("restored")
	sv.SnapshotID = "snap-1"
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `GetSnapshot for snapshot "snap-1" without a snapshot ID`) {
		t.Fatalf("restore checked by a GetSnapshot answering no snapshot = %v; want a conflict saying it answered without a snapshot ID", err)
	}
}

// A listing started again after ABORTED is a new listing: its page bound counts its own pages,
// not those of the listings the plugin cut short. Before, the bound ran over every page since
// the first, so a plugin listing 600 pages that refused the token of its 500th once failed as
// "more than 1000 pages" (the detach and delete checks then unchecked, `snapshot list` showing
// volctl's records only): the restart that is there for this plugin failed it when its listing
// was long. The restarts stay bounded (maxListRestarts), so every listing is still finite.
func TestListingStartedAgainCountsItsOwnPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const pages, refusedAt = 600, 500
	calls, refused := 0, false
	err := h.e.listPages(h.ctx, &conn{plugin: store.Plugin{ID: "p"}}, csi.RPCListVolumes, maxCheckPages,
		func(_ context.Context, token string) (string, bool, error) {
			calls++
			n := 0
			if token != "" {
				n, _ = strconv.Atoi(token)
			}
			if n == refusedAt && !refused {
				refused = true
				return "", false, status.Error(codes.Aborted, "starting_token is stale")
			}
			if n+1 == pages {
				return "", false, nil
			}
			return strconv.Itoa(n + 1), false, nil
		})
	if err != nil || !refused {
		t.Fatalf("listing of %d pages whose token at page %d was refused once (%d calls, refused: %t): %v; want it listed whole after one restart", pages, refusedAt, calls, refused, err)
	}
	if want := refusedAt + 1 + pages; calls != want {
		t.Errorf("pages asked = %d, want %d (up to the refused one, then the listing again from its first)", calls, want)
	}
}
