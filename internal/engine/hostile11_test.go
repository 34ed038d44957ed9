package engine

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// listResult is what a ListSnapshots run in the background came to.
type listResult struct {
	list SnapshotList
	err  error
}

// listSnapshotsWithin runs ListSnapshots of plugin "mem" and fails the test when it has not
// ended within limit.
func (h *harness) listSnapshotsWithin(limit time.Duration) listResult {
	h.t.Helper()
	done := make(chan listResult, 1)
	go func() {
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		done <- listResult{list, err}
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		h.t.Fatalf("snapshot list still running after %s, %d ListSnapshots pages in", limit, h.faults.Calls(csi.RPCListSnapshots))
		return listResult{}
	}
}

// A plugin whose ListSnapshots answers every page full (as many entries as gRPC's 4 MiB
// carries: a hundred thousand and more) with a fresh next_token, fast: the paging bounds are
// of time (Config.ListTime, 2 min) and of pages (10,000), and every page's snapshots were kept
// until the end, so `volctl snapshot list` grew by tens of MiB a page until the host ran out
// of memory, long before either bound. What a listing holds is bounded (Config.ListMemory):
// past it the plugin's snapshots are shown from volctl's records with a warning naming the
// plugin and the bound, and none is marked missing.
func TestListSnapshotsOfEndlessFullPagesIsBoundedInMemory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
	const bound, maxPages = 2 << 20, 40
	// The time bound far off (a listing at a loaded machine's pace passed 5 s before its
	// memory bound): the pages end by themselves after maxPages, well past the memory bound,
	// so a listing that ignored it ends too, and fails the count below.
	h.open(Config{Now: func() time.Time { return snapshotClock }, ListTime: 2 * time.Minute, ListMemory: bound})
	h.create(volume("db"))
	for _, name := range []string{"a", "b", "c"} {
		h.snapshot(name)
	}
	// Each page carries 5,000 more entries (entries[].snapshot.snapshot_id, a 64-byte ID):
	// about 350 KiB on the wire, more in memory.
	entry := csitest.AppendString(strings.Repeat("s", 64), 1, 1, 2)
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{FirstPage: true, Raw: bytes.Repeat(entry, 5000),
		NextToken: func(start string) string {
			if len(start) >= maxPages {
				return ""
			}
			return start + "."
		}})
	h.faults.ResetCounts()

	r := h.listSnapshotsWithin(60 * time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// 5,000 entries of 64 bytes each hold at least 320 KB: the bound is passed within 7 pages.
	if n := h.faults.Calls(csi.RPCListSnapshots); n > bound/(5000*64)+1 {
		t.Errorf("ListSnapshots sent %d times: the listing held more than its bound of %d bytes", n, bound)
	}
	for _, s := range r.list.Snapshots {
		if s.Missing {
			t.Errorf("snapshot %q (%s) marked missing, while the plugin has it: its listing was cut short", s.ID, s.Name)
		}
	}
	if len(r.list.Snapshots) != 3 {
		t.Errorf("%d snapshots listed, want the 3 recorded", len(r.list.Snapshots))
	}
	want := fmt.Sprintf(`plugin "mem": ListSnapshots: the plugin's listing passed %d bytes`, bound)
	if w := strings.Join(r.list.Warnings, "\n"); !strings.Contains(w, want) || !strings.Contains(w, "showing volctl's records only") {
		t.Errorf("warnings = %q, want one saying %s, showing volctl's records only", r.list.Warnings, want)
	}
}

// A plugin whose next_token is megabytes long (CSI sets no bound on it: it is the plugin's
// own cursor) and comes back to a page given before: the warning saying its listing would
// never end quoted the token whole, megabytes on the terminal and in the JSON answer. It
// names the token by its start and its length.
func TestListSnapshotsRepeatingHugeTokenIsNotQuotedWhole(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
	h.open(Config{Now: func() time.Time { return snapshotClock }, Timeouts: contentTimeouts}) // pages of 1 MiB of token
	h.snapshot("a")
	token := strings.Repeat("t", 1<<20)
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{FirstPage: true, NextToken: func(string) string { return token }})

	r := h.listSnapshotsWithin(60 * time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	w := strings.Join(r.list.Warnings, "\n")
	if !strings.Contains(w, "a second time") {
		t.Fatalf("warnings = %.300q, want one saying the token came a second time", w)
	}
	if len(w) > 8<<10 {
		t.Errorf("the warning is %d bytes long: it quotes the plugin's %d-byte token whole", len(w), len(token))
	}
}

