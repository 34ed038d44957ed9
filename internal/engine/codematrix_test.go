package engine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The code matrix: every RPC of the claim and release paths, answered with every gRPC code (and
// a number no one defines, a status with details, a message of control characters, a message of
// 1 MiB), by a plugin that did what it was asked before answering (Fault.Lost) or did not. Each
// cell drives a claim, reconcile passes with the plugin still failing, then the plugin healed,
// a reconcile and a release, and holds after every step: the store and the plugin agree on
// what the plugin holds; the error names the volume, the plugin, the RPC and the code and says
// what to do, retried only for the retryable codes; one event per failure; no secret anywhere;
// and in the end the plugin holds nothing and no claim is left. A failure names its cell.
//
// A row (an RPC, the plugin acting or not) is one harness, each of its cells a volume of its
// own, the fault applying to that volume's requests only: an engine opened per cell cost a
// second of CPU under -race (its statements prepared), the whole matrix minutes.

// matrixConfig is the engine's config of the matrix's harnesses, whose cells must not rest on
// the machine's speed. Its clock (Config.Now, by which retry measures an attempt and stops
// retrying one that failed slowly: slowFailure) reads a nanosecond later at each reading, so
// no attempt is slow however loaded the machine, and a retryable cell is sent every attempt
// (sent). Its RPC timeouts are contentTimeouts: no cell answers late, and a megabyte's answer
// decoded under -race on a loaded machine must not run into the deadline instead.
func matrixConfig() Config {
	start := time.Now()
	var readings atomic.Int64
	return Config{Timeouts: contentTimeouts, Now: func() time.Time { return start.Add(time.Duration(readings.Add(1))) }}
}

// matrixAnswer is one way a plugin answers an RPC it fails.
type matrixAnswer struct {
	name    string
	code    codes.Code
	message string
	details []string
}

// matrixSecret is the volume's secret (volume()'s), which every failing answer echoes.
const matrixSecret = "s3cr3t"

func matrixAnswers() []matrixAnswer {
	var out []matrixAnswer
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		out = append(out, matrixAnswer{name: c.String(), code: c, message: "backend said no (token " + matrixSecret + ")"})
	}
	return append(out,
		matrixAnswer{name: "Code99", code: codes.Code(99), message: "backend said no (token " + matrixSecret + ")"},
		matrixAnswer{name: "InternalWithDetails", code: codes.Internal, message: "see details",
			details: []string{"request dump: secrets={token: " + matrixSecret + "}"}},
		matrixAnswer{name: "InternalControlChars", code: codes.Internal, message: "first\n\x1b[2J\x1b[31mred\x00\r\u009b " + matrixSecret},
		// Of a final code: a megabyte scrubbed and checked once, not at each of a retryable
		// code's attempts; what volctl makes of the message does not rest on its code.
		matrixAnswer{name: "Internal1MiB", code: codes.Internal, message: matrixSecret + " " + strings.Repeat("x", 1<<20)},
	)
}

// form says the answer is one of a message's forms (details, control characters, a megabyte),
// not a code's plain answer.
func (a matrixAnswer) form() bool {
	return a.name != a.code.String() && a.code <= codes.Unauthenticated
}

// matrixBranched are the codes the claim and release paths act on by the code itself, besides
// its class: NOT_FOUND, UNIMPLEMENTED and FAILED_PRECONDITION (checkAnswerer asks who answered;
// unstage and reattach read them), ALREADY_EXISTS (attachedOtherwise, stillStaged), UNAVAILABLE
// (PluginNotAnswering), RESOURCE_EXHAUSTED (its class the RPC's); with INTERNAL, a final
// code's, and a number no one defines. The other codes are their class's and their hint's,
// the same on every RPC: DEADLINE_EXCEEDED among them, a plugin's answer, which is no timeout
// of volctl's (csi.IsTimeout: the deadline reached).
var matrixBranched = []codes.Code{codes.NotFound, codes.Unimplemented, codes.FailedPrecondition, codes.AlreadyExists,
	codes.Unavailable, codes.ResourceExhausted, codes.Internal, codes.Code(99)}

