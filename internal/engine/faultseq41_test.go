package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Fault sequences: where the code matrix (TestCodeMatrix) fails one RPC once and follows the
// way back, a sequence runs random claims (some read-only), releases, detaches, expansions,
// deletes (the volume created again once gone), snapshots and their deletes, and reconcile
// passes of two allocs sharing one volume (multi-node-multi-writer: one staging, two targets),
// and restarts of the plugin with STAGE_UNSTAGE_VOLUME, PUBLISH_UNPUBLISH_VOLUME and
// LIST_VOLUMES_PUBLISHED_NODES each on or off and now and then another node ID (keeping what it
// holds), or with another driver answering on its socket until the next restart; and races,
// two of those operations at once, one through a second engine on the same state dir (another
// volctl process: raceCalls), each error naming the volume; each
// operation preceded by up to two faults queued for the volume's RPCs and the listings (a code,
// the plugin acting or not, once or twice), so that a failure meets another's leftovers: a
// release while a claim waits for reconcile, a claim again of an alloc whose release failed, a
// delete of a volume whose detach is owed, a pass whose retry fails differently. One operation
// in five or so is cut short at one of the failpoints it passes, as a kill there would
// (cutShort), and the engine opened anew, as the next volctl, the sequence going on from what
// was committed. After every
// operation, whatever it answered, the store knows of everything the plugin holds (an
// attachment, the staging, each target: matrixCell.agree; the volume itself, and each snapshot
// of it, or a create of one that may have made it), a claim that answered OK is published at a
// target the plugin has, a release that answered OK left no claim of its alloc, a detach that
// answered OK left no claim, a delete while a claim is live is refused having sent no
// DeleteVolume, a delete, snapshot or snapshot delete that answered OK is so on both sides, the
// other driver is sent no volume RPC, no error, event or claim record shows the secret the
// faults echo, and each error names the volume (a snapshot delete's, the snapshot). At the end
// the plugin heals, and a reconcile, the releases and two passes more leave nothing, on either
// side, and report nothing of the volume; the volume is recorded ready and held, or neither,
// and every snapshot left is deleted on both sides.
//
// faultSeqCount sequences run (seeds 1 to faultSeqCount; VOLCTL_FAULT_SEQUENCES=N runs N, and
// a failure names its seed, which VOLCTL_FAULT_SEQUENCE_FIRST=S runs first).
const faultSeqCount = 24

// faultSeqOps is how many operations a sequence runs before the plugin heals.
const faultSeqOps = 12

func TestFaultSequences(t *testing.T) {
	t.Parallel()
	faultSequences(t, 1, faultSeqCount, 2, func(t *testing.T) *harness { return newHarnessConfig(t, nil, matrixConfig()) }, false, false)
}

// TestFaultSequencesTimeouts runs sequences in which a fault may also be a plugin that does
// not answer within volctl's timeout, having done what it was asked or not: volctl cannot know
// which, and must neither forget what the plugin may have made nor take it as done. Its RPC
// timeouts are a second (faultSeqTimeouts), each such fault costing one; its seeds are its own
// (from 200001), and fewer run (VOLCTL_FAULT_SEQUENCES=N runs N/3, at least one).
func TestFaultSequencesTimeouts(t *testing.T) {
	t.Parallel()
	faultSequences(t, 200001, faultSeqCount/3, 2, func(t *testing.T) *harness {
		cfg := matrixConfig()
		cfg.Timeouts = faultSeqTimeouts
		return newHarnessConfig(t, nil, cfg)
	}, false, true)
}

// faultSeqTimeouts are TestFaultSequencesTimeouts's RPC timeouts: long enough for an RPC of a
// loaded machine under -race, short enough that a sequence's few timeouts cost seconds.
var faultSeqTimeouts = csi.Timeouts{Short: time.Second, Long: time.Second}

// faultSeqHangs is how often, one in faultSeqHangs, a fault of TestFaultSequencesTimeouts is
// a plugin answering too late rather than a code.
const faultSeqHangs = 4

// TestFaultSequencesKernel runs sequences with the in-memory plugin mounting for real (root)
// and the kernel's mount table, where the teardowns answered NOT_FOUND (or NodeUnstageVolume
// UNIMPLEMENTED) having undone nothing run too (the cells TestCodeMatrixKernel holds one at a
// time): the mount they leave is volctl's to find and not forget; and no sequence leaves a
// mount under the test's directories. Its seeds are its own (from 100001); fewer run, each
// costing real mounts (VOLCTL_FAULT_SEQUENCES=N runs N/4, at least one).
func TestFaultSequencesKernel(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	faultSequences(t, 100001, faultSeqCount/4, 1, func(t *testing.T) *harness { return kernelHarnessConfig(t, nil, matrixConfig()) }, true, false)
}

