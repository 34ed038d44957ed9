package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// maxListPages bounds paging through a plugin's list RPC (ListSnapshots, ListVolumes), against
// a plugin whose tokens never end (each new: one that repeats a token is stopped at the repeat).
const maxListPages = 10000

// maxCheckPages bounds the listing after a teardown (teardownChecked), which holds the plugin's
// controller lock: fewer pages than a listing shown to the user may take, and DefaultListCheck
// bounds its time. A listing cut short by either reads "not checked".
const maxCheckPages = 1000

// listTurn is how long a listing shown to the user (listPluginSnapshots) holds the plugin's
// controller lock at a time, between two of its pages (controllerTurns): a create, delete or
// publish of the plugin waiting for the lock waits for one turn and one page, not for the whole
// listing, which may run to maxListPages pages of up to the short timeout each.
const listTurn = time.Second

// controllerTurns holds a plugin's controller lock for a long series of controller calls (the
// pages of a listing shown to the user) in turns: each call is made holding it, as every
// controller call is (one at a time per controller), and once a turn has lasted listTurn the
// lock is let go between two calls, for long enough (a few lockRetry) that another volctl
// waiting for it takes it. Nothing is read or written between two calls that the lock
// guards: the pages are the plugin's, merged with the records afterwards. Call release when done.
type controllerTurns struct {
	e      *Engine
	c      *conn
	unlock func()
	since  time.Time
}

// call runs fn holding the controller lock, after a pause without it when the turn is over.
func (t *controllerTurns) call(ctx context.Context, fn func(context.Context) error) error {
	if t.unlock != nil && time.Since(t.since) >= listTurn {
		t.release()
		pause := time.NewTimer(4 * lockRetry)
		select {
		case <-ctx.Done():
			pause.Stop()
			return ctx.Err()
		case <-pause.C:
		}
	}
	if t.unlock == nil {
		sp := t.c.plugin.Spec()
		unlock, err := t.e.locks.controller(ctx, t.c.plugin.ID, csi.ConfigFromSpec(&sp).ControllerSocket)
		if err != nil {
			return err
		}
		t.unlock, t.since = unlock, time.Now()
	}
	return fn(ctx)
}

// release lets go of the lock if it is held.
func (t *controllerTurns) release() {
	if t.unlock != nil {
		t.unlock()
		t.unlock = nil
	}
}

// DefaultListCheck is how long the listing after a delete answered OK may take (Config.ListCheck):
// it holds the plugin's controller lock, which every other create, delete, publish and snapshot
// of the plugin waits for.
const DefaultListCheck = 30 * time.Second

// DefaultListTime is how long a listing shown to the user (listPluginSnapshots) may take
// (Config.ListTime): a plugin that pages without end, slowly and with a fresh token each time,
// would otherwise hold the command for maxListPages pages of up to the short timeout each.
const DefaultListTime = 2 * time.Minute

// DefaultListMemory is how much of a plugin's answers a listing shown to the user may hold
// (Config.ListMemory, counted by listedSize): a plugin that answers every page full (as many
// entries as gRPC's 4 MiB carries) with a fresh token, fast, would otherwise fill the host's
// memory long before ListTime or maxListPages ends it. Some 400,000 snapshots of
// 64-byte IDs fit, far more than one host's volumes make.
const DefaultListMemory = 64 << 20

// listedSize is what snaps, as a listing holds them, take in memory: their structs and their
// strings (what the plugin chose the size of).
func listedSize(snaps []csi.Snapshot) int {
	n := len(snaps) * int(unsafe.Sizeof(csi.Snapshot{}))
	for _, s := range snaps {
		n += len(s.ID) + len(s.SourceVolumeID) + len(s.GroupSnapshotID)
	}
	return n
}

// boundList runs list with ctx cut after bound, a cancel, not a deadline: the plugin sees no
// deadline it may answer on before ours passes, so a listing cut short is always one this bound
// cut. The error of a listing so cut says so, and what the bound is for (bounds, "the bound
// on ...").
func boundList(ctx context.Context, bound time.Duration, bounds string, list func(context.Context) error) error {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := time.AfterFunc(bound, func() { cancel(errListBound) })
	err := list(lctx)
	stop.Stop()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(lctx), errListBound) {
		err = fmt.Errorf("the listing did not finish within %s, %s: %w", bound, bounds, err)
	}
	return err
}