// createKept fails the test unless the create of vol failed with err while the plugin made the
// volume, which the create's intent keeps; it returns the volume, still creating.
func (h *harness) createKept(vol string, err error) VolumeInfo {
	h.t.Helper()
	if err == nil || len(h.mem.Volumes()) != 1 {
		h.t.Fatalf("create: %v, the plugin holding %d volumes; want an error, the plugin holding the one it made", err, len(h.mem.Volumes()))
	}
	v, verr := h.e.Volume(h.ctx, vol)
	if verr != nil || v.State != string(store.VolumeCreating) {
		h.t.Fatalf("volume %s: %v; want the create kept (the plugin made the volume); create error: %v", vol, verr, err)
	}
	return v
}

// A plugin that sends megabytes of metadata with its answer (status details, a dump of its
// request in a trailer): past the 16 MiB of header and trailer lists gRPC's client reads, the
// client closes the connection with an HTTP/2 PROTOCOL_ERROR and drops the answer, its code
// too. That read as the plugin unreachable: "is the plugin running and listening on ...?"
// (it is). The create is kept as after a lost answer (the plugin made the volume here) and
// the error says what the plugin did.
func TestCreateAnsweredWithMetadataPastGRPCLimitSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	// 17 MiB of metadata, encoded and read under -race on a loaded machine, took longer than
	// the harness's 5 s, and each retry as long: neither is what is under test.
	h.open(Config{Timeouts: contentTimeouts, Retry: RetryPolicy{Attempts: 1}})
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Trailer: 17 << 20})
	_, err := h.e.CreateVolume(h.ctx, volume("v"))
	h.createKept("v", err)
	for _, want := range []string{"breaks HTTP/2", "16 MiB", "report it to the plugin's authors", "volctl reconcile"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("create error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "is the plugin running") {
		t.Errorf("create error blames a plugin not running, which answered: %v", err)
	}
	// Once the plugin answers within the limits, reconcile finishes the create, by its name.
	h.faults.Clear()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if v := h.volumeInfo("v"); v.State != string(store.VolumeReady) || len(h.mem.Volumes()) != 1 {
		t.Errorf("after reconcile: volume %s, the plugin holding %d; want it ready, one volume", v.State, len(h.mem.Volumes()))
	}
}

// manyZones is the wire form of n more accessible topologies of a CreateVolume answer
// (volume.accessible_topology[].segments{"zone": "zone-N"}).
func manyZones(n int) []byte {
	var b []byte
	for i := range n {
		seg := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("zone"))
		seg = protowire.AppendBytes(protowire.AppendTag(seg, 2, protowire.BytesType), fmt.Appendf(nil, "zone-%d", i))
		topo := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), seg)
		acc := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), topo)
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), acc)
	}
	return b
}

// A plugin answering CreateVolume with a volume accessible from tens of thousands of
// topologies, none of those asked: the create is refused, rightly, and its error listed every
// one of them (megabytes, as gRPC's 4 MiB holds), on the terminal and in the event log, of
// which 10,000 are kept. Only the plugin's messages were bounded (4 KiB), not the errors volctl
// words from the plugin's data. The error names a few and counts the rest; and no event
// message is kept past a bound, whatever built it.
func TestCreateAnsweredAccessibleFromEverywhereElseIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "elsewhere"}}
	})
	sv := volume("v")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "asked"}}}}
	h.open(Config{Timeouts: contentTimeouts}) // an answer of 20,000 topologies
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Raw: manyZones(20000), Times: 1})
	_, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil || !strings.Contains(err.Error(), "outside the requisite topology {zone=asked}") {
		t.Fatalf("create = %.500v; want it refused, naming the topology asked", err)
	}
	if len(err.Error()) > 4<<10 {
		t.Errorf("the create's error is %d bytes long: %.300s", len(err.Error()), err)
	}
	if !strings.Contains(err.Error(), "more") {
		t.Errorf("the create's error does not say how many topologies it left out: %.1000s", err)
	}
	events, eerr := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "v"})
	if eerr != nil {
		t.Fatal(eerr)
	}
	for _, ev := range events {
		if len(ev.Message) > store.MaxStoredMessage+64 {
			t.Errorf("event %s holds a message of %d bytes: %.300s", ev.Kind, len(ev.Message), ev.Message)
		}
	}
}