// faultSequences runs count sequences from seed first, or as VOLCTL_FAULT_SEQUENCES (divided
// by the ratio of faultSeqCount to count) and VOLCTL_FAULT_SEQUENCE_FIRST say, on harnesses
// harnesses made by harness, the seeds split between them: each runs its sequences one after
// another (a sequence's faults are its volume's, but the injector's counts are the harness's).
// kernel and hangs are runFaultSequence's.
func faultSequences(t *testing.T, first, count, harnesses int, harness func(*testing.T) *harness, kernel, hangs bool) {
	n := count
	if s := os.Getenv("VOLCTL_FAULT_SEQUENCES"); s != "" {
		asked, err := strconv.Atoi(s)
		if err != nil || asked < 1 {
			t.Fatalf("VOLCTL_FAULT_SEQUENCES=%q: want a count of at least 1", s)
		}
		n = max(1, asked*count/faultSeqCount)
	}
	if s := os.Getenv("VOLCTL_FAULT_SEQUENCE_FIRST"); s != "" {
		var err error
		if first, err = strconv.Atoi(s); err != nil {
			t.Fatalf("VOLCTL_FAULT_SEQUENCE_FIRST=%q: want a seed", s)
		}
	}
	for k := range harnesses {
		t.Run(fmt.Sprintf("harness%d", k), func(t *testing.T) {
			t.Parallel()
			h := harness(t)
			for seed := first + k; seed < first+n; seed += harnesses {
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
					parent := h.t
					h.t = t
					defer func() { h.t = parent }()
					runFaultSequence(t, parent, h, uint64(seed), kernel, hangs)
					if !kernel {
						return
					}
					if left := mountsUnder(t, h.dir); len(left) != 0 {
						t.Errorf("seed %d: mounts left under the state dir: %v", seed, left)
					}
				})
			}
		})
	}
}

// faultSeqExpandRPCs are the RPCs an expansion sends.
var faultSeqExpandRPCs = []string{csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume}

// faultSeqDeleteRPCs are the RPCs a delete sends: the teardown of an attachment or staging its
// releases left, the question of the nodes holding the volume, and DeleteVolume.
var faultSeqDeleteRPCs = []string{csi.RPCControllerUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCListVolumes, csi.RPCDeleteVolume}

// faultSeqCreateRPCs are the RPCs a volume's create sends.
var faultSeqCreateRPCs = []string{csi.RPCCreateVolume}

// faultSeqSnapshotRPCs are the RPCs a snapshot's create sends, and its delete's (CreateSnapshot
// to learn the ID of one still being created).
var (
	faultSeqSnapshotRPCs       = []string{csi.RPCCreateSnapshot, csi.RPCListSnapshots}
	faultSeqSnapshotDeleteRPCs = []string{csi.RPCDeleteSnapshot, csi.RPCListSnapshots, csi.RPCCreateSnapshot}
)

// faultSeqOtherDriver is the driver that answers on the plugin's socket now and then, in the
// real one's place.
const faultSeqOtherDriver = "other.csi.example"

// faultSeqCodes are the codes a sequence's faults answer with: each class (retryable, final,
// ignorable on a teardown) and the codes the engine branches on (matrixBranched).
var faultSeqCodes = []codes.Code{codes.Unavailable, codes.Aborted, codes.DeadlineExceeded, codes.Internal,
	codes.FailedPrecondition, codes.NotFound, codes.ResourceExhausted, codes.Unimplemented, codes.AlreadyExists}

// seqFault is one fault queued for a sequence's operation.
type seqFault struct {
	rpc   string
	code  codes.Code
	acted bool
}