// listPages pages through one of a plugin's list RPCs; the caller holds its controller lock.
// page sends rpc from token (with retries: retry) and keeps what it was answered only when it
// returns no error; it returns the next token and whether the caller has seen enough (done).
// Paging ends when the plugin gives no next token or page is done. A next_token given before
// fails it: it leads back to a page already listed, so paging on would never end, and stopping
// there is no end either (the pages after it were never listed, and what they hold would read
// as absent); so do more than maxPages pages. Such an error means the listing is incomplete.
// The tokens given are kept as their hashes: a plugin's token is its own cursor, of any size
// up to gRPC's 4 MiB, and thousands of pages of such tokens kept whole would fill memory.
// A next_token the plugin answers ABORTED to, the CSI spec's code for a starting_token no
// longer valid (its listing changed), is not sent again (it gets the same answer): the listing
// starts again from the first page, up to maxListRestarts times, and page, called with token
// "" again, forgets what it kept of the pages before
// (`TestListSnapshotsStartsAgainWhenThePluginRefusesItsOwnToken`; before, the token was
// retried at each attempt, ABORTED each time, and the listing failed).
//
// Under a checkBudget (withCheckBudget: a delete's listings), every page sent, retries and
// restarts included, is taken from its pages, and paging stops when none is left.
func (e *Engine) listPages(ctx context.Context, c *conn, rpc string, maxPages int, page func(ctx context.Context, token string) (next string, done bool, err error)) error {
	token, given, restarts := "", map[[sha256.Size]byte]bool{}, 0
	budget := checkBudgetOf(ctx)
	if budget != nil {
		maxPages = min(maxPages, budget.pages)
	}
	// Each page that does not end the listing gives one token, and a restart forgets them: the
	// bound counts the pages of the listing under way, not those of listings the plugin cut
	// short (TestListingStartedAgainCountsItsOwnPages), and the whole stays within
	// (maxListRestarts+1)*maxPages pages.
	for len(given) < maxPages {
		var (
			next string
			done bool
		)
		if budget != nil && budget.pages <= 0 {
			break
		}
		err := e.retry(ctx, c, rpc, func(ctx context.Context) error {
			if budget != nil {
				if budget.pages <= 0 {
					return errPagesSpent
				}
				budget.pages--
			}
			var err error
			next, done, err = page(ctx, token)
			if token != "" && csi.IsAborted(err) {
				return staleToken{err} // final: not retried
			}
			return err
		})
		var stale staleToken
		if errors.As(err, &stale) {
			if restarts == maxListRestarts {
				return fmt.Errorf("%w; volctl listed again from the first page %d times, and the plugin refused a next_token it gave each time: "+
					"its listing keeps changing while volctl pages through it, try again once it settles", stale.err, restarts)
			}
			restarts++
			token, given = "", map[[sha256.Size]byte]bool{}
			continue
		}
		if errors.Is(err, errPagesSpent) {
			break
		}
		if err != nil || done || next == "" {
			return err
		}
		sum := sha256.Sum256([]byte(next))
		if given[sum] {
			// Quoted cut: the warning goes to the terminal and the JSON answer.
			return fmt.Errorf("%s: the plugin answered next_token %q a second time (after %d pages): its listing would never end",
				rpc, spec.Cut(next, maxTokenShown), len(given)+1)
		}
		given[sum] = true
		token = next
	}
	return fmt.Errorf("%s: more than %d pages", rpc, maxPages)
}

// maxTokenShown is how much of a plugin's next_token an error quotes.
const maxTokenShown = 64

// maxListRestarts is how many times listPages starts a listing again from its first page
// after the plugin answered ABORTED to a next_token it gave.
const maxListRestarts = 2

// staleToken is a page's ABORTED answer to a starting_token (listPages): not an *csi.Error to
// the retry, which does not send the same token again.
type staleToken struct{ err error }

func (s staleToken) Error() string { return s.err.Error() }

// sender sends an RPC of an operation: retry, or attempt where it is tried once.
type sender func(ctx context.Context, c *conn, rpc string, call func(context.Context) error) error