// matrixCells says which of a row's answers TestCodeMatrix runs, and why not the others: every
// code the engine acts on by itself (matrixBranched), the plugin acting or not; each other
// code, and each message's form, the plugin not acting, at one claim RPC and one release RPC,
// turn about (the code's handling is its class's, the message's the client's, on every RPC:
// run at every RPC, they cost the matrix half its time and tested one path again).
func matrixCells(answers []matrixAnswer, rpc string, acted bool) func(matrixAnswer) string {
	mounts := needsMounts(rpc, acted)
	return func(a matrixAnswer) string {
		if why := mounts(a); why != "" {
			return why
		}
		if a.form() && acted {
			return "the message's form is the same answer's whether the plugin acted or not: run with acted=false"
		}
		if !a.form() && slices.Contains(matrixBranched, a.code) {
			return ""
		}
		if acted {
			return "the engine acts on this code as on its class's, whose cells of this row run with the plugin acting"
		}
		k := slices.IndexFunc(answers, func(b matrixAnswer) bool { return b.name == a.name })
		claim, release := matrixClaimRPCs[k%len(matrixClaimRPCs)], matrixReleaseRPCs[k%len(matrixReleaseRPCs)]
		if rpc == claim || rpc == release {
			return ""
		}
		return fmt.Sprintf("handled as on every RPC: run at %s and %s", claim, release)
	}
}

// matrixClass is what the design says of a code answered to rpc: retryable, ignorable (done)
// or final (docs/architecture.md, "The rules, in one place": Error classes).
func matrixClass(rpc string, code codes.Code) string {
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return "retryable"
	case codes.ResourceExhausted:
		if rpc == csi.RPCControllerPublishVolume {
			return "final" // "max volumes attached": the caller must address it first
		}
		return "retryable"
	case codes.Unimplemented:
		switch rpc {
		case csi.RPCNodeUnstageVolume, csi.RPCNodeUnpublishVolume:
			// Though it advertises STAGE_UNSTAGE_VOLUME, or is a node plugin, which CSI has
			// implement NodeUnpublishVolume: the mount table decides (unstage,
			// checkUnstageable; unpublishTarget, checkUnpublishable), nothing mounted being
			// done, as NOT_FOUND is.
			return "ignorable"
		case csi.RPCControllerUnpublishVolume:
			// Though it advertises PUBLISH_UNPUBLISH_VOLUME: the plugin's listing decides
			// (unpublishChecked, listsUnpublished), published nowhere being done.
			return "ignorable"
		}
	case codes.FailedPrecondition:
		if rpc == csi.RPCControllerUnpublishVolume {
			// None of CSI's answers to it: the plugin's listing decides, as for UNIMPLEMENTED.
			return "ignorable"
		}
	case codes.NotFound:
		if rpc == csi.RPCNodeUnpublishVolume || rpc == csi.RPCNodeUnstageVolume || rpc == csi.RPCControllerUnpublishVolume {
			return "ignorable"
		}
	}
	return "final"
}

// matrixCodeName is the code as volctl's errors and events write it.
func matrixCodeName(c codes.Code) string { return c.String() }

// matrixCell is one cell of the matrix: its row's harness, its own volume, the RPC failed and
// how.
type matrixCell struct {
	t     *testing.T
	row   *testing.T // the row's, which outlives the cell (what the cell serves anew)
	h     *harness
	vol   string
	ext   string
	rpc   string
	a     matrixAnswer
	acted bool
	class string
}

// matrixRow runs the cells of one RPC, the plugin acting or not, on one harness; skip says
// which answers' cells to skip, and why ("" runs them).
func matrixRow(t *testing.T, h *harness, rpc string, answers []matrixAnswer, acted bool, run func(*matrixCell), skip func(matrixAnswer) string) {
	for i, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			if why := skip(a); why != "" {
				t.Skip(why)
			}
			parent := h.t
			h.t = t
			defer func() { h.t = parent }()
			vol := fmt.Sprintf("v%d", i)
			h.create(volume(vol))
			c := &matrixCell{t: t, row: parent, h: h, vol: vol, ext: h.externalID(vol), rpc: rpc, a: a, acted: acted, class: matrixClass(rpc, a.code)}
			h.faults.ResetCounts()
			run(c)
			h.faults.Clear()
		})
	}
}

// fault makes the cell's RPC fail for its volume's requests only.
func (c *matrixCell) fault() {
	c.h.faults.Inject(c.rpc, csitest.Fault{Code: c.a.code, Message: c.a.message, Details: c.a.details, Lost: c.acted,
		When: func(req proto.Message) bool {
			f := req.ProtoReflect().Descriptor().Fields().ByName("volume_id")
			return f != nil && req.ProtoReflect().Get(f).String() == c.ext
		}})
}