// faultSeqAllowed says whether fault f fits a sequence, with faults queued before it for the
// same operation and the plugin listing the nodes a volume is published to or not (list). Left
// out are the plugin's lies the design takes at their word, leaving them to the user, who is
// told: an attachment ControllerPublishVolume made and answered ALREADY_EXISTS for
// (TestCodeMatrix's designKeeps); an attachment ControllerUnpublishVolume answered NOT_FOUND
// for having undone nothing where no listing can show it is still there (the plugin without
// LIST_VOLUMES_PUBLISHED_NODES, or its ListVolumes failing in the same operation:
// unpublishChecked); and, where ListVolumes fails in the same operation, a volume DeleteVolume
// answered NOT_FOUND for having deleted nothing (finishDelete takes the plugin's word, the
// event saying the check could not be had) or FAILED_PRECONDITION for having deleted it
// (refusedButGone: kept ready), and a snapshot DeleteSnapshot answered NOT_FOUND for having
// deleted nothing, or a pending snapshot's CreateSnapshot answered a final error by a plugin
// holding it (finishPendingForDelete: forgotten, unless the listing shows a snapshot of the
// volume volctl records nothing of); and a snapshot CreateSnapshot made and answered a final error for, to its
// first attempt (finishSnapshot: a final error to the only CreateSnapshot sent means nothing
// was made), and any CreateSnapshot answered ALREADY_EXISTS, which volctl takes as the name
// being another source's snapshot: an earlier attempt, or a command cut short, may have made
// the snapshot under the name, and no listing finds a snapshot by its name (its ID is the
// plugin's), so the lie cannot be seen; and a CreateVolume answered a final error by a plugin
// that made the volume, at that attempt or an earlier one of the operation (a final answer
// means nothing was made: finishCreate). With the in-memory plugin making no mounts (not kernel), a teardown
// answered NOT_FOUND (or NodeUnstageVolume UNIMPLEMENTED) by a plugin that undid nothing, whose
// outcome rests on a mount it does not make, is left out too (needsMounts:
// TestFaultSequencesKernel runs those).
func faultSeqAllowed(f seqFault, queued []seqFault, list, kernel bool) bool {
	final := func(f seqFault) bool {
		return f.code != codes.Unavailable && f.code != codes.DeadlineExceeded && f.code != codes.Aborted
	}
	if !kernel && slices.Contains(matrixReleaseRPCs, f.rpc) && needsMounts(f.rpc, f.acted)(matrixAnswer{code: f.code}) != "" {
		return false
	}
	// listedBy is the listing that alone shows a teardown's answer false ("" for none): NOT_FOUND
	// for what the plugin still has, a delete refused for a volume it deleted.
	listedBy := func(f seqFault) string {
		switch {
		case (f.rpc == csi.RPCControllerUnpublishVolume || f.rpc == csi.RPCDeleteVolume) && f.code == codes.NotFound && !f.acted,
			f.rpc == csi.RPCDeleteVolume && f.code == codes.FailedPrecondition && f.acted:
			return csi.RPCListVolumes
		case f.rpc == csi.RPCDeleteSnapshot && f.code == codes.NotFound && !f.acted,
			f.rpc == csi.RPCCreateSnapshot && final(f) && f.code != codes.AlreadyExists:
			// A snapshot delete finishing a pending create refused for good forgets it unless
			// the plugin lists a snapshot of the volume volctl records nothing of
			// (finishPendingForDelete).
			return csi.RPCListSnapshots
		}
		return ""
	}
	// creates says whether a CreateSnapshot fault is queued before f.
	creates := func() bool {
		return slices.ContainsFunc(queued, func(q seqFault) bool { return q.rpc == csi.RPCCreateSnapshot })
	}
	// madeBefore says whether a CreateVolume fault queued before f acted: the plugin holds the
	// volume, and a final answer to a CreateVolume after it is a lie (CSI's CreateVolume answers
	// OK for a volume it made under the name).
	madeBefore := func() bool {
		return slices.ContainsFunc(queued, func(q seqFault) bool { return q.rpc == csi.RPCCreateVolume && q.acted })
	}
	switch {
	case f.rpc == csi.RPCCreateVolume && final(f) && (f.acted || madeBefore()),
		f.rpc == csi.RPCControllerPublishVolume && f.code == codes.AlreadyExists && f.acted,
		f.rpc == csi.RPCCreateSnapshot && f.acted && final(f) && !creates(),
		f.rpc == csi.RPCCreateSnapshot && f.code == codes.AlreadyExists,
		f.rpc == csi.RPCControllerUnpublishVolume && listedBy(f) != "" && !list,
		listedBy(f) != "" && slices.ContainsFunc(queued, func(q seqFault) bool { return q.rpc == listedBy(f) }),
		slices.ContainsFunc(queued, func(q seqFault) bool { return listedBy(q) == f.rpc }):
		return false
	}
	return true
}