// teardownChecked sends a teardown RPC (call, through send: retry, or attempt) and, when the plugin answers OK or
// NOT_FOUND (its word that it is done, or that there was nothing to do), asks it whether what
// it undid is still there (still), both under the plugin's controller lock, so no other
// volctl's create, delete or publish comes between: a delete still listed, an attachment still
// reported (docs/architecture.md, "A delete is finished when the plugin no longer has the
// volume" and the detach's rule after it). stillThere says the plugin still reports it; unchecked, why that could not be learnt
// (the listing failed or did not end); err is the teardown's own error (NOT_FOUND included,
// which callers take as done). The listing holds the lock others wait for, so it is bounded:
// maxCheckPages pages (listsID) within cfg.ListCheck, past which it is unchecked, never a
// failure of the teardown the plugin answered.
func (e *Engine) teardownChecked(ctx context.Context, c *conn, send sender, rpc string, call func(context.Context) error,
	still func(context.Context) (bool, error)) (stillThere bool, unchecked, err error) {
	err = e.withController(ctx, c, func(ctx context.Context) error {
		err := send(ctx, c, rpc, call)
		if err == nil || csi.IsIgnorable(err) {
			e.failpoint("check:" + rpc) // answered, not yet checked nor recorded
			unchecked = e.boundCheck(ctx, func(ctx context.Context) error {
				var err error
				stillThere, err = still(ctx)
				return err
			})
		}
		return err
	})
	return stillThere, unchecked, err
}

// boundCheck runs check, a listing asked of the plugin under its controller lock, within
// cfg.ListCheck (boundList): the lock it holds is the one every other create, delete, publish
// and snapshot of the plugin waits for. Under a checkBudget (withCheckBudget), within what is
// left of the budget's time, which the check's time is taken from; with none left, check is
// not run, and the error says what used it up.
func (e *Engine) boundCheck(ctx context.Context, check func(context.Context) error) error {
	b := checkBudgetOf(ctx)
	if b == nil {
		return boundList(ctx, e.cfg.ListCheck, "the bound on this check (it holds the plugin's controller lock)", check)
	}
	if b.pages <= 0 || b.left <= 0 {
		return b.spentError(e.cfg.ListCheck)
	}
	began := time.Now()
	err := boundList(ctx, b.left, "the bound on this check (it holds the plugin's controller lock)", check)
	b.left -= time.Since(began)
	if err != nil {
		b.last = err
	}
	return err
}

// checkBudget is the one bound the listings asked around a DeleteVolume share
// (withCheckBudget): the one before it, of the nodes that hold the volume (publishedNodes),
// and the one after it, of whether the plugin still has it (listsVolume). Both run under the
// plugin's controller lock, and take their pages (listPages) and their time (boundCheck) from
// one maxCheckPages and one cfg.ListCheck: a plugin whose listing never ends holds the lock
// as long as one check did, not twice as long, and the check after a listing that used it
// all is not asked, "not checked", as one cut short is
// (`TestDeleteCheckAgainstASlowEndlessListingIsBounded`,
// `TestDeleteChecksShareOneBoundAgainstAHungListing`).
type checkBudget struct {
	pages int           // pages that may still be sent
	left  time.Duration // time the listings may still take
	last  error         // the last listing's failure: what used the budget up, when it is
}

type checkBudgetKey struct{}

// withCheckBudget returns ctx whose checks (boundCheck, listPages) share b.
func withCheckBudget(ctx context.Context, b *checkBudget) context.Context {
	return context.WithValue(ctx, checkBudgetKey{}, b)
}

// checkBudgetOf is ctx's checkBudget, nil for none.
func checkBudgetOf(ctx context.Context) *checkBudget {
	b, _ := ctx.Value(checkBudgetKey{}).(*checkBudget)
	return b
}

// newCheckBudget is a whole checkBudget: maxCheckPages pages within cfg.ListCheck.
func (e *Engine) newCheckBudget() *checkBudget {
	return &checkBudget{pages: maxCheckPages, left: e.cfg.ListCheck}
}

// spentError is why a check under b is not asked: an earlier listing used b up.
func (b *checkBudget) spentError(listCheck time.Duration) error {
	msg := fmt.Sprintf("not asked: the listing before it used up the bound they share (%d pages within %s: they hold the plugin's controller lock)", maxCheckPages, listCheck)
	if b.last == nil {
		return errors.New(msg)
	}
	return fmt.Errorf("%s, and %w", msg, b.last)
}

// errPagesSpent stops listPages when its checkBudget has no page left.
var errPagesSpent = errors.New("no page left of the bound")

// controllerCheck is boundCheck taking the plugin's controller lock for check.
func (e *Engine) controllerCheck(ctx context.Context, c *conn, check func(context.Context) error) error {
	return e.withController(ctx, c, func(ctx context.Context) error { return e.boundCheck(ctx, check) })
}