// agree says how the store and the plugin disagree about the cell's volume, if they do:
// everything the plugin holds the store knows of (an attachment, a staging, a target some
// claim may have sent NodePublishVolume to), and nothing the store records as done the plugin
// dropped (a published claim's target, a staging recorded staged). After an answer that was an
// error although the plugin acted (its answer lost, or a lie), the store may still record what
// the plugin undid: volctl cannot know, and sends the teardown again, which the end of each
// cell holds to; lenient leaves that direction out.
func (c *matrixCell) agree(lenient bool) error {
	h := c.h
	h.t.Helper()
	st, ok := h.staging(c.vol)
	claims := h.liveClaims(c.vol)
	if nodes := h.mem.PublishedNodes(c.ext); len(nodes) > 0 && !(ok && st.ControllerPublished) {
		return fmt.Errorf("the plugin has the volume attached to %v; the store records no attachment (%+v)", nodes, st)
	}
	path, staged := h.mem.StagingPath(c.ext)
	if staged && !(ok && st.StagingPath == path) {
		return fmt.Errorf("the plugin has the volume staged at %s; the store records no staging there (%+v)", path, st)
	}
	if ok && st.Staged && !staged && !lenient {
		return fmt.Errorf("the store records the volume staged at %s; the plugin does not have it staged", st.StagingPath)
	}
	targets := h.mem.Targets(c.ext)
	for _, tgt := range targets {
		if !slices.ContainsFunc(claims, func(cl store.Claim) bool { return cl.TargetPath == tgt && cl.Target != store.TargetUnsent }) {
			return fmt.Errorf("the plugin has the volume published at %s; no claim records a NodePublishVolume there (%+v)", tgt, claims)
		}
	}
	for _, cl := range claims {
		if cl.State == store.ClaimPublished && !slices.Contains(targets, cl.TargetPath) && !lenient {
			return fmt.Errorf("claim of %q recorded published at %s; the plugin has no target there (%v)", cl.Alloc, cl.TargetPath, targets)
		}
	}
	return nil
}

// empty says what is left of the cell's volume after its release, if anything is.
func (c *matrixCell) empty() error {
	h := c.h
	h.t.Helper()
	if cls := h.liveClaims(c.vol); len(cls) != 0 {
		return fmt.Errorf("claims left: %+v", cls)
	}
	if nodes := h.mem.PublishedNodes(c.ext); len(nodes) != 0 {
		return fmt.Errorf("the plugin still has the volume attached to %v", nodes)
	}
	if p, ok := h.mem.StagingPath(c.ext); ok {
		return fmt.Errorf("the plugin still has the volume staged at %s", p)
	}
	if tgts := h.mem.Targets(c.ext); len(tgts) != 0 {
		return fmt.Errorf("the plugin still has the volume published at %v", tgts)
	}
	if st, ok := h.staging(c.vol); ok && (st.ControllerPublished || st.Staged) {
		return fmt.Errorf("the store still records the volume attached or staged: %+v", st)
	}
	return nil
}

// failureEvents is the events recording a failure of the cell's RPC with its code on its volume.
func (c *matrixCell) failureEvents() []EventInfo {
	c.h.t.Helper()
	evs, err := c.h.e.Events(c.h.ctx, 0, EventFilter{VolumeID: c.vol})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []EventInfo
	for _, ev := range evs {
		if ev.RPC == c.rpc && ev.Code == c.a.code.String() {
			out = append(out, ev)
		}
	}
	return out
}

// noSecret fails the cell if the secret is in an error, the volume's events or its claims'
// records.
func (c *matrixCell) noSecret(step string, errs ...error) {
	h := c.h
	h.t.Helper()
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), matrixSecret) {
			c.t.Errorf("%s: the error shows the secret: %.300s", step, err)
		}
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: c.vol})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Message, matrixSecret) {
			c.t.Errorf("%s: event %s shows the secret: %.300s", step, ev.Kind, ev.Message)
		}
	}
	for _, cl := range h.liveClaims(c.vol) {
		if strings.Contains(cl.LastError, matrixSecret) {
			c.t.Errorf("%s: the claim's record shows the secret: %.300s", step, cl.LastError)
		}
	}
}

// names fails the cell unless err names the volume, the plugin, the RPC and the code, and says
// what to do.
func (c *matrixCell) names(step string, err error, todo ...string) {
	c.t.Helper()
	msg := err.Error()
	for _, want := range append([]string{fmt.Sprintf("%q", c.vol), `plugin "mem"`, c.rpc, c.a.code.String()}, todo...) {
		if !strings.Contains(msg, want) {
			c.t.Errorf("%s: the error does not say %s: %.400s", step, want, msg)
		}
	}
}