// runFaultSequence runs the sequence of seed on h: with kernel, the plugin mounting for real;
// with hangs, a fault may be a plugin answering after volctl's timeout (faultSeqHangs).
func runFaultSequence(t, parent *testing.T, h *harness, seed uint64, kernel, hangs bool) {
	r := rand.New(rand.NewPCG(seed, 41))
	vol := fmt.Sprintf("seq%d", seed)
	h.create(volume(vol, capab(spec.MultiNodeMultiWriter)))
	c := &matrixCell{t: t, h: h, vol: vol, ext: h.externalID(vol)}
	rpcs := slices.Concat(matrixClaimRPCs, matrixReleaseRPCs, faultSeqExpandRPCs, []string{csi.RPCListVolumes, csi.RPCDeleteVolume},
		faultSeqSnapshotRPCs, []string{csi.RPCDeleteSnapshot})
	exts := []string{c.ext} // the volume's external IDs, one per create: its snapshots' sources
	snaps := 0              // snapshots asked for, naming the next
	// track follows the volume's ID: a create cut short and finished by a pass gives it one.
	track := func() {
		if v, ok := recordedVolume(h, vol); ok && v.ExternalID != "" && v.ExternalID != c.ext {
			c.ext = v.ExternalID
			exts = append(exts, c.ext)
		}
	}
	var steps []string           // what ran, for a failure's message
	var running string           // the faults of the operation running, for a failure's message
	size := int64(1 << 20)       // the volume's size asked, which each expand grows
	full := true                 // the plugin serves, as node-1, with every capability the restarts take away
	node := "node-1"             // the node ID the plugin reports
	list := true                 // the plugin has LIST_VOLUMES_PUBLISHED_NODES
	var other *csitest.MemPlugin // the other driver answering on the socket, while one does
	t.Cleanup(func() {           // a sequence that failed leaves the next one the plugin as it found it
		if !full {
			restartWithCaps(parent, h, true, true, true, "node-1")
		}
	})
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (VOLCTL_FAULT_SEQUENCE_FIRST=%d VOLCTL_FAULT_SEQUENCES=1), after\n  %s\n%s%s", seed, seed,
			strings.Join(steps, "\n  "), running, fmt.Sprintf(format, args...))
	}
	// queueFaults clears the plugin's faults and queues up to two at RPCs of pool (a code; the
	// plugin acting or not; once or twice), saying what it queued.
	queueFaults := func(pool []string) (queued []string) {
		h.faults.Clear()
		var faults []seqFault
		for range min(r.IntN(3), 2*len(pool)) {
			rpc := pool[r.IntN(len(pool))]
			code := faultSeqCodes[r.IntN(len(faultSeqCodes))]
			acted := r.IntN(2) == 0
			// A plugin answering too late is a DEADLINE_EXCEEDED to what it may hide, as its
			// own would be: a failing listing, never a lie.
			hang := hangs && r.IntN(faultSeqHangs) == 0
			if hang {
				code = codes.DeadlineExceeded
			}
			// A delete of a volume the plugin no longer holds has nothing left to do: it is
			// judged as one that acted (an earlier delete's answer, a lie, left it recorded).
			f := seqFault{rpc, code, acted}
			if _, held := h.mem.Volume(c.ext); rpc == csi.RPCDeleteVolume && !held {
				f.acted = true
			}
			if !faultSeqAllowed(f, faults, list, kernel) {
				continue
			}
			faults = append(faults, f)
			times := 1 + r.IntN(2)
			h.faults.Inject(rpc, csitest.Fault{Code: code, Message: "backend said no (token " + matrixSecret + ")", Lost: acted, Hang: hang, Times: times,
				When: func(req proto.Message) bool { // the volume's RPCs, and those naming no volume_id: the listings, the snapshots
					f := req.ProtoReflect().Descriptor().Fields().ByName("volume_id")
					return f == nil || req.ProtoReflect().Get(f).String() == c.ext
				}})
			if hang {
				queued = append(queued, fmt.Sprintf("%s hangs past the timeout acted=%v x%d", rpc, acted, times))
			} else {
				queued = append(queued, fmt.Sprintf("%s %s acted=%v x%d", rpc, code, acted, times))
			}
		}
		return queued
	}
	for range faultSeqOps {
		// The operation first, then its faults: mostly at the RPCs it sends (a claim's, a
		// release's; a reconcile pass sends either), now and then at the others' (a pass's
		// leftovers, a rollback's teardown).
		op, alloc := []string{"claim", "claim", "release", "release", "reconcile", "restart", "expand", "detach", "delete", "snapshot", "snapshot delete", "race"}[r.IntN(12)], []string{"a", "b"}[r.IntN(2)]
		_, recorded := recordedVolume(h, vol)
		if op == "delete" && !recorded {
			op = "create" // deleted, by a delete or a pass finishing one: made again
		}
		var snap string // the snapshot a delete deletes: by ID where recorded, else a create's name
		if op == "snapshot delete" {
			if ids, creates := snapshotsKnown(h, vol); len(ids)+len(creates) > 0 {
				known := append(ids, creates...)
				snap = known[r.IntN(len(known))]
			} else {
				op = "snapshot" // none to delete
			}
		}
		pool := rpcs
		switch {
		case op == "create":
			pool = faultSeqCreateRPCs
		case op == "claim" && r.IntN(4) > 0:
			pool = matrixClaimRPCs
		case (op == "release" || op == "detach") && r.IntN(4) > 0:
			pool = matrixReleaseRPCs
		case op == "expand" && r.IntN(4) > 0:
			pool = faultSeqExpandRPCs
		case op == "delete" && r.IntN(4) > 0:
			pool = faultSeqDeleteRPCs
		case op == "snapshot" && r.IntN(4) > 0:
			pool = faultSeqSnapshotRPCs
		case op == "snapshot delete" && r.IntN(4) > 0:
			pool = faultSeqSnapshotDeleteRPCs
		}
		queued := queueFaults(pool)
		var (
			err     error
			rep     ReconcileReport
			claimed = len(h.liveClaims(vol)) > 0
			deletes = h.mem.CallCount(csi.RPCDeleteVolume)
		)
		// Now and then the operation is cut short at one of the failpoints it passes, as a
		// kill there would (cutShort), and the engine opened anew, as the next volctl.
		at := 0
		if op != "race" && r.IntN(5) == 0 {
			at = 1 + r.IntN(4)
		}
		var race [2]seqCall // a race's two operations, drawn here: the draws are this goroutine's
		if op == "race" {
			for i := range race {
				race[i] = drawSeqCall(r, vol, &size, &snaps)
			}
		}
		what := op // the operation's words, for a failure's message
		running = fmt.Sprintf("in the operation with faults [%s]: ", strings.Join(queued, "; "))
		crashed := cutShort(h, at, func() {
			switch op {
			case "claim", "release", "reconcile", "expand", "detach", "delete":
				// A delete that answered OK is followed by a create (below).
				sc := seqOp(r, op, alloc, vol, &size, &snaps)
				what = sc.what
				rep, err = sc.call(h.e)
			case "create":
				// Refused while another driver answers on the socket.
				if _, err = h.e.CreateVolume(h.ctx, volume(vol, capab(spec.MultiNodeMultiWriter))); err == nil {
					c.ext, size = h.externalID(vol), 1<<20
					exts = append(exts, c.ext)
				}
			case "snapshot":
				snaps++
				name := fmt.Sprintf("%s-s%d", vol, snaps)
				what = "snapshot " + name
				var sn SnapshotInfo
				if sn, err = h.e.CreateSnapshot(h.ctx, vol, name, nil); err == nil {
					if msg := snapshotHeld(h, sn.ID, true); msg != "" {
						fail("the snapshot answered OK: %s", msg)
					}
				}
			case "race":
				// Two volctl processes at once: this one and another on the same state dir, each
				// running one of the operations above, the queued faults meeting whichever comes
				// first. Each error must name the volume and hide the secret; what each answered
				// OK is not checked (the other may have undone it meanwhile).
				what = "race " + race[0].what + " | " + race[1].what
				errs := raceCalls(h, race)
				for i, e := range errs {
					if e != nil && race[i].what != "reconcile" && !strings.Contains(e.Error(), strconv.Quote(vol)) {
						fail("%s, racing %s: the error does not name volume %q: %.400s", race[i].what, race[1-i].what, vol, e)
					}
				}
				err = errors.Join(errs[0], errs[1])
			case "snapshot delete":
				what = "snapshot delete " + snap
				if _, err = h.e.DeleteSnapshotNoted(h.ctx, "mem", snap, nil); err == nil {
					if msg := snapshotHeld(h, snap, false); msg != "" {
						fail("the snapshot delete answered OK: %s", msg)
					}
				}
			default:
				// The plugin restarts with STAGE_UNSTAGE_VOLUME, PUBLISH_UNPUBLISH_VOLUME and
				// LIST_VOLUMES_PUBLISHED_NODES each on or off (the last mostly on), now and then
				// reporting another node ID, keeping what it holds; or another driver answers on
				// its socket until the next restart, the plugin's state kept aside. Then a
				// reconcile pass meets it.
				if r.IntN(6) == 0 {
					what = "restart (another driver on the socket), reconcile"
					other = serveOtherDriver(parent, h)
					full = false
				} else {
					var stage, attach bool
					stage, attach, list = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(3) > 0
					if r.IntN(4) == 0 {
						node = map[string]string{"node-1": "node-2", "node-2": "node-1"}[node]
					}
					what = fmt.Sprintf("restart (stage %v, attach %v, list published %v, node %s), reconcile", stage, attach, list, node)
					restartWithCaps(parent, h, stage, attach, list, node)
					other, full = nil, stage && attach && list && node == "node-1"
				}
				rep, err = h.e.Reconcile(h.ctx)
			}
		})
		if crashed != "" {
			err = fmt.Errorf("%w at %s", errCutShort, crashed)
			reopen(parent, h)
		}
		track()
		steps = append(steps, fmt.Sprintf("%s [faults: %s] -> %v", what, strings.Join(queued, "; "), shortErr(err)))
		running = ""
		if err != nil && strings.Contains(err.Error(), matrixSecret) {
			fail("the error shows the secret: %.400s", err)
		}
		named := strconv.Quote(vol) // what an error names: the volume, or the snapshot a delete deletes
		if snap != "" {
			named = strconv.Quote(snap)
		}
		if err != nil && crashed == "" && !strings.HasPrefix(op, "reconcile") && !strings.HasPrefix(op, "restart") && !strings.HasPrefix(op, "race") && !strings.Contains(err.Error(), named) {
			fail("the error does not name %s: %.400s", named, err)
		}
		for _, p := range rep.Problems {
			if strings.Contains(p.Message, matrixSecret) || p.VolumeID == vol && !strings.Contains(p.Message, strconv.Quote(vol)) {
				fail("reconcile's problem shows the secret or does not name volume %q: %.400s", vol, p.Message)
			}
		}
		if err := c.agree(true); err != nil {
			fail("the store and the plugin disagree: %v", err)
		}
		if msg := heldUnrecorded(h, vol, c.ext); msg != "" {
			fail("%s", msg)
		}
		if msg := volumesUntracked(h); msg != "" {
			fail("%s", msg)
		}
		if msg := snapshotsUntracked(h, vol, exts); msg != "" {
			fail("%s", msg)
		}
		if other != nil {
			if got := volumeRPCs(other); len(got) > 0 {
				fail("driver %s, answering on the plugin's socket, was sent %v", faultSeqOtherDriver, got)
			}
		}
		claims := h.liveClaims(vol)
		mine := slices.IndexFunc(claims, func(cl store.Claim) bool { return cl.Alloc == alloc })
		switch {
		case err == nil && strings.HasPrefix(op, "claim"):
			if mine < 0 || claims[mine].TargetPath == "" || !slices.Contains(h.mem.Targets(c.ext), claims[mine].TargetPath) {
				fail("the claim answered OK; its alloc's record %+v, the plugin's targets %v", claims, h.mem.Targets(c.ext))
			}
		case err == nil && strings.HasPrefix(op, "release"):
			if mine >= 0 {
				fail("the release answered OK; a claim of %q is left: %+v", alloc, claims[mine])
			}
		case err == nil && op == "detach":
			if len(claims) != 0 {
				fail("the detach answered OK; claims are left: %+v", claims)
			}
		case op == "delete" && claimed:
			if err == nil || h.mem.CallCount(csi.RPCDeleteVolume) != deletes {
				fail("a delete while claims are live answered %v, having sent DeleteVolume %d time(s)", err, h.mem.CallCount(csi.RPCDeleteVolume)-deletes)
			}
		case op == "delete" && err != nil && crashed == "":
			if _, ok := recordedVolume(h, vol); !ok {
				fail("the delete failed (%v), and the store no longer records the volume", err)
			}
		case op == "delete" && err == nil:
			if _, ok := h.mem.Volume(c.ext); ok {
				fail("the delete answered OK; the plugin still holds %s", c.ext)
			}
			if v, ok := recordedVolume(h, vol); ok {
				fail("the delete answered OK; the store still records it: %+v", v)
			}
			// Created again, with faults of its own: a create that fails leaves the volume
			// absent or being created, which the next operations meet.
			queued := queueFaults(faultSeqCreateRPCs)
			_, err := h.e.CreateVolume(h.ctx, volume(vol, capab(spec.MultiNodeMultiWriter)))
			if err == nil {
				c.ext, size = h.externalID(vol), 1<<20
				exts = append(exts, c.ext)
			}
			steps[len(steps)-1] += fmt.Sprintf(" (created again [faults: %s] -> %v)", strings.Join(queued, "; "), shortErr(err))
			if err != nil && (strings.Contains(err.Error(), matrixSecret) || !strings.Contains(err.Error(), strconv.Quote(vol))) {
				fail("the create's error shows the secret or does not name volume %q: %.400s", vol, err)
			}
		}
		if msg := secretShown(h, vol); msg != "" {
			fail("%s", msg)
		}
	}
	// The plugin heals, and comes back as node-1 with both capabilities if a restart changed
	// either.
	h.faults.Clear()
	if !full {
		restartWithCaps(parent, h, true, true, true, "node-1")
		other, full, list = nil, true, true
		steps = append(steps, "restart (stage true, attach true, list published true, node node-1)")
	}
	// The pass may report what it could not finish before the plugin healed and had to roll
	// back (a claim refused for another node's attachment); a release of each claim left must
	// pass, and a pass after it, and one for an owed detach, report nothing of the volume.
	rep, _ := h.e.Reconcile(h.ctx)
	track()
	for _, p := range rep.Problems {
		if strings.Contains(p.Message, matrixSecret) || p.VolumeID == vol && !strings.Contains(p.Message, strconv.Quote(vol)) {
			fail("reconcile's problem after the plugin healed shows the secret or does not name volume %q: %.400s", vol, p.Message)
		}
	}
	for _, cl := range h.liveClaims(vol) {
		if _, err := h.e.Release(h.ctx, vol, cl.Alloc); err != nil {
			fail("release of %q after the plugin healed: %v", cl.Alloc, err)
		}
	}
	for range 2 {
		rep, _ := h.e.Reconcile(h.ctx)
		if i := slices.IndexFunc(rep.Problems, func(p ReconcileAction) bool { return p.VolumeID == vol }); i >= 0 {
			fail("reconcile after the plugin healed and the claims were released: %+v", rep.Problems[i])
		}
	}
	if err := c.empty(); err != nil {
		fail("after the plugin healed and the claims were released: %v", err)
	}
	// Every snapshot the passes left recorded is deleted, and the plugin keeps none of them.
	ids, creates := snapshotsKnown(h, vol)
	for _, sn := range append(ids, creates...) {
		if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", sn, nil); err != nil {
			fail("snapshot delete of %s after the plugin healed: %v", sn, err)
		}
	}
	if msg := snapshotsUntracked(h, vol, exts); msg != "" {
		fail("after the plugin healed and the snapshots were deleted: %s", msg)
	}
	for _, sn := range h.mem.Snapshots() {
		if slices.Contains(exts, sn.SourceVolumeID) {
			fail("after the plugin healed and the snapshots were deleted: the plugin still has snapshot %s of %s", sn.ID, sn.SourceVolumeID)
		}
	}
	// A delete cut short is finished by the passes: the volume is recorded ready and the plugin
	// holds it, or neither.
	if msg := heldUnrecorded(h, vol, c.ext); msg != "" {
		fail("after the plugin healed: %s", msg)
	}
	if msg := volumesUntracked(h); msg != "" {
		fail("after the plugin healed: %s", msg)
	}
	if v, ok := recordedVolume(h, vol); ok {
		if _, held := h.mem.Volume(c.ext); v.State != store.VolumeReady || !held {
			fail("after the plugin healed: the volume recorded %s, the plugin holding it: %v", v.State, held)
		}
	}
	if msg := secretShown(h, vol); msg != "" {
		fail("%s", msg)
	}
}

