package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/nomadaddr"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// One orchestrator at a time. A volume registered in a Nomad cluster (`volctl nomad register`)
// is marked as handed over; while the mark stands, admission refuses local claims of it, and
// `volctl nomad release` takes it back once Nomad has let go of it.

// HandoverInfo says that a volume was handed over to a Nomad cluster, and where. Unsettled: a
// registration of the volume ended without Nomad saying how, and Nomad may yet apply it
// (store.Handover.Unsettled): its 404 does not take the mark back. Index: the X-Nomad-Index of
// the last registration Nomad answered OK (0: none known); a 404 from a state before it is
// not Nomad's word.
type HandoverInfo struct {
	VolumeID  string `json:"volume_id"`
	Address   string `json:"address"`
	Region    string `json:"region,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Forced    bool   `json:"forced"`
	Unsettled bool   `json:"unsettled,omitempty"`
	Index     uint64 `json:"nomad_index,omitempty"`
	// Peers are the servers of the cluster the volume was handed to, as it named them
	// (store.Handover.Peers): a Nomad naming none of them is another cluster.
	Peers    []string  `json:"nomad_peers,omitempty"`
	HandedAt time.Time `json:"handed_at"`
	// StorageHeldElsewhere: another record of the volume's storage is held here (claimed,
	// staged, attached or handed over: a first handover is refused for it without --force), as
	// the handover found it; said by the command, not kept.
	StorageHeldElsewhere bool `json:"-"`
}

// HandoverTarget is the Nomad cluster a volume is handed over to.
type HandoverTarget struct {
	Address   string
	Region    string
	Namespace string
}

func handoverInfo(h store.Handover) HandoverInfo {
	return HandoverInfo{VolumeID: h.VolumeID, Address: ShownNomadAddress(h.Address), Region: h.Region, Namespace: h.Namespace,
		Forced: h.Forced, Unsettled: h.Unsettled, Index: h.Index, Peers: h.Peers, HandedAt: h.HandedAt}
}

// Register is the registration in Nomad that HandOver runs after the mark, under the
// volume's lock; first says the volume was not marked before, and v is the volume as it is
// then, read under the lock (what to register: a volume read before the lock may have been
// expanded or updated since). It says how the registration ended (Registered).
type Register func(ctx context.Context, first bool, v VolumeInfo) (Registered, error)

// Registered is how a registration ended, for the mark.
//
// The mark is recorded unsettled (store.Handover.Unsettled) before the registration is sent,
// so that a volctl that dies while it is on its way leaves it so, and stays unsettled after a
// registration that ended InFlight, and after one that failed while it was unsettled before (a
// refusal of this one says nothing of the earlier one). A registration Nomad answered OK
// settles it: Nomad applies writes through its Raft log in order, so by its answer an earlier
// registration in its log was applied before or will never be (one still on its way between
// Nomad's servers is in no log yet: no answer of Nomad's rules that out, and volctl takes the
// answered registration as the end of those before it). While a mark is unsettled,
// Nomad's 404 does not take it back (`volctl nomad release` refuses, saying what to run).
type Registered struct {
	// Undo: Nomad certainly did not take the volume; the mark, if first, is taken back.
	Undo bool
	// OK: Nomad answered the registration OK.
	OK bool
	// InFlight: Nomad did not say how the registration ended, and may yet apply it.
	InFlight bool
	// Index is the X-Nomad-Index of Nomad's OK (0: none): the mark keeps the highest.
	Index uint64
	// Peers are the servers of the cluster the registration was sent to, as it named them
	// (none: not asked, or not answered): the mark keeps the last named.
	Peers []string
}

// HandOver marks a volume as handed over to the Nomad cluster at to, under the volume's lock and
// in one transaction with the check of its live claims: a volume that has live local claims is
// refused (ErrConflict naming them) unless force. From the commit on, local claims of it are
// refused. Marking an already handed-over volume again updates the mark (a re-registration).
// The caller marks first and registers in Nomad after, in register (when not nil), which runs
// under the same hold of the volume's lock, so there is no moment in which both volctl and Nomad
// could claim the volume. TakeBack asks Nomad under that lock too, so a take-back racing a
// handover sees Nomad either before the mark or after the registration's outcome, never in
// between: one that asked Nomad before the registration arrived and then removed the mark
// would leave Nomad with the volume and volctl free to claim it.
func (e *Engine) HandOver(ctx context.Context, volumeID string, to HandoverTarget, force bool, register Register) (HandoverInfo, error) {
	return byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (HandoverInfo, error) { return e.handOverStored(ctx, id, to, force, register) })
}

// handOverStored is HandOver of the ID as stored (byStoredID).
func (e *Engine) handOverStored(ctx context.Context, volumeID string, to HandoverTarget, force bool, register Register) (HandoverInfo, error) {
	fail := func(err error) (HandoverInfo, error) {
		return HandoverInfo{}, fmt.Errorf("hand volume %q over to Nomad at %s: %w", volumeID, to.Address, err)
	}
	unlock, err := e.locks.volume(ctx, volumeID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if !force {
		// The refusal of an owed NodeExpandVolume advises from the plugin's fingerprint: its
		// instance's now, as a deregister's (TestNomadRegisterOwedNodeExpansionAdviceReadsThePluginAsItIsNow).
		e.refreshForOwed(ctx, volumeID)
	}
	var h store.Handover
	first, wasUnsettled, heldElsewhere := false, false, false
	err = e.store.Update(ctx, e.locks.holding(volumeID, func(tx *store.Tx) error {
		v, err := tx.Volumes().Get(volumeID)
		if errors.Is(err, store.ErrNotFound) {
			return notFoundf("volume %q not found", volumeID)
		}
		if err != nil {
			return err
		}
		if v.State != store.VolumeReady {
			return notReady(v)
		}
		live, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		prev, err := tx.Handovers().Get(v.ID)
		marked := err == nil
		first = !marked
		// Marked already, the handover was forced past these claims (local claims of a marked
		// volume are refused): the registration again, which its unsettled mark's words name
		// as what finishes it, goes through without --force, as the checks below let it. Before,
		// it was refused for the very claims the first was forced past, and the advice was a
		// dead end (TestUnsettledForcedHandoverFinishesAsAdvised).
		if len(live) > 0 && !force && !marked {
			return conflictf("volume %q has %d live local claim(s): %s; release them first (volctl volume release / group stop), or pass --force to hand it over anyway",
				v.ID, len(live), describeClaims(live))
		}
		elsewhere := false // --force got it past another record of its storage
		// Another record of the volume's storage held here, or handed over already: Nomad's
		// claims of this one would ignore the other's (`TestHandOverOfOneStorageRecordedTwiceIsRefused`).
		// Looked at on a registration again too, for what the command says of it: one forced past
		// before and still held was said to be held by nothing
		// (TestNomadRegisterAgainDoesNotSayAHeldOtherRecordOfItsStorageIsIdle).
		held := refuseStorageInUseElsewhere(tx, v)
		defer func() { heldElsewhere = errors.Is(held, ErrConflict) }()
		if !marked {
			switch err := held; {
			case err != nil && !force:
				return fmt.Errorf("%w; or pass --force to hand it over anyway", err)
			case errors.Is(err, ErrConflict):
				elsewhere = true
			case err != nil:
				return err
			}
		} else if held != nil && !errors.Is(held, ErrConflict) {
			return held
		}
		if marked {
			if err := handoverInfo(prev).Elsewhere(to); err != nil {
				return err
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if len(live) > 0 && !marked {
			if err := attachedUnderClaims(tx, v, live); err != nil {
				return err
			}
		}
		st, owed, err := owedUnpublish(tx, v.ID)
		if err != nil {
			return err
		}
		// Marked already (a re-registration), an owed unpublish is the attachment kept for
		// Nomad when the volume's last local claim went (keptForNomad): reconcile sends it only
		// after the take-back, so it is no reason to refuse.
		if owed && !force && !marked {
			// What sends it, as a deregister says it (owedUnpublishWay): "reconcile once the
			// plugin answers" was advised of a plugin that answered without the capability.
			way, err := owedUnpublishWay(tx, v.PluginID, st.NodeID == "")
			if err != nil {
				return err
			}
			return conflictf("volume %q is still recorded as attached to node %q, a ControllerUnpublishVolume a forced detach could not send (or the plugin lost PUBLISH_UNPUBLISH_VOLUME). %s, then hand it over; or pass --force to hand it over anyway (volctl then sends that unpublish only after the volume is taken back)",
				v.ID, attachedNode(st), way)
		}
		// A NodeExpandVolume owed (sent at the volume's next publish here) is one Nomad never
		// sends: it expands a node's filesystem only while it expands a claimed volume. Marked
		// already, the volume was not expanded since (expand refuses a marked volume).
		if v.NodeExpandMin > 0 && !force && !marked {
			pay, err := payOwedWords(tx, v)
			if err != nil {
				return err
			}
			return conflictf("volume %q is still owed a NodeExpandVolume to %s (plugin %q grew it, and its filesystem on the node grows at the volume's next publish here), which Nomad would never send: its allocs would get the filesystem at the old size; %s; then hand it over; or pass --force to hand it over anyway (the expansion then waits for the volume to be taken back)",
				v.ID, spec.FormatSize(v.NodeExpandMin), v.PluginID, pay)
		}
		// An expansion pending (ControllerExpandVolume sent, its answer not recorded) is one
		// reconcile finishes here, not Nomad: handed over, the volume would be registered at
		// the old size, its node expansion never owed, never sent.
		if v.ExpandMin > 0 && !force && !marked {
			return conflictf("volume %q has an expansion to %s pending (ControllerExpandVolume was sent to plugin %q and its answer not recorded), which Nomad would never finish: run `volctl reconcile` to finish it, then hand it over "+
				"(reconcile needs the plugin to have an EXPAND_VOLUME capability, the controller's or the node's; %s); or pass --force to hand it over anyway (the expansion then waits for the volume to be taken back)",
				v.ID, spec.FormatSize(v.ExpandMin), v.PluginID, pendingExpansionForget(v))
		}
		// A registration about to be sent is unsettled until it ends (Registered); with none,
		// the mark keeps what it said.
		wasUnsettled = marked && prev.Unsettled
		// Forced past any refusal --force is given for, and kept so by a registration again:
		// before, one forced past an owed NodeExpandVolume, a pending expansion or another
		// record of its storage was recorded not forced
		// (TestNomadRegisterForcedPastAnOwedNodeExpansionIsRecordedForced).
		forced := len(live) > 0 || owed || elsewhere || v.NodeExpandMin > 0 || v.ExpandMin > 0 || marked && prev.Forced
		h = store.Handover{VolumeID: v.ID, Address: to.Address, Region: to.Region, Namespace: to.Namespace, Forced: forced,
			Unsettled: wasUnsettled || register != nil}
		if marked {
			h.Index, h.Peers = prev.Index, prev.Peers
		}
		if err := tx.Handovers().Put(&h); err != nil {
			return err
		}
		msg := fmt.Sprintf("volume %q handed over to Nomad at %s", v.ID, to.Address)
		if len(live) > 0 {
			msg += fmt.Sprintf(" despite %d live local claim(s) (forced): %s", len(live), describeClaims(live))
		}
		if owed {
			why := "forced"
			if marked {
				why = "kept for Nomad since it was handed over"
			}
			msg += fmt.Sprintf(" while still recorded as attached to node %q (%s; the ControllerUnpublishVolume owed waits for the volume to be taken back)", attachedNode(st), why)
		}
		// An expansion forced past is said as the attachment is: the handover line said
		// nothing of a file system Nomad's allocs get at its old size
		// (TestNomadRegisterForcedPastAnOwedNodeExpansionSaysSo).
		if w := expansionHandedWith(v); w != "" {
			msg += " " + w
		}
		return tx.Events().Append(&store.Event{Kind: "nomad-handover", VolumeID: v.ID, PluginID: v.PluginID, Message: msg})
	}))
	if errors.Is(err, errLockLost) {
		return fail(fmt.Errorf("%w; nothing was marked nor sent to Nomad: `%s` hands it over once no other volctl is working on the volume",
			err, shellquote.Command("volctl nomad register", volumeID)))
	}
	if err != nil {
		return fail(err)
	}
	if register == nil {
		return handedOver(h, heldElsewhere), nil
	}
	e.failpoint("handover:marked") // the mark committed, unsettled; nothing sent to Nomad yet
	r := Registered{Undo: true}    // a volume that cannot be read was not registered
	v, err := e.Volume(ctx, volumeID)
	if err == nil {
		r, err = register(ctx, first, v)
	}
	e.failpoint("handover:answered") // Nomad answered (or failed), the outcome not recorded
	if err != nil && r.Undo && first {
		// The mark goes even when ctx has ended: Nomad did not take the volume.
		if _, terr := e.removeMark(context.WithoutCancel(ctx), volumeID, "Nomad refused the registration", nil); terr != nil {
			return HandoverInfo{}, fmt.Errorf("%w; taking the handover mark back also failed: %w (run `%s`)", err, terr, shellquote.Command("volctl nomad release", volumeID))
		}
		return HandoverInfo{}, err
	}
	unsettled, index, peers := r.InFlight || (!r.OK && wasUnsettled), max(h.Index, r.Index), h.Peers
	if len(r.Peers) > 0 && (r.OK || r.InFlight) {
		// The cluster Nomad's registration went to (it took it, or may yet).
		peers = r.Peers
	}
	if unsettled != h.Unsettled || index != h.Index || !slices.Equal(peers, h.Peers) {
		// Recorded even when ctx has ended; a failure leaves it unsettled, the safe side.
		// Only while the volume's lock is still held: once it is lost, another volctl may have
		// marked the volume again, with its own registration, whose outcome this would overwrite.
		serr := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(volumeID, func(tx *store.Tx) error {
			return tx.Handovers().SetOutcome(volumeID, unsettled, index, peers)
		}))
		if serr != nil {
			serr = fmt.Errorf("recording how Nomad answered the registration of volume %q failed: %w; its mark stays as it was, unsettled, which `%s` again settles", volumeID, serr, shellquote.Command("volctl nomad register", volumeID))
			return HandoverInfo{}, errors.Join(err, serr)
		}
		h.Unsettled, h.Index, h.Peers = unsettled, index, peers
	}
	if err != nil {
		return HandoverInfo{}, err
	}
	return handedOver(h, heldElsewhere), nil
}

// handedOver is h's HandoverInfo as a handover returns it, saying whether another record of its
// storage is held here.
func handedOver(h store.Handover, storageHeldElsewhere bool) HandoverInfo {
	hi := handoverInfo(h)
	hi.StorageHeldElsewhere = storageHeldElsewhere
	return hi
}

// expansionHandedWith says, of volume v handed over, the expansion it owes that waits for its
// take-back: a NodeExpandVolume (its allocs get the file system at the old size), a
// ControllerExpandVolume whose answer is not recorded. "" when it owes none.
func expansionHandedWith(v store.Volume) string {
	var parts []string
	if v.NodeExpandMin > 0 {
		parts = append(parts, fmt.Sprintf("owed a NodeExpandVolume to %s (its file system is at the old size for Nomad's allocs)", spec.FormatSize(v.NodeExpandMin)))
	}
	if v.ExpandMin > 0 {
		parts = append(parts, fmt.Sprintf("with a ControllerExpandVolume to %s pending, its answer not recorded", spec.FormatSize(v.ExpandMin)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "while " + strings.Join(parts, " and ") + ": it waits for the volume to be taken back"
}

// attachedUnderClaims refuses, --force or not, to hand over a volume whose live local claims
// hold (or, not yet at rest, may take) an attachment: one recorded, or a plugin with
// PUBLISH_UNPUBLISH_VOLUME. Nomad, once it has the volume, sends ControllerUnpublishVolume to
// this node when an alloc's claim of it goes, which it does as soon as the alloc fails to stage
// the volume the local claims hold (volctl's own plugin refuses it that staging): the plugin
// then detaches the volume from under the local claims' mounts. volctl never unpublishes a
// handed-over volume itself, but cannot stop Nomad from doing so; the claims must go first.
func attachedUnderClaims(tx *store.Tx, v store.Volume, live []store.Claim) error {
	how := ""
	if st, err := tx.Stagings().Get(v.ID); err == nil && st.ControllerPublished {
		how = fmt.Sprintf("it is recorded as attached to node %q", attachedNode(st))
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if how == "" {
		p, err := tx.Plugins().Get(v.PluginID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if !slices.Contains(p.Fingerprint.ControllerCaps, "PUBLISH_UNPUBLISH_VOLUME") {
			return nil
		}
		how = fmt.Sprintf("its plugin %q attaches volumes (PUBLISH_UNPUBLISH_VOLUME)", v.PluginID)
	}
	return conflictf("volume %q has %d live local claim(s): %s, and %s: once Nomad has the volume, it sends ControllerUnpublishVolume for this node whenever an alloc's claim of it ends (its allocs here are refused the staging the local claims hold), which would detach the volume from under them, so --force does not hand it over; release them first (volctl volume release / group stop), then hand it over",
		v.ID, len(live), describeClaims(live), how)
}

// NomadFlags are the nomad CLI's flags that name where the volume was handed over (its
// namespace, and region when one was named), for the commands volctl tells people to run
// there: without them, the nomad CLI looks in NOMAD_NAMESPACE's namespace, which may be
// another.
func (h HandoverInfo) NomadFlags() string {
	var f []string
	if h.Namespace != "" {
		f = append(f, shellquote.Flag("-namespace", h.Namespace))
	}
	if h.Region != "" {
		f = append(f, shellquote.Flag("-region", h.Region))
	}
	return strings.Join(f, " ")
}

// NomadCommand is the nomad CLI command `nomad CMD [FLAGS] ARG` on the volume where it was
// handed over (NomadFlags), its words quoted for a shell (shellquote). A mark naming no region
// is the agent's own region's, which the nomad CLI reaches only with NOMAD_REGION unset: the
// command says so (env -u), where from a shell with NOMAD_REGION=eu the deregister went to
// region eu, to another volume by the ID there maybe, the one handed over left
// (TestReleaseRefusalsDeregisterRunsInTheRegionTheVolumeWasHandedOverIn).
func (h HandoverInfo) NomadCommand(cmd, arg string) string {
	c := shellquote.Command(strings.TrimSpace("nomad "+cmd+" "+h.NomadFlags()), arg)
	if h.Region == "" {
		c = "env -u NOMAD_REGION " + c
	}
	return c
}

// Elsewhere is the error (ErrConflict) refusing to hand the volume over to to when its mark
// is for another cluster, or another namespace or region of it (an empty region is the one the
// agent at the address is in, which volctl cannot tell from a region named: it matches only an
// empty one): Nomad would hold the volume twice, and the mark, which `volctl nomad release`
// asks, could name only one. nil when the mark is for to. `volctl nomad register` asks it
// before it asks the other cluster anything; HandOver, in its transaction.
func (h HandoverInfo) Elsewhere(to HandoverTarget) error {
	if h.To(to) {
		return nil
	}
	return conflictf("volume %q is already handed over to %s, not to %s: take it back from there first (%s), or hand it over there again with %s",
		h.VolumeID, handoverWhere(store.Handover{Address: h.Address, Namespace: h.Namespace, Region: h.Region}),
		handoverWhere(store.Handover{Address: to.Address, Namespace: to.Namespace, Region: to.Region}),
		h.TakeBackCommands(), h.environment())
}

// TakeBackCommands is what a person runs to take the volume back from where it was handed over: the
// nomad CLI's deregister there, then `volctl nomad release`, in backquotes. The commands name
// the mark's address, namespace and region themselves: the environment they are pasted into
// may name another cluster or namespace, where a bare `nomad volume deregister` would
// deregister another volume by the ID.
// A mark left unsettled (a registration that ended without Nomad saying how) is settled
// there first, by the registration again: Nomad may not have the volume, and then the
// deregister finds nothing and `volctl nomad release` refuses Nomad's 404 while the mark is
// unsettled (whatToRun says the same to a claim). Before, the refusal of a registration
// elsewhere gave such a mark the deregister and release alone, neither of which worked
// (TestElsewhereAdviceOfAnUnsettledMarkWorks).
func (h HandoverInfo) TakeBackCommands() string {
	addr := h.NomadAddr() + " "
	back := fmt.Sprintf("`%s`, then `%s`%s", addr+h.NomadCommand("volume deregister", h.VolumeID),
		addr+shellquote.Command("volctl nomad release", h.VolumeID), h.CredentialBack())
	if !h.Unsettled {
		return back
	}
	return fmt.Sprintf("%s first, whose answer settles its registration there, which ended without Nomad saying how; then %s",
		h.RegisterAgain(), back)
}

// RegisterAgain is the `volctl nomad register` of the volume where it was handed over, in
// backquotes, the mark's NOMAD_* settings before it (and "(NOMAD_REGION unset)" after it for a
// mark naming no region): run bare from a shell whose NOMAD_NAMESPACE or NOMAD_REGION is
// another, the registration went there and was refused as a handover elsewhere
// (TestReleaseRefusalOfAnUnsettledMarkAdvisesARegistrationThatRunsInThisShell,
// TestNomadStatusUnsettledNoteAdviceRunsAsWrittenInAnotherNamespacesShell).
func (h HandoverInfo) RegisterAgain() string {
	env, unset := h.settings()
	cmd := fmt.Sprintf("`%s %s`", env, shellquote.Command("volctl nomad register", h.VolumeID))
	if unset {
		cmd += " (NOMAD_REGION unset)"
	}
	return cmd + h.CredentialBack()
}

// environment is the NOMAD_* settings under which `volctl nomad register` names where the
// volume was handed over (To), for a person to set. A mark with no region matches only a
// registration that names none, NOMAD_REGION naming the agent's own region included, so
// it says to unset it.
func (h HandoverInfo) environment() string {
	env, unset := h.settings()
	if !unset {
		return env
	}
	return env + " with NOMAD_REGION unset (no region was named when it was handed over: the agent's own)" + h.CredentialBack()
}

// settings is environment's NOMAD_ADDR, NOMAD_NAMESPACE and NOMAD_REGION settings, as a
// shell takes them before a command, and whether NOMAD_REGION is to be unset instead.
func (h HandoverInfo) settings() (env string, unsetRegion bool) {
	env = h.NomadAddr()
	if h.Namespace != "" {
		env += " NOMAD_NAMESPACE=" + shellquote.Arg(h.Namespace)
	}
	if h.Region != "" {
		return env + " NOMAD_REGION=" + shellquote.Arg(h.Region), false
	}
	return env, true
}

// NomadAddr is NOMAD_ADDR=ADDRESS, the mark's address quoted for a shell, for advice to run a
// command where the volume was handed over; the address is the one shown (ShownNomadAddress),
// so a credential in it is xxxxx, which CredentialBack says to put back.
func (h HandoverInfo) NomadAddr() string { return "NOMAD_ADDR=" + shellquote.Arg(h.Address) }

// CredentialBack is, for advice built from NomadAddr, " (put the credential ... in place of
// xxxxx)" when the mark's address holds a hidden one, else empty: pasted as written, the
// command would send the literal xxxxx as the user to Nomad (or its proxy).
func (h HandoverInfo) CredentialBack() string {
	if !strings.Contains(h.Address, hiddenCredential+"@") {
		return ""
	}
	return " (with the credential of that address, which volctl does not show, in place of " + hiddenCredential + ")"
}

// hiddenCredential stands for a user and password in an address volctl shows.
const hiddenCredential = nomadaddr.Hidden

// ShownNomadAddress is a Nomad address as volctl shows it (nomadaddr.Shown): what may be a
// user and password before its host as xxxxx, and what may be a secret after it.
func ShownNomadAddress(addr string) string { return nomadaddr.Shown(addr) }

// shownNomadAddressesIn is msg, an event's message, with the address after each "Nomad at "
// shown as ShownNomadAddress shows it (nomadaddr.InMessage).
func shownNomadAddressesIn(msg string) string { return nomadaddr.InMessage(msg) }

// HiddenNomadPathAndQuery is addr with what may be a secret after its host as xxxxx
// (nomadaddr.HiddenPathAndQuery).
func HiddenNomadPathAndQuery(addr string) string { return nomadaddr.HiddenPathAndQuery(addr) }

// To reports whether the volume is handed over to the cluster, namespace and region of to,
// as HandOver requires of a volume handed over already (an empty region matches only an
// empty one).
func (h HandoverInfo) To(to HandoverTarget) bool {
	return SameNomadAddress(h.Address, to.Address) && h.Namespace == to.Namespace && h.Region == to.Region
}

// SameNomadAddress reports whether two Nomad addresses (NOMAD_ADDR's, a handover's) reach the
// same agent, as Nomad's API client reaches them: it uses an address's scheme, host and port
// only (the path is dropped, a user and password are credentials, not a place), a scheme and
// host name compare case-insensitively, an IP address in its canonical form, and no port is
// the scheme's default (80 for http, 443 for https). A unix:// address is its socket's path.
// Addresses that name another scheme, host or port are other agents (volctl resolves no
// name: localhost and 127.0.0.1 are two); one that does not parse matches only itself.
func SameNomadAddress(a, b string) bool { return nomadAddressKey(a) == nomadAddressKey(b) }

func nomadAddressKey(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return addr
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "unix" {
		return "unix://" + u.Host + path.Clean("/"+u.Path)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
	}
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// handoverWhere names where a volume was handed over: the address, and the namespace and
// region when they were set.
// Where names the cluster, namespace and region the volume was handed over to, for messages:
// "Nomad at ADDR (namespace team, region eu)".
func (h HandoverInfo) Where() string {
	return handoverWhere(store.Handover{Address: h.Address, Namespace: h.Namespace, Region: h.Region})
}

func handoverWhere(h store.Handover) string {
	var in []string
	if h.Namespace != "" {
		in = append(in, "namespace "+h.Namespace)
	}
	if h.Region != "" {
		in = append(in, "region "+h.Region)
	}
	if len(in) == 0 {
		return "Nomad at " + ShownNomadAddress(h.Address)
	}
	return fmt.Sprintf("Nomad at %s (%s)", ShownNomadAddress(h.Address), strings.Join(in, ", "))
}

// TakeBackResult is what TakeBack did.
type TakeBackResult struct {
	Had bool // there was a mark (removed unless the error says otherwise)
	// PluginID is the volume's plugin; Size what it said of the volume's size, and SizeErr
	// why it said nothing (ErrSizeNotAnswered: the plugin's failure), the take-back done all
	// the same.
	PluginID string
	Size     SizeCheck
	SizeErr  error
}

// TakeBack removes a volume's handover mark, so volctl may claim it again, when check, called
// with the mark under the volume's lock, says why it may go (Nomad no longer has the volume);
// check's error is returned as it is, and the mark stays. It reports whether there was a mark;
// check is not called when there is none. The lock keeps a handover (HandOver) from
// registering the volume between check's question and the mark's removal.
//
// Once check lets the mark go, and before it goes, the plugin is asked what size the volume
// has (askSize; not a plugin skip, when set, gives a reason not to ask, which is then SizeErr),
// and a larger size is recorded, with the node expansion it owes, in the commit that removes
// the mark (handover_size.go). Before, the mark went first and the size was asked by another
// call after: a volctl that died in between (killed, a power loss, SIGPIPE from the reader of
// its output gone) or whose "Took volume back" line could not be printed left the record at the
// size handed over for good, no node expansion owed and nothing saying so
// (TestNomadReleaseWhoseLineCannotBePrintedStillRecordsTheSize). Now a kill before the commit
// leaves the mark, and the next `volctl nomad release` asks both again.
func (e *Engine) TakeBack(ctx context.Context, volumeID string, check func(HandoverInfo) (why string, err error), skip func(pluginID string) error) (TakeBackResult, error) {
	return byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (TakeBackResult, error) {
		return e.takeBackStored(ctx, id, check, skip)
	})
}

// takeBackStored is TakeBack of the ID as stored (byStoredID).
func (e *Engine) takeBackStored(ctx context.Context, volumeID string, check func(HandoverInfo) (why string, err error), skip func(string) error) (TakeBackResult, error) {
	unlock, err := e.locks.volume(ctx, volumeID)
	if err != nil {
		return TakeBackResult{}, fmt.Errorf("take volume %q back from Nomad: %w", volumeID, err)
	}
	defer unlock()
	h, had, err := e.handedOver(ctx, volumeID)
	if err != nil {
		return TakeBackResult{}, err
	}
	if !had {
		// No mark: a volume that is not stored under this ID is not found (byStoredID then
		// looks for it under another normal form), rather than said not to be handed over.
		return TakeBackResult{}, e.store.View(ctx, func(tx *store.Tx) error {
			_, err := tx.Volumes().Get(volumeID)
			if errors.Is(err, store.ErrNotFound) {
				return notFoundf("volume %q not found", volumeID)
			}
			return err
		})
	}
	why, err := check(handoverInfo(h))
	if err != nil {
		return TakeBackResult{Had: true}, err
	}
	r := TakeBackResult{Had: true}
	var v store.Volume
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		v, err = tx.Volumes().Get(volumeID)
		return err
	}); err != nil {
		return r, fmt.Errorf("take volume %q back from Nomad: %w", volumeID, err)
	}
	r.PluginID = v.PluginID
	r.Size, r.SizeErr = e.askSize(ctx, v, skip)
	var grow func(*store.Tx) error
	if r.SizeErr == nil && r.Size.Listed > currentSize(v) {
		grow = func(tx *store.Tx) error { return recordListedSize(tx, v, &r.Size) }
	}
	e.failpoint("takeback:size-asked")
	r.Had, err = e.removeMark(ctx, volumeID, why, grow)
	return r, err
}

// removeMark deletes a volume's handover mark, with a nomad-release event saying why, and runs
// also (when set) in the same transaction; the caller holds the volume's lock, and the mark goes
// only while it still does (locker.holding): once the lock file is removed, another volctl may
// have registered the volume in Nomad again since the caller asked Nomad, and the mark is that
// registration's.
func (e *Engine) removeMark(ctx context.Context, volumeID, why string, also func(*store.Tx) error) (bool, error) {
	had := true
	err := e.store.Update(ctx, e.locks.holding(volumeID, func(tx *store.Tx) error {
		h, err := tx.Handovers().Get(volumeID)
		if errors.Is(err, store.ErrNotFound) {
			had = false
			return nil
		}
		if err != nil {
			return err
		}
		if err := tx.Handovers().Delete(volumeID); err != nil {
			return err
		}
		// The event names the volume's plugin, as the handover's does: `events --plugin`
		// showed a volume handed to Nomad and never taken back
		// (TestNomadReleaseEventNamesThePlugin). A mark outliving its volume names none.
		var pluginID string
		if v, err := tx.Volumes().Get(volumeID); err == nil {
			pluginID = v.PluginID
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Events().Append(&store.Event{Kind: "nomad-release", VolumeID: volumeID, PluginID: pluginID,
			Message: fmt.Sprintf("volume %q taken back from Nomad at %s: %s", volumeID, ShownNomadAddress(h.Address), why)}); err != nil {
			return err
		}
		if also != nil {
			return also(tx)
		}
		return nil
	}))
	if errors.Is(err, errLockLost) {
		return false, fmt.Errorf("take volume %q back from Nomad: %w; its handover mark stays: `%s` asks Nomad again once no other volctl is working on the volume",
			volumeID, err, shellquote.Command("volctl nomad release", volumeID))
	}
	if err != nil {
		return false, fmt.Errorf("take volume %q back from Nomad: %w", volumeID, err)
	}
	return had, nil
}

// Handovers returns the handover marks, of one volume when volumeID is set (none when it has
// none).
func (e *Engine) Handovers(ctx context.Context, volumeID string) ([]HandoverInfo, error) {
	var out []HandoverInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		if volumeID != "" {
			h, err := tx.Handovers().Get(volumeID)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err == nil {
				out = append(out, handoverInfo(h))
			}
			return err
		}
		all, err := tx.Handovers().List()
		for _, h := range all {
			out = append(out, handoverInfo(h))
		}
		return err
	})
	return out, err
}

// handedOver returns a volume's handover mark; ok is false when it has none.
func (e *Engine) handedOver(ctx context.Context, volumeID string) (h store.Handover, ok bool, err error) {
	err = e.store.View(ctx, func(tx *store.Tx) error {
		h, err = tx.Handovers().Get(volumeID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return h, false, nil
	}
	return h, err == nil, err
}

// keptForNomad is what volctl says when it does not send ControllerUnpublishVolume because the
// volume is handed over: Nomad's allocs on the node may be using that attachment, which is
// Nomad's to undo now. The record stays, so that reconcile sends the unpublish once the volume
// is taken back (and Nomad, which no longer has it then, has let go of it).
func keptForNomad(v store.Volume, node string, h store.Handover, blocked string) string {
	return fmt.Sprintf("ControllerUnpublishVolume of volume %q from node %q not sent: the volume is handed over to Nomad at %s, whose allocations on that node may use the attachment; volctl keeps it recorded, and `volctl reconcile` sends it once the volume is taken back (`%s`)%s",
		v.ID, node, ShownNomadAddress(h.Address), shellquote.Command("volctl nomad release", v.ID), blocked)
}

// whatToRun says what takes the volume back from Nomad. While the mark is unsettled, Nomad
// may not have the volume (a volctl killed before its registration reached Nomad), so a
// deregister there may find nothing, and `volctl nomad release` refuses Nomad's 404 until Nomad
// answers a registration: the registration again comes first.
func (h HandoverInfo) whatToRun() string {
	deregister, release := h.NomadCommand("volume deregister", h.VolumeID), shellquote.Command("volctl nomad release", h.VolumeID)
	if h.Unsettled {
		return fmt.Sprintf("%s again finishes the handover (Nomad's answer settles it); to take it back instead, after that, `%s`, then `%s`",
			h.RegisterAgain(), deregister, release)
	}
	return fmt.Sprintf("after `%s`, take it back with `%s`", deregister, release)
}

// UnsettledWhy says, of a volume whose mark is unsettled (after "but"), what that means and
// what to run.
func (h HandoverInfo) UnsettledWhy() string {
	return "a registration of it is on its way or ended without Nomad saying how (volctl interrupted, or Nomad not answering it), so Nomad may have it or yet apply it: " + h.whatToRun()
}

// refuseHandedOver is admission's check, in its transaction: a volume handed over to Nomad is
// claimed by Nomad only.
func refuseHandedOver(tx *store.Tx, volumeID string) error {
	h, err := tx.Handovers().Get(volumeID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	info := handoverInfo(h)
	if h.Unsettled {
		return conflictf("volume %q is handed over to Nomad at %s (since %s), but %s",
			volumeID, info.Address, h.HandedAt.UTC().Format(time.RFC3339), info.UnsettledWhy())
	}
	return conflictf("volume %q is handed over to Nomad at %s (since %s): Nomad claims it, not volctl; %s",
		volumeID, info.Address, h.HandedAt.UTC().Format(time.RFC3339), info.whatToRun())
}

// GroupSpecs returns the recorded specs of the named groups, or of every group when names is
// empty, raw mount flags included (for export).
func (e *Engine) GroupSpecs(ctx context.Context, names ...string) ([]spec.Group, error) {
	var out []spec.Group
	err := e.store.View(ctx, func(tx *store.Tx) error {
		if len(names) == 0 {
			all, err := tx.Groups().List()
			for _, g := range all {
				out = append(out, g.Spec)
			}
			return err
		}
		for _, n := range names {
			g, err := tx.Groups().Get(n)
			if errors.Is(err, store.ErrNotFound) {
				// A group an older volctl stored in another normal form (byStoredID).
				stored, ferr := storedForm(tx, store.GroupNames, n)
				if ferr != nil {
					return ferr
				}
				if stored == "" {
					return notFoundf("group %q not found (volctl group status lists the groups)", n)
				}
				g, err = tx.Groups().Get(stored)
			}
			if err != nil {
				return err
			}
			out = append(out, g.Spec)
		}
		return nil
	})
	return out, err
}

// StorageHeldElsewhere is the refusal a claim or a handover of volume id meets while another
// volume recorded here on its storage holds it (refuseStorageInUseElsewhere), and that volume's
// ID, or nil: what `nomad register --dry-run` says of it, as the handover would.
func (e *Engine) StorageHeldElsewhere(ctx context.Context, id string) (other string, err error) {
	err = e.store.View(ctx, func(tx *store.Tx) error {
		v, err := tx.Volumes().Get(id)
		if err != nil {
			return err
		}
		return refuseStorageInUseElsewhere(tx, v)
	})
	if h := (*heldElsewhere)(nil); errors.As(err, &h) {
		other = h.other
	}
	return other, err
}