// sent fails the cell unless its RPC was sent as often as its class wants: once, or at each of
// the retry policy's attempts.
func (c *matrixCell) sent() {
	c.t.Helper()
	attempts := 1
	if c.class == "retryable" {
		attempts = fastRetry.Attempts
	}
	if got := c.h.faults.Calls(c.rpc); got != attempts {
		c.t.Errorf("%s answered %s (%s) was sent %d times; want %d", c.rpc, c.a.name, c.class, got, attempts)
	}
}

// failingPass runs a reconcile pass with the plugin still failing, checking the store and the
// plugin agree after it: the failure left is a problem, and the pass's error says so; any
// other error fails the cell.
func (c *matrixCell) failingPass() {
	h := c.h
	h.t.Helper()
	for i := range 1 {
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil && (rep.OK() || !strings.Contains(err.Error(), "problem(s) remain")) {
			c.t.Fatalf("reconcile pass with the plugin failing: %v", err)
		}
		c.noSecret("reconcile", err)
		for _, p := range rep.Problems {
			if strings.Contains(p.Message, matrixSecret) {
				c.t.Errorf("reconcile's problem shows the secret: %.300s", p.Message)
			}
		}
		if err := c.agree(c.acted); err != nil {
			c.t.Errorf("after reconcile pass %d with the plugin still failing: %v", i+1, err)
		}
	}
}

// healAndRelease heals the plugin, runs a reconcile pass and a release of the claim if one is
// left, and checks that nothing is left.
func (c *matrixCell) healAndRelease() {
	h := c.h
	h.t.Helper()
	h.faults.Clear()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		c.t.Fatalf("reconcile after the plugin healed: %v: %+v", err, rep.Problems)
	}
	if err := c.agree(false); err != nil {
		c.t.Errorf("after the healed plugin's reconcile: %v", err)
	}
	if len(h.liveClaims(c.vol)) > 0 {
		if _, err := h.e.Release(h.ctx, c.vol, "a"); err != nil {
			c.t.Fatalf("release after the plugin healed: %v", err)
		}
	}
	if h.volumeInfo(c.vol).UnpublishOwed() {
		if _, err := h.e.Reconcile(h.ctx); err != nil {
			c.t.Fatalf("reconcile of the owed detach: %v", err)
		}
	}
	if err := c.empty(); err != nil {
		c.t.Errorf("after the plugin healed and the claim was released: %v", err)
	}
	c.noSecret("the end")
}

var matrixClaimRPCs = []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}

var matrixReleaseRPCs = []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume}

// needsMounts says why a cell's outcome rests on a mount the in-memory plugin of the fake
// harness cannot make ("" when it does not): a teardown the plugin did not do, answered
// NOT_FOUND (or NodeUnstageVolume UNIMPLEMENTED, which the design leaves to the mount table),
// is told from one it did only by the mount left at the path, which volctl's own removal of
// the plugin's empty directory hides. TestCodeMatrixKernel runs those cells with real mounts.
func needsMounts(rpc string, acted bool) func(matrixAnswer) string {
	return func(a matrixAnswer) string {
		if acted || rpc == csi.RPCControllerUnpublishVolume || slices.Contains(matrixClaimRPCs, rpc) {
			return ""
		}
		if a.code == codes.NotFound || rpc == csi.RPCNodeUnstageVolume && a.code == codes.Unimplemented {
			return "the outcome rests on a mount the in-memory plugin does not make: TestCodeMatrixKernel runs this cell"
		}
		return ""
	}
}

func TestCodeMatrix(t *testing.T) {
	t.Parallel()
	answers := matrixAnswers()
	for _, rpc := range append(slices.Clone(matrixClaimRPCs), matrixReleaseRPCs...) {
		for _, acted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/acted=%v", rpc, acted), func(t *testing.T) {
				t.Parallel()
				matrixRow(t, newHarnessConfig(t, nil, matrixConfig()), rpc, answers, acted, matrixRun(rpc), matrixCells(answers, rpc, acted))
			})
		}
	}
}

// matrixRun is the cell of rpc: a claim's, or a release's.
func matrixRun(rpc string) func(*matrixCell) {
	if slices.Contains(matrixClaimRPCs, rpc) {
		return (*matrixCell).claim
	}
	return (*matrixCell).release
}