// restartWithCaps restarts the harness's plugin keeping what it holds, with
// STAGE_UNSTAGE_VOLUME, PUBLISH_UNPUBLISH_VOLUME and LIST_VOLUMES_PUBLISHED_NODES as given,
// reporting node ID node; where another driver answered on its socket (serveOtherDriver), the
// plugin takes it back. Its server is the harness's (parent's), which outlives the sequence
// that restarted it.
func restartWithCaps(parent *testing.T, h *harness, stage, attach, list bool, node string) {
	asParent(parent, h, func() {
		h.restartKeepingState(func(c *csitest.MemConfig) {
			c.Node.StageUnstageVolume, c.Controller.PublishUnpublishVolume, c.Controller.ListVolumesPublishedNodes, c.NodeID = stage, attach, list, node
		})
	})
}

// asParent runs fn with the harness's test its parent's: what fn serves or opens is then torn
// down with the harness, not with the sequence that ran fn.
func asParent(parent *testing.T, h *harness, fn func()) {
	seq := h.t
	h.t = parent
	defer func() { h.t = seq }()
	fn()
}

// serveOtherDriver stops the harness's plugin, its state kept for restartWithCaps, and serves
// driver faultSeqOtherDriver, holding nothing, on its socket: a plugin of another driver
// started there while it was down.
func serveOtherDriver(parent *testing.T, h *harness) *csitest.MemPlugin {
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.Name, cfg.NodeID = faultSeqOtherDriver, "node-1"
	other := csitest.NewMemPlugin(cfg)
	h.stopServe = csitest.ServeAt(parent, h.socket, csitest.WithServer(other))
	return other
}