// errListBound is the cause of a listing cut short by its time bound (boundList).
var errListBound = errors.New("the listing's time bound passed")

// listsID says whether a list RPC names id, after a delete (teardownChecked): page sends rpc from
// token and returns the IDs of one page and the next token. Paging stops at the page naming id,
// or after maxCheckPages pages (listPages).
func (e *Engine) listsID(ctx context.Context, c *conn, rpc, id string, page func(ctx context.Context, token string) (ids []string, next string, err error)) (listed bool, err error) {
	err = e.listPages(ctx, c, rpc, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
		ids, next, err := page(ctx, token)
		listed = err == nil && slices.Contains(ids, id)
		return next, listed, err
	})
	return listed, err
}

// volumeCheck is the RPC that asks the plugin whether it still has a volume, after a teardown
// it answered OK or NOT_FOUND: ListVolumes where it has LIST_VOLUMES, else ControllerGetVolume
// where it has GET_VOLUME (a controller that answers for one volume and lists none), else ""
// (it cannot be asked, and its word is all there is).
func volumeCheck(c *conn) string {
	ctrl := c.fp.Capabilities.Controller
	return checkBy(c, ctrl.ListVolumes, csi.RPCListVolumes, ctrl.GetVolume, csi.RPCControllerGetVolume)
}

// checkBy is the RPC volumeCheck and snapshotCheck choose: list where the plugin's controller
// can list (canList), else get where it can answer for one (canGet), else "".
func checkBy(c *conn, canList bool, list string, canGet bool, get string) string {
	switch {
	case !c.fp.Controller:
		return ""
	case canList:
		return list
	case canGet:
		return get
	}
	return ""
}

// publishedCheck is volumeCheck for the nodes a volume is published to: either RPC says them
// (published_node_ids) only with LIST_VOLUMES_PUBLISHED_NODES, as the CSI spec fills the field
// in only then.
func publishedCheck(c *conn) string {
	if !c.fp.Capabilities.Controller.ListVolumesPublishedNodes {
		return ""
	}
	return volumeCheck(c)
}

// possessive is an RPC's name as the owner of a field: "ListVolumes'", "ControllerGetVolume's".
func possessive(rpc string) string {
	if strings.HasSuffix(rpc, "s") {
		return rpc + "'"
	}
	return rpc + "'s"
}

// getsVolume asks a plugin with GET_VOLUME about its volume externalID (ControllerGetVolume):
// found is false when it answers NOT_FOUND, its word that it has no such volume; got is its
// answer. The caller holds the plugin's controller lock.
func (e *Engine) getsVolume(ctx context.Context, c *conn, externalID string) (found bool, got csi.ControllerGetVolumeResponse, err error) {
	err = e.retry(ctx, c, csi.RPCControllerGetVolume, func(ctx context.Context) error {
		var err error
		got, err = c.client.ControllerGetVolume(ctx, csi.ControllerGetVolumeRequest{VolumeID: externalID})
		return err
	})
	if csi.IsNotFound(err) {
		return false, csi.ControllerGetVolumeResponse{}, nil
	}
	return err == nil, got, err
}

// listsVolume says whether the plugin still has its volume externalID (volumeCheck), asked
// after a DeleteVolume of it answered OK or NOT_FOUND; the caller holds the plugin's controller
// lock. A plugin that cannot be asked is not (false, nil). err says the check failed or did
// not end: volctl could not check.
func (e *Engine) listsVolume(ctx context.Context, c *conn, externalID string) (bool, error) {
	switch volumeCheck(c) {
	case csi.RPCListVolumes:
		return e.listsID(ctx, c, csi.RPCListVolumes, externalID, func(ctx context.Context, token string) ([]string, string, error) {
			page, err := c.client.ListVolumes(ctx, csi.ListVolumesRequest{StartingToken: token})
			ids := make([]string, 0, len(page.Entries))
			for _, en := range page.Entries {
				ids = append(ids, en.Volume.ID)
			}
			return ids, page.NextToken, err
		})
	case csi.RPCControllerGetVolume:
		found, _, err := e.getsVolume(ctx, c, externalID)
		return found, err // an answer about another ID says found too: the safe answer
	}
	return false, nil
}