func (c *matrixCell) claim() {
	h, t := c.h, c.t
	c.fault()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: c.vol, Alloc: "a"})
	if err == nil {
		t.Fatalf("the claim passed a %s answered %s", c.rpc, c.a.name)
	}
	c.sent()
	c.noSecret("claim", err)
	designKeeps := c.rpc == csi.RPCControllerPublishVolume && c.a.code == codes.AlreadyExists
	if err := c.agree(c.acted); err != nil && !(designKeeps && c.acted) {
		t.Errorf("after the claim: %v", err)
	}
	switch c.class {
	case "retryable":
		c.names("claim", err, "volctl reconcile")
		cls := h.liveClaims(c.vol)
		if len(cls) != 1 || !cls[0].NeedsReconcile {
			t.Fatalf("claims after a retryable failure: %+v; want one left for reconcile", cls)
		}
		c.failingPass()
		if evs := c.failureEvents(); len(evs) != 1 {
			t.Errorf("events of the failure after the claim and a pass meeting it again: %d; want 1: %+v", len(evs), evs)
		}
	default:
		if designKeeps {
			// The design: an attachment ControllerPublishVolume answered ALREADY_EXISTS for is not
			// the claim's, and no ControllerUnpublishVolume is sent for it (attachedOtherwise); a
			// plugin that made it and said so leaves it to the user, whom the error tells.
			c.names("claim", err, "left that attachment as it is", "rolled back")
			if n := h.faults.Calls(csi.RPCControllerUnpublishVolume); n != 0 {
				t.Errorf("ControllerUnpublishVolume sent %d times after ALREADY_EXISTS", n)
			}
		} else {
			c.names("claim", err, "rolled back")
		}
		if cls := h.liveClaims(c.vol); len(cls) != 0 {
			t.Fatalf("claims after a final failure: %+v; want it rolled back", cls)
		}
		if evs := c.failureEvents(); len(evs) != 1 {
			t.Errorf("events of the failure: %d; want 1: %+v", len(evs), evs)
		}
	}
	if designKeeps && c.acted {
		// The plugin's attachment is the user's to find (above); volctl holds nothing.
		if st, ok := h.staging(c.vol); ok && (st.ControllerPublished || st.Staged) {
			t.Errorf("the store records the attachment it left: %+v", st)
		}
		return
	}
	c.healAndRelease()
}

func (c *matrixCell) release() {
	h, t := c.h, c.t
	h.claim(ClaimRequest{VolumeID: c.vol, Alloc: "a"})
	h.faults.ResetCounts()
	c.fault()
	_, err := h.e.Release(h.ctx, c.vol, "a")
	c.noSecret("release", err)
	if err := c.agree(c.acted); err != nil {
		t.Errorf("after the release: %v", err)
	}
	if c.class == "ignorable" && c.acted {
		// NOT_FOUND after the plugin undid it: done, as an OK is (and likewise the mount table's
		// verdict on NodeUnstageVolume's UNIMPLEMENTED).
		if err != nil {
			t.Fatalf("release whose %s the plugin did and answered %s: %v", c.rpc, c.a.name, err)
		}
		if err := c.empty(); err != nil {
			t.Fatalf("after the release: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("the release passed a %s answered %s that the plugin did not act on", c.rpc, c.a.name)
	}
	c.sent()
	if c.class != "ignorable" {
		c.names("release", err, "volctl reconcile")
	}
	if cls := h.liveClaims(c.vol); len(cls) != 1 || !cls[0].Releasing {
		t.Errorf("claims after the release failed: %+v; want the claim left releasing", cls)
	}
	c.failingPass()
	if c.class != "ignorable" {
		if evs := c.failureEvents(); len(evs) != 1 {
			t.Errorf("events of the failure after the release and a pass meeting it again: %d; want 1: %+v", len(evs), evs)
		}
	}
	c.healAndRelease()
}

// TestCodeMatrixKernel runs the release's cells whose outcome rests on the mounts, and a few
// of each release RPC besides, with the in-memory plugin mounting for real (root) and the kernel's table: a
// plugin that answers a teardown NOT_FOUND (or NodeUnstageVolume UNIMPLEMENTED) having undone
// nothing leaves its mount, which volctl must find and not forget; and no cell leaves a
// mount under the test's directories.
func TestCodeMatrixKernel(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	var answers []matrixAnswer
	for _, a := range matrixAnswers() {
		if slices.Contains([]string{"NotFound", "Unimplemented", "Internal", "Unavailable"}, a.name) {
			answers = append(answers, a)
		}
	}
	for _, rpc := range matrixReleaseRPCs {
		for _, acted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/acted=%v", rpc, acted), func(t *testing.T) {
				t.Parallel()
				h := kernelHarnessConfig(t, nil, matrixConfig())
				matrixRow(t, h, rpc, answers, acted, func(c *matrixCell) {
					matrixRun(rpc)(c)
					if left := mountsUnder(t, h.dir); len(left) != 0 {
						c.t.Errorf("mounts left under the state dir: %v", left)
					}
				}, func(matrixAnswer) string { return "" })
			})
		}
	}
}