// seqCall is one of a sequence's operations (seqOp): its words, and its call through an
// engine.
type seqCall struct {
	what string
	call func(e *Engine) (ReconcileReport, error)
}

// seqOp is operation op of a sequence on volume vol, for alloc where it takes one: a claim (one
// in three read-only), a release, a detach of every claim (as `volume detach`, not forced,
// does), an expansion (by a MiB, size: the volume is made at 1 MiB, and the node's part is sent
// at once where a claim has it staged, else owed to the next publish), a snapshot (counted by
// snaps, for its name), a delete (as `volume delete` does: refused while a claim is live) or a
// reconcile pass.
func seqOp(r *rand.Rand, op, alloc, vol string, size *int64, snaps *int) seqCall {
	ctx := context.Background()
	done := func(err error) (ReconcileReport, error) { return ReconcileReport{}, err }
	switch op {
	case "claim":
		ro := r.IntN(3) == 0
		what := "claim " + alloc
		if ro {
			what = "claim read-only " + alloc
		}
		return seqCall{what, func(e *Engine) (ReconcileReport, error) {
			_, err := e.Claim(ctx, ClaimRequest{VolumeID: vol, Alloc: alloc, ReadOnly: ro})
			return done(err)
		}}
	case "release":
		return seqCall{"release " + alloc, func(e *Engine) (ReconcileReport, error) { _, err := e.Release(ctx, vol, alloc); return done(err) }}
	case "detach":
		return seqCall{"detach", func(e *Engine) (ReconcileReport, error) { _, err := e.Detach(ctx, vol, false); return done(err) }}
	case "expand":
		*size += 1 << 20
		to := *size
		return seqCall{fmt.Sprintf("expand to %d MiB", to>>20), func(e *Engine) (ReconcileReport, error) { _, err := e.ExpandVolume(ctx, vol, to, 0); return done(err) }}
	case "snapshot":
		*snaps++
		name := fmt.Sprintf("%s-s%d", vol, *snaps)
		return seqCall{"snapshot " + name, func(e *Engine) (ReconcileReport, error) {
			_, err := e.CreateSnapshot(ctx, vol, name, nil)
			return done(err)
		}}
	case "delete":
		return seqCall{"delete", func(e *Engine) (ReconcileReport, error) { return done(e.DeleteVolume(ctx, vol)) }}
	default:
		return seqCall{"reconcile", func(e *Engine) (ReconcileReport, error) { return e.Reconcile(ctx) }}
	}
}