// listsPublished says whether the plugin still reports its volume externalID published to
// nodeID (publishedCheck: ListVolumes' or ControllerGetVolume's published_node_ids), asked
// after a ControllerUnpublishVolume of it answered OK or NOT_FOUND; the caller holds the
// plugin's controller lock. A plugin that cannot say is not asked (false, nil). Paging stops
// at an entry of the volume published to the node; one that lists it elsewhere, or nowhere,
// is paged past, as a listing may name the volume again and disagree with itself (offset
// paging over a list that changed between two pages, two backends merged), and any entry
// naming the node counts, the safe answer (`TestControllerUnpublishCheckedByAListingThatDisagreesWithItself`;
// before, the first entry decided, and a volume listed published nowhere, then attached here,
// was recorded detached, or taken by a claim as its own attachment, `TestClaimCheckedByAListingThatDisagreesWithItself`).
// A volume not listed, or that ControllerGetVolume answers NOT_FOUND, is published nowhere.
// ControllerGetVolume answering about another volume ID than asked is believed when it says
// published to the node (a plugin that normalises IDs answers so of the volume asked), and is
// no answer (err) when it says not: that is another volume's state
// (`TestControllerUnpublishCheckedByGetVolumeAnsweringAnotherVolume`), and so is an answer OK
// with no volume in it (`TestControllerUnpublishCheckedByGetVolumeAnsweringNoVolume`).
// err says the check failed or did not end.
func (e *Engine) listsPublished(ctx context.Context, c *conn, externalID, nodeID string) (published bool, err error) {
	switch publishedCheck(c) {
	case csi.RPCListVolumes:
		err = e.listPages(ctx, c, csi.RPCListVolumes, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
			page, err := c.client.ListVolumes(ctx, csi.ListVolumesRequest{StartingToken: token})
			if err != nil {
				return "", false, err
			}
			published = slices.ContainsFunc(page.Entries, func(en csi.ListedVolume) bool {
				return en.Volume.ID == externalID && slices.Contains(en.PublishedNodeIDs, nodeID)
			})
			return page.NextToken, published, nil
		})
	case csi.RPCControllerGetVolume:
		var (
			got   csi.ControllerGetVolumeResponse
			found bool
		)
		found, got, err = e.getsVolume(ctx, c, externalID)
		published = slices.Contains(got.PublishedNodeIDs, nodeID)
		if err == nil && !published && found && got.Volume.ID == "" {
			// An answer OK without the volume CSI requires in it (a default response) says
			// nothing of the volume asked either: before, it read as published nowhere, the
			// detach checked (TestControllerUnpublishCheckedByGetVolumeAnsweringNoVolume).
			err = fmt.Errorf("%s of volume %q answered OK with no volume: that says nothing of the volume asked",
				csi.RPCControllerGetVolume, externalID)
		}
		if err == nil && !published && got.Volume.ID != "" && got.Volume.ID != externalID {
			// Quoted cut: the plugin's answer, unbounded but by gRPC's 4 MiB, is no ID volctl made.
			nodes := "no node"
			switch n := got.PublishedNodeIDs; {
			case len(n) == 1:
				nodes = fmt.Sprintf("node %q", spec.Cut(n[0], 256))
			case len(n) > 1:
				nodes = fmt.Sprintf("%d nodes (%s)", len(n), listSome(n, 5, func(id string) string { return fmt.Sprintf("%q", spec.Cut(id, 256)) }))
			}
			err = fmt.Errorf("%s of volume %q answered about volume %q, published to %s: that says nothing of the volume asked",
				csi.RPCControllerGetVolume, externalID, spec.Cut(got.Volume.ID, 256), nodes)
		}
	}
	return published, err
}