// serveAnew serves the harness's plugin on a new socket file at its path, as a restarted
// plugin does, which volctl fingerprints anew: the old file is kept linked until the new one
// is made, so that the new one cannot be given its inode and, made within the same tick of
// the kernel's coarse clock, its change time, and pass for the old one (the stored fingerprint
// reused, the questions the cell fails never asked). The server lives as long as t.
func (h *harness) serveAnew(t *testing.T) {
	h.t.Helper()
	keep := h.socket + ".old"
	if err := os.Link(h.socket, keep); err != nil {
		h.t.Fatal(err)
	}
	defer os.Remove(keep)
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
}

// matrixProbeRPCs are the questions volctl asks a plugin it connects to anew (its socket a new
// file: a restart), before any RPC of a claim.
var matrixProbeRPCs = []string{csi.RPCProbe, csi.RPCGetPluginInfo, csi.RPCGetPluginCapabilities,
	csi.RPCNodeGetCapabilities, csi.RPCControllerGetCapabilities, csi.RPCNodeGetInfo}

// TestCodeMatrixProbes: a plugin restarted (its socket a new file) whose answer to one of the
// questions asked of it anew is each code. A Probe that fails refuses the claim before it is
// admitted (the plugin unhealthy; UNAVAILABLE too, the plugin's own answer: only a plugin that
// does not answer at all is left to the RPCs after it, TestProbeUnavailableAnsweredIsNotAPluginGone);
// the fingerprint's other questions leave the claim
// taken for reconcile, nothing sent. Either way the plugin is sent nothing of the claim, the
// error names the volume, the plugin, the RPC and the code, with no secret, and once the
// plugin answers again a reconcile pass and a release leave nothing.
func TestCodeMatrixProbes(t *testing.T) {
	t.Parallel()
	var answers []matrixAnswer
	for _, a := range matrixAnswers() {
		if a.name == a.code.String() || a.name == "Code99" {
			answers = append(answers, a)
		}
	}
	// Probe is its own path (admission's health check), the fingerprint's questions one path
	// (connect): every code for the fingerprint's first question; for Probe the codes the
	// engine acts on by themselves (matrixBranched);
	// a few of each class for the fingerprint's others, whose cells cost the matrix's time and
	// test that path again.
	few := func(a matrixAnswer) string {
		switch a.code {
		case codes.Internal, codes.Unavailable, codes.Unimplemented, codes.Code(99):
			return ""
		}
		return "the fingerprint's path: every code is run at GetPluginInfo"
	}
	branched := func(a matrixAnswer) string {
		if slices.Contains(matrixBranched, a.code) {
			return ""
		}
		return "the engine acts on this code at Probe as on its class's: every code is run at GetPluginInfo"
	}
	for _, rpc := range matrixProbeRPCs {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel()
			h := newHarnessConfig(t, nil, matrixConfig())
			skip := few
			switch rpc {
			case csi.RPCGetPluginInfo:
				skip = func(matrixAnswer) string { return "" }
			case csi.RPCProbe:
				skip = branched
			}
			matrixRow(t, h, rpc, answers, false, (*matrixCell).probe, skip)
		})
	}
}

func (c *matrixCell) probe() {
	h, t := c.h, c.t
	h.faults.Inject(c.rpc, csitest.Fault{Code: c.a.code, Message: c.a.message})
	h.serveAnew(c.row)
	h.mem.ResetCalls()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: c.vol, Alloc: "a"})
	c.noSecret("claim", err)
	if err == nil {
		t.Fatalf("the claim passed a %s answered %s", c.rpc, c.a.name)
	}
	c.names("claim", err)
	// The questions send nothing of a volume: their error's hint must not send the user to
	// one (a NOT_FOUND was "the plugin does not know this volume; check its external_id").
	if msg := err.Error(); strings.Contains(msg, "external_id") || strings.Contains(msg, "the volume's secrets") {
		t.Errorf("the claim's error sends the user to the volume for an answer to %s, which names none: %.400s", c.rpc, msg)
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("RPCs of the claim sent to a plugin whose %s failed: %v", c.rpc, rpcs)
	}
	// A plugin that answered, its Probe or one of the fingerprint's questions failing, is not
	// healthy: the claim is refused before it is admitted, whatever the code (claimProbe).
	// Before, a fingerprint's failure was not judged and the claim was admitted and left
	// taken for reconcile, holding the volume, though answered as failed
	// (TestClaimThroughAnImpostorIsRefusedWithNothingRecorded).
	if cls := h.liveClaims(c.vol); len(cls) != 0 {
		t.Errorf("claims after its plugin's %s answered %s: %+v; want it refused before it was admitted", c.rpc, c.a.name, cls)
	}
	if err := c.agree(false); err != nil {
		t.Errorf("after the claim: %v", err)
	}
	c.healAndRelease()
}