// drawSeqCall draws one of a race's operations on volume vol (seqOp's).
func drawSeqCall(r *rand.Rand, vol string, size *int64, snaps *int) seqCall {
	alloc := []string{"a", "b"}[r.IntN(2)]
	return seqOp(r, []string{"claim", "release", "detach", "expand", "snapshot", "delete", "reconcile"}[r.IntN(7)], alloc, vol, size, snaps)
}

// raceCalls runs calls at once, the first through the harness's engine, the second through
// another opened on its state dir as another volctl process would be (its own lock files,
// connections and store handle), closed once both returned; it returns their errors.
func raceCalls(h *harness, calls [2]seqCall) [2]error {
	h.t.Helper()
	other, err := Open(h.ctx, h.e.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	defer other.Close()
	var (
		errs [2]error
		wg   sync.WaitGroup
	)
	for i, e := range []*Engine{h.e, other} {
		wg.Go(func() { _, errs[i] = calls[i].call(e) })
	}
	wg.Wait()
	return errs
}

// errCutShort is the error of an operation cutShort cut short: it answered nothing.
var errCutShort = errors.New("cut short")

// seqCrash is the panic cutShort cuts an operation short with.
type seqCrash struct{ at string }

// cutShort runs op, cut short at the at-th failpoint its goroutine passes (none, for at 0) as a
// kill there would: the engine's failpoint hook panics, and the panic unwinds the operation,
// its transactions rolled back and its locks let go, as the kernel lets a killed process's go;
// what it committed stays, and nothing after it runs (the failpoints sit after commits, and
// after RPCs before their answer is committed). Failpoints another goroutine passes (a pass's
// restores run beside each other) are not counted. It returns the failpoint's name, "" where
// op ran to its end. The caller opens the engine anew, as the next volctl process.
func cutShort(h *harness, at int, op func()) (crashed string) {
	n := 0
	return cutShortWhen(h, func(string) bool { n++; return n == at }, op)
}

// cutShortAt is cutShort at the nth time (1-based) op's goroutine passes failpoint name; it
// reports whether op was cut short.
func cutShortAt(h *harness, name string, nth int, op func()) bool {
	n := 0
	return cutShortWhen(h, func(got string) bool {
		if got != name {
			return false
		}
		n++
		return n == nth
	}, op) != ""
}

// cutShortWhen is cutShort at the first failpoint op's goroutine passes for which cut says so.
func cutShortWhen(h *harness, cut func(name string) bool, op func()) (crashed string) {
	self := goroutineID()
	h.e.failpointHook = func(name string) {
		if goroutineID() == self && cut(name) {
			panic(seqCrash{name})
		}
	}
	e := h.e
	defer func() {
		e.failpointHook = nil
		if p := recover(); p != nil {
			c, ok := p.(seqCrash)
			if !ok {
				panic(p)
			}
			crashed = c.at
		}
	}()
	op()
	return ""
}

// reopen opens the harness's engine anew, as the next volctl process, on its state dir; the
// engine is the harness's (parent's), which outlives the sequence that opened it.
func reopen(parent *testing.T, h *harness) {
	asParent(parent, h, func() { h.open(h.e.cfg) })
}

// goroutineID is the calling goroutine's number, as runtime.Stack prints it.
func goroutineID() string {
	buf := make([]byte, 64)
	return strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1]
}