// publishedNodes returns the nodes the plugin reports its volume externalID published to
// (publishedCheck: ListVolumes' or ControllerGetVolume's published_node_ids), asked before a
// DeleteVolume of it; the caller holds the plugin's controller lock. A plugin that cannot say
// is not asked (none, nil). Paging stops at the first entry of the volume that names a node;
// entries of other volumes, near spellings of its ID included, say nothing of it, and an empty
// node ID is no node. ControllerGetVolume answering NOT_FOUND says none; answering about
// another volume ID, or OK with no volume, is no answer (err), as for listsPublished when it
// says not published: that is another volume's state, which must not refuse this volume's
// delete. err says the check failed or did not end: volctl could not check.
//
// The node IDs are told apart with a set: a plugin listing a volume on 400,000 distinct nodes
// (3.6 MB, under gRPC's bound) had them compared each with all before it, minutes of one core
// past ListCheck's bound under the plugin's controller lock
// (TestDeleteCheckOfAVolumeListedOnManyNodesIsBounded).
func (e *Engine) publishedNodes(ctx context.Context, c *conn, externalID string) (nodes []string, err error) {
	seen := map[string]bool{}
	add := func(ids []string) {
		for _, n := range ids {
			if n != "" && !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
	}
	switch publishedCheck(c) {
	case csi.RPCListVolumes:
		err = e.listPages(ctx, c, csi.RPCListVolumes, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
			page, err := c.client.ListVolumes(ctx, csi.ListVolumesRequest{StartingToken: token})
			if err != nil {
				return "", false, err
			}
			for _, en := range page.Entries {
				if en.Volume.ID == externalID {
					add(en.PublishedNodeIDs)
				}
			}
			return page.NextToken, len(nodes) > 0, nil
		})
	case csi.RPCControllerGetVolume:
		found, got, gerr := e.getsVolume(ctx, c, externalID)
		switch {
		case gerr != nil:
			err = gerr
		case !found:
		case got.Volume.ID == "":
			err = fmt.Errorf("%s of volume %q answered OK with no volume: that says nothing of the volume asked", csi.RPCControllerGetVolume, externalID)
		case got.Volume.ID != externalID:
			// Quoted cut: the plugin's answer, unbounded but by gRPC's 4 MiB.
			err = fmt.Errorf("%s of volume %q answered about volume %q: that says nothing of the volume asked",
				csi.RPCControllerGetVolume, externalID, spec.Cut(got.Volume.ID, 256))
		default:
			add(got.PublishedNodeIDs)
		}
	}
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// snapshotCheck is volumeCheck of a snapshot: ListSnapshots where the plugin has
// LIST_SNAPSHOTS, else GetSnapshot where it has GET_SNAPSHOT, else "".
func snapshotCheck(c *conn) string {
	ctrl := c.fp.Capabilities.Controller
	return checkBy(c, ctrl.ListSnapshots, csi.RPCListSnapshots, ctrl.GetSnapshot, csi.RPCGetSnapshot)
}

// listsSnapshot is listsVolume of a snapshot, after a DeleteSnapshot answered OK (snapshotCheck,
// findsSnapshot). A plugin that cannot be asked is not.
func (e *Engine) listsSnapshot(ctx context.Context, c *conn, id string, secrets spec.Secrets) (bool, error) {
	_, listed, err := e.findsSnapshot(ctx, c, id, secrets)
	return listed, err
}

// findsSnapshot asks the plugin for its snapshot id (snapshotCheck): ListSnapshots with its
// snapshot_id (and secrets), a plugin that ignores that filter paged through, or GetSnapshot;
// NOT_FOUND says it is not there. found is false, with no error, from a plugin that cannot be
// asked. Paging stops at an entry of the snapshot that is not ready (ready_to_use false); one
// ready is paged past, as a listing may name the snapshot again and disagree with itself
// (listsPublished), and any entry saying not ready is the answer, the safe one for a restore
// (`TestRestoreCheckedByASnapshotListingThatDisagreesWithItself`; before, the first entry
// decided). The caller holds the plugin's controller lock.
func (e *Engine) findsSnapshot(ctx context.Context, c *conn, id string, secrets spec.Secrets) (snap csi.Snapshot, found bool, err error) {
	snap, found, _, err = e.findsSnapshotNear(ctx, c, id, secrets, snapshotNotReady)
	return snap, found, err
}

// snapshotNotReady is findsSnapshotNear's decisive entry for a check of readiness: one that says the
// snapshot is not ready to use.
func snapshotNotReady(s csi.Snapshot) bool { return !s.ReadyToUse }

// findsSnapshotNear is findsSnapshot that also returns, from a listing, an entry of the
// snapshot's ID spelled otherwise (spec.SameStorageID: what a plugin that reads IDs so takes
// id for) that says it is not ready, or a zero Snapshot: a restore's check
// (restoreReady). Before, such an entry was skipped as another ID, and a restore from
// "NIGHTLY" through a plugin listing its "nightly" not ready sent CreateVolume
// (TestRestoreFromANearSpellingListedNotReadyIsRefused).
//
// decisive says which entry of id is the answer whatever the others say (notReady for a
// readiness check; one naming another source than recorded for a delete's or a restore's
// check): kept over any other, and the listing stops there, so a later page that fails (a
// next_token that loops) does not turn what was found into an error the caller goes on past.
// Before, a first page naming the recorded ID as another volume's snapshot, then a looping
// token, let a delete destroy that snapshot, and a listing naming it first as the recorded
// source's, then as another's, did the same
// (TestSnapshotDeleteSparesAnotherVolumesSnapshotWhenTheListingThenLoops,
// TestSnapshotDeleteRefusedByAListingThatNamesTheIDAsTwoSources).
func (e *Engine) findsSnapshotNear(ctx context.Context, c *conn, id string, secrets spec.Secrets, decisive func(csi.Snapshot) bool) (snap csi.Snapshot, found bool, near csi.Snapshot, err error) {
	switch snapshotCheck(c) {
	case csi.RPCListSnapshots:
		err = e.listPages(ctx, c, csi.RPCListSnapshots, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
			if token == "" {
				snap, found, near = csi.Snapshot{}, false, csi.Snapshot{} // listed again from the start (listPages)
			}
			page, err := c.client.ListSnapshots(ctx, csi.ListSnapshotsRequest{SnapshotID: id, StartingToken: token, Secrets: secrets})
			if err != nil {
				return "", false, err
			}
			for _, s := range page.Snapshots {
				switch {
				case s.ID == id && (!found || decisive(s)):
					snap, found = s, true
				case s.ID != id && !s.ReadyToUse && near.ID == "" && spec.SameStorageID(s.ID, id):
					near = s
				}
				if found && decisive(snap) {
					return "", true, nil
				}
			}
			return page.NextToken, false, nil
		})
	case csi.RPCGetSnapshot:
		err = e.retry(ctx, c, csi.RPCGetSnapshot, func(ctx context.Context) error {
			var err error
			snap, err = c.client.GetSnapshot(ctx, csi.GetSnapshotRequest{SnapshotID: id, Secrets: secrets})
			return err
		})
		found = err == nil
	}
	if csi.IsNotFound(err) {
		return csi.Snapshot{}, false, csi.Snapshot{}, nil
	}
	return snap, found, near, err
}