// The event log against the matrix (fix31b's second reading): a claim whose plugin keeps
// failing its NodeStageVolume with one message, its code alternating, is an event at every
// change of code (a flood of alternating codes is still recorded, not taken for a repeat);
// after the stage passes, its NodePublishVolume failing with that same message is an event
// of its own (another RPC, not a repeat); and every one of them is found by the plugin it
// failed on (`volctl events --plugin`), as the claim's admission and release are. Before, a
// claim's failure event named no plugin, and `volctl events --plugin mem` showed none of them.
func TestFailureEventsOfAClaimRecordEachChangeAndNameThePlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	const msg = "backend busy"
	codesSeen := []codes.Code{codes.Unavailable, codes.Aborted, codes.Unavailable, codes.Aborted}
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codesSeen[0], Message: msg, Times: fastRetry.Attempts})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("the claim passed a failing NodeStageVolume")
	}
	for _, code := range codesSeen[1:] {
		h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: code, Message: msg, Times: fastRetry.Attempts})
		if rep, err := h.e.Reconcile(h.ctx); err == nil || rep.OK() {
			t.Fatalf("a pass with NodeStageVolume failing %s: %v", code, err)
		}
	}
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Code: codes.Aborted, Message: msg, Times: fastRetry.Attempts})
	if rep, err := h.e.Reconcile(h.ctx); err == nil || rep.OK() {
		t.Fatalf("a pass with NodePublishVolume failing: %v", err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "claim", VolumeID: "v"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.RPC != "" {
			got = append(got, ev.RPC+"/"+ev.Code)
		}
	}
	slices.Reverse(got)
	want := []string{"NodeStageVolume/Unavailable", "NodeStageVolume/Aborted", "NodeStageVolume/Unavailable", "NodeStageVolume/Aborted", "NodePublishVolume/Aborted"}
	if !slices.Equal(got, want) {
		t.Errorf("failure events of the claim: %v; want one per change, %v", got, want)
	}
	byPlugin, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "claim", PluginID: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for _, ev := range byPlugin {
		if ev.RPC != "" {
			failures++
		}
	}
	if failures != len(want) {
		t.Errorf("failure events of the claim found by its plugin (`volctl events --plugin mem`): %d; want %d", failures, len(want))
	}
}

// TestCodeMatrixOKAnswers: the matrix's OK column, an answer OK whose message is empty where
// CSI requires a field, or carries bytes volctl cannot decode or does not know. ControllerPublishVolume's
// publish_context not UTF-8 (the plugin attached) is an unread answer, rolled back, the
// attachment undone; one empty is the plugin's to refuse at NodeStageVolume, rolled back;
// fields volctl does not know in a node answer are read past; an empty node ID or driver
// name, or a node ID not UTF-8, fails the fingerprint, naming it, the claim taken for
// reconcile, nothing sent. In every case the store and the plugin agree, and once the
// plugin answers well a reconcile pass and a release leave nothing.
func TestCodeMatrixOKAnswers(t *testing.T) {
	t.Parallel()
	clear := func(field string) func(proto.Message) {
		return func(m proto.Message) {
			r := m.ProtoReflect()
			r.Clear(r.Descriptor().Fields().ByName(protoreflect.Name(field)))
		}
	}
	h := newHarnessConfig(t, nil, matrixConfig())
	for i, x := range []struct {
		name, rpc string
		fault     csitest.Fault
		fails     string // what the claim's error says; "" when the claim passes
	}{
		{"publish_context not UTF-8", csi.RPCControllerPublishVolume, csitest.Fault{Raw: csitest.AppendString("\xff", 1, 2)}, "its answer cannot be decoded"},
		{"publish_context empty", csi.RPCControllerPublishVolume, csitest.Fault{Answer: clear("publish_context")}, "rolled back"},
		{"stage answer with a field unknown", csi.RPCNodeStageVolume, csitest.Fault{Raw: csitest.AppendString("\xff", 7)}, ""},
		{"publish answer with a field unknown", csi.RPCNodePublishVolume, csitest.Fault{Raw: csitest.AppendString("\xff", 7)}, ""},
		{"node ID empty", csi.RPCNodeGetInfo, csitest.Fault{Answer: clear("node_id")}, "empty node ID"},
		{"node ID not UTF-8", csi.RPCNodeGetInfo, csitest.Fault{Raw: csitest.AppendString("\xff", 1)}, "its answer cannot be decoded"},
		{"driver name empty", csi.RPCGetPluginInfo, csitest.Fault{Answer: clear("name")}, "empty name"},
	} {
		t.Run(x.name, func(t *testing.T) {
			parent := h.t
			h.t = t
			defer func() { h.t = parent }()
			vol := fmt.Sprintf("v%d", i)
			h.create(volume(vol))
			c := &matrixCell{t: t, row: parent, h: h, vol: vol, ext: h.externalID(vol), rpc: x.rpc}
			h.faults.Inject(x.rpc, x.fault)
			defer h.faults.Clear() // a cell that fails leaves the next its plugin healed
			h.serveAnew(parent)
			h.faults.ResetCounts()
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: vol, Alloc: "a"})
			switch {
			case x.fails == "" && err != nil:
				t.Fatalf("claim: %v", err)
			case x.fails != "" && (err == nil || !strings.Contains(err.Error(), x.fails) || !strings.Contains(err.Error(), `plugin "mem"`)):
				t.Fatalf("claim: %v; want it to say %q and name the plugin", err, x.fails)
			}
			if err := c.agree(false); err != nil {
				t.Errorf("after the claim: %v", err)
			}
			c.healAndRelease()
		})
	}
}