// snapshotsKnown are the snapshots of volume vol the store records (their IDs), and those it
// records a create of (their names: a delete by name finishes the create first).
func snapshotsKnown(h *harness, vol string) (ids, creates []string) {
	h.t.Helper()
	err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		sns, err := tx.Snapshots().List("mem")
		if err != nil {
			return err
		}
		for _, sn := range sns {
			if sn.SourceVolumeID == vol {
				ids = append(ids, sn.SnapshotID)
			}
		}
		scs, err := tx.Snapshots().ListCreates("mem")
		for _, sc := range scs {
			if sc.SourceVolumeID == vol {
				creates = append(creates, sc.Name)
			}
		}
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return ids, creates
}

// snapshotHeld says how the store's record of snapshot id and the plugin's disagree with want
// (both have it, or neither), if they do.
func snapshotHeld(h *harness, id string, want bool) string {
	h.t.Helper()
	recorded := storeFinds(h, func(tx *store.Tx) error {
		_, err := tx.Snapshots().Get("mem", id)
		return err
	})
	held := slices.ContainsFunc(h.mem.Snapshots(), func(sn csi.Snapshot) bool { return sn.ID == id })
	if recorded != want || held != want {
		return fmt.Sprintf("snapshot %s recorded: %v, the plugin holding it: %v; want both %v", id, recorded, held, want)
	}
	return ""
}

// snapshotsUntracked says which of the plugin's snapshots of volume vol (of its external IDs,
// exts) the store knows nothing of, if any does: not recorded, and no create of the volume's
// recorded that may have made it.
func snapshotsUntracked(h *harness, vol string, exts []string) string {
	h.t.Helper()
	ids, creates := snapshotsKnown(h, vol)
	for _, sn := range h.mem.Snapshots() {
		if slices.Contains(exts, sn.SourceVolumeID) && !slices.Contains(ids, sn.ID) && len(creates) == 0 {
			return fmt.Sprintf("the plugin has snapshot %s of volume %q (%s); the store records nothing of it (%v)", sn.ID, vol, sn.SourceVolumeID, ids)
		}
	}
	return ""
}

// recordedVolume is volume vol's record, if the store has one.
func recordedVolume(h *harness, vol string) (store.Volume, bool) {
	h.t.Helper()
	var v store.Volume
	err := h.e.store.View(h.ctx, func(tx *store.Tx) (err error) { v, err = tx.Volumes().Get(vol); return err })
	if errors.Is(err, store.ErrNotFound) {
		return v, false
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return v, true
}

// volumesUntracked says which volume the plugin holds that the store records nothing of: by its
// ID, or as a create under its name that may have made it, if one does.
func volumesUntracked(h *harness) string {
	h.t.Helper()
	var vols []store.Volume
	err := h.e.store.View(h.ctx, func(tx *store.Tx) (err error) { vols, err = tx.Volumes().List(store.VolumeFilter{}); return err })
	if err != nil {
		h.t.Fatal(err)
	}
	known := map[string]bool{}
	for _, v := range vols {
		known["id "+v.ExternalID] = v.ExternalID != ""
		known["name "+v.CSIName] = v.State == store.VolumeCreating
	}
	for id, name := range h.mem.VolumeNames() {
		if !known["id "+id] && !known["name "+name] {
			return fmt.Sprintf("the plugin holds volume %s (name %q), which the store records nothing of, nor a create under its name", id, name)
		}
	}
	return ""
}

// heldUnrecorded says how the plugin holds volume vol, external ID ext, that the store no
// longer records, if it does: storage left behind that nothing tracks.
func heldUnrecorded(h *harness, vol, ext string) string {
	h.t.Helper()
	if _, ok := recordedVolume(h, vol); ok {
		return ""
	}
	if _, held := h.mem.Volume(ext); held {
		return fmt.Sprintf("the store no longer records volume %q; the plugin still holds it, as %s", vol, ext)
	}
	return ""
}

// shortErr is err's message cut for a sequence's record of its steps.
func shortErr(err error) string {
	if err == nil {
		return "OK"
	}
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// secretShown says where the volume's events or its claims' records show matrixSecret, if they do.
func secretShown(h *harness, vol string) string {
	h.t.Helper()
	evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: vol})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Message, matrixSecret) {
			return fmt.Sprintf("event %s shows the secret: %.300s", ev.Kind, ev.Message)
		}
	}
	for _, cl := range h.liveClaims(vol) {
		if strings.Contains(cl.LastError, matrixSecret) {
			return fmt.Sprintf("the claim of %q shows the secret: %.300s", cl.Alloc, cl.LastError)
		}
	}
	return ""
}