// stillListed is what a delete answered OK or NOT_FOUND (answer: nil or that error) is when
// the plugin still lists what it deleted (listsVolume, listsSnapshot): rpc is the delete, what
// and id name it, asked is the RPC that said it is still there (volumeCheck, snapshotCheck).
func stillListed(pluginID, rpc string, answer error, what, id, asked string) error {
	still := "still lists"
	if asked == csi.RPCControllerGetVolume || asked == csi.RPCGetSnapshot {
		still = "still has" // it answered for it, not NOT_FOUND
	}
	return fmt.Errorf("plugin %q answered %s %s but %s %s %q (%s): it may be deleting it in the background, or did not delete it",
		pluginID, rpc, answerWord(answer), still, what, id, asked)
}

// answerWord is how an error says what a plugin answered a teardown it took as done: OK, or
// the NOT_FOUND that says there was nothing to undo.
func answerWord(answer error) string {
	if answer == nil {
		return "OK"
	}
	return "NOT_FOUND"
}

// uncheckedNote is what a delete answered OK or NOT_FOUND (answer: nil or that error) says when
// whether the plugin still lists what it deleted (what id) could not be checked (unchecked,
// teardownChecked's): the words its event adds, "" when it was checked. It logs the warning
// (stderr, for the command line). Both are scrubbed of the delete's secrets (sent with the
// check's listing too): volctl's own words about the listing quote what the plugin gave (a
// next_token it repeated), which the scrub of the plugin's messages does not reach, and the
// event outlives secrets the state does not keep (a --secret, a deleted volume's); before,
// `volctl events` showed a --secret the plugin echoed into that token
// (TestSecretEchoedIntoARepeatedNextTokenIsNotRecorded).
func (e *Engine) uncheckedNote(unchecked, answer error, pluginID, rpc, what, id string, secrets spec.Secrets) string {
	if unchecked == nil {
		return ""
	}
	scrub := csi.Scrubber(slices.Collect(maps.Values(secrets.Plain())))
	e.log.Warn(fmt.Sprintf("plugin %q answered %s %s for %s %q, but whether it still lists it could not be checked", pluginID, rpc, answerWord(answer), what, id),
		"err", scrub(unchecked.Error()))
	return scrub(fmt.Sprintf(" (not checked that the plugin no longer lists it: %v)", unchecked))
}