// TestCodeMatrixRestoreFingerprint: the fingerprint's questions (TestCodeMatrixProbes) met by
// a reconcile's restore rather than a claim: after a reboot (the claim's mounts gone), the
// plugin restarted (its socket a new file) answers one question of its fingerprint with an
// error. The claim stays held, left for reconcile, its record and its one failure event naming
// the question and its code, as a claim's RPC failing does; once the plugin answers again a
// pass restores it and a release leaves nothing. Before, restoreLocked's connection failure
// was recorded with no RPC (`volctl events` showed neither the question nor the code).
func TestCodeMatrixRestoreFingerprint(t *testing.T) {
	t.Parallel()
	h := newHarnessConfig(t, nil, matrixConfig())
	for i, rpc := range matrixProbeRPCs[1:] { // Probe's failure is the plugin's health, not a connection's
		t.Run(rpc, func(t *testing.T) {
			parent := h.t
			h.t = t
			defer func() { h.t = parent }()
			vol := fmt.Sprintf("v%d", i)
			h.claimThenReboot(vol, "a", spec.SingleNodeWriter)
			c := &matrixCell{t: t, row: parent, h: h, vol: vol, ext: h.externalID(vol), rpc: rpc,
				a: matrixAnswer{name: "Internal", code: codes.Internal, message: "backend said no (token " + matrixSecret + ")"}, class: "final"}
			h.faults.Inject(rpc, csitest.Fault{Code: c.a.code, Message: c.a.message})
			defer h.faults.Clear() // a cell that fails leaves the next its plugin healed
			h.serveAnew(parent)
			rep, err := h.e.Reconcile(h.ctx)
			if err == nil || rep.OK() {
				t.Fatalf("reconcile restoring through a plugin whose %s fails: %+v, %v; want a problem", rpc, rep, err)
			}
			c.noSecret("reconcile", err)
			cls := h.liveClaims(vol)
			if len(cls) != 1 || cls[0].Releasing || !cls[0].NeedsReconcile {
				t.Fatalf("claims after the restore failed: %+v; want the claim held, left for reconcile", cls)
			}
			if cls[0].LastRPC != rpc || cls[0].LastCode != c.a.code.String() {
				t.Errorf("claim after its restore's %s failed records %q/%q; want %s/%s", rpc, cls[0].LastRPC, cls[0].LastCode, rpc, c.a.code)
			}
			if evs := c.failureEvents(); len(evs) != 1 {
				all, _ := h.e.Events(h.ctx, 0, EventFilter{VolumeID: vol})
				t.Errorf("events of the restore's %s failing: %d; want 1: %+v", rpc, len(evs), all)
			}
			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !slices.ContainsFunc(rep.Actions, func(a ReconcileAction) bool { return a.Kind == "restored" && a.VolumeID == vol }) {
				t.Fatalf("reconcile once the plugin answers: %+v, %v; want %s restored", rep, err, vol)
			}
			h.release(vol, "a")
			if err := c.empty(); err != nil {
				t.Errorf("after the restore and the release: %v", err)
			}
		})
	}
}
