package nomad

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// ErrOtherVolume matches a registration not sent because Nomad has a volume by that ID, in that
// namespace, that is another one (another plugin or external ID): someone else's.
var ErrOtherVolume = errors.New("has another volume by that ID")

// askAfterFailure bounds the questions volctl asks Nomad beside a command's own requests
// (question): whether it has the volume, after a registration failed (even after Ctrl-C), and
// its cluster's leader and servers.
var askAfterFailure = 10 * time.Second

// question is c for a question bounded by askAfterFailure (or c's own timeout when shorter):
// the bound is its requests' timeout, so that one unanswered says the time it was given (said),
// not a request's minute. The copy shares c's notes (what Nomad answered, its stopping).
func (c *Client) question() *Client {
	ask := *c
	ask.Timeout = min(c.timeout(), askAfterFailure)
	return &ask
}

// Handed is what HandOver did.
type Handed struct {
	// Warnings are Nomad's, credentials and secrets replaced.
	Warnings string
	// Updated: Nomad had the volume before (an update).
	Updated bool
	// Undo: Nomad certainly does not have the volume, so a mark made for this registration
	// goes.
	Undo bool
	// OK: Nomad answered the registration OK.
	OK bool
	// InFlight: Nomad did not say how the registration ended, and may yet apply it
	// (engine.Registered): the mark stays, unsettled.
	InFlight bool
	// Index is the X-Nomad-Index of Nomad's OK (0: none).
	Index uint64
	// Unchecked says what volctl could not check before the registration (Nomad refused to
	// list its volumes: TwinsUnchecked), for a note; empty when it checked.
	Unchecked string
	// Plugin is the volume's plugin's health as Nomad's read-back of it said (Nomad answers a
	// volume with its plugin's health as of the read): set when the registration was read
	// back as sent.
	Plugin *PluginHealth
	// Before is Nomad's copy of the volume as read before the registration (nil when Nomad
	// had none): what an update replaced (Changes), for the command to say.
	Before *VolumeState
	// Peers are the servers of the cluster that answered the handover, as it named them
	// (Peers; none when it did not): the mark keeps them (engine.Registered.Peers).
	Peers []string
}

// HandOver registers v in Nomad for a handover (engine.HandOver's Register): first says the
// volume was not marked handed over before. The error names the volume, the address, and
// what to run.
//
//   - Nomad's copy is read first: one that is another volume (Identity) is not overwritten;
//     nothing is sent, and the error matches ErrOtherVolume. Nor is one registered whose
//     storage Nomad has as another volume (Twins: another ID, or this ID in another
//     namespace); the error matches ErrSameStorage.
//   - A registration Nomad answered OK is read back, and must be what was sent (ID,
//     namespace, plugin and external ID, capabilities, capacity, topology): one that is not stays
//     marked (Nomad said it took it), with an error saying what differs; one Nomad then says
//     it has no such volume goes.
//   - A registration that failed, answered or not (a 500 may come after Nomad took it), of a
//     volume not marked before: Nomad is asked whether it has the volume. The mark goes when
//     Nomad has another volume by the ID, or the registration was refused for certain (a 4xx,
//     a redirect, or never sent: nothing applied) and Nomad does not have it, or when Nomad
//     says it has none (its own 404) after answering the registration with an error it
//     returns only for a registration it did not apply (settled). A registration Nomad did
//     not answer (the connection lost after it was sent, the timeout, Ctrl-C, a gateway's
//     502/503/504), or answered with any other error (a Raft or RPC failure after which it
//     may still apply it, or one volctl does not know), keeps the mark, unsettled (InFlight),
//     whatever Nomad says it has now, unless Nomad has another volume by the ID after a
//     settled one, and the error says what to run to finish or take it back (hasNot).
//
// marked are the servers of the cluster a volume marked from before (not first) was handed to,
// as the mark recorded them (engine.HandoverInfo.Peers): a Nomad that names none of them as
// its servers is another cluster (a balancer that keeps a client on one cluster moved this one
// to another), and nothing is sent; the error matches ErrOtherCluster.
func (c *Client) HandOver(ctx context.Context, v spec.Volume, first bool, marked []string) (Handed, error) {
	ns := c.namespaceFor(v)
	// The cluster's leader, asked twice in a row before anything else: two questions in a row
	// reach two clusters behind a balancer that sends each request to the next one, whatever
	// their number, where two questions around other requests may reach one (leaderTwice).
	// Then no answer of this command can be tied to one cluster: nothing is sent.
	before, crossed, err := c.leaderTwice(ctx)
	if err != nil {
		return Handed{Undo: true}, fmt.Errorf("volume %q: %w", v.ID, err) // nothing sent
	}
	if crossed != "" {
		way := fmt.Sprintf("set NOMAD_ADDR to one cluster's own servers (and NOMAD_REGION to its region) and run `%s` again there", volctl("register", v.ID))
		if !first {
			// Marked for this address from before: a registration elsewhere is refused
			// (engine.HandoverInfo.Elsewhere), and a release through it cannot tell the
			// clusters apart either (VolumeOfOneCluster).
			way = c.crossedWayOut(ns, v.ID)
		}
		return Handed{Undo: true}, fmt.Errorf("volume %q: Nomad at %s: %s, so volctl cannot tell which cluster would take the registration nor trust what it reads back: nothing was sent; %s",
			v.ID, c.Address, crossed, way)
	}
	// The cluster's servers, asked right after its leader: the mark keeps them, and a later
	// command (a take-back, a registration again) through a balancer that keeps a client on one
	// cluster, and has since moved it to another, meets servers none of which are these.
	// Asked only of a Nomad that named its leader: one that does not (a proxy that passes only
	// the volume API, a token gone) names no servers either.
	var peers []string
	if before != "" {
		peers = c.Peers(ctx, c.Region)
	}
	if !first && OtherCluster(marked, peers) {
		return Handed{Undo: true}, &otherClusterError{fmt.Errorf("volume %q: Nomad at %s %s, so a registration through it would go to another cluster than the one that has the volume: nothing was sent; %s",
			v.ID, c.Address, c.otherClusterWords(marked, peers), c.crossedWayOut(ns, v.ID))}
	}
	// No second volume of its storage is made: Nomad's volume of it under another ID, or of
	// this ID in another namespace, is not this one, and Nomad's allocs of the two would use
	// one storage at once.
	twins, terr := c.Twins(ctx, v, ns)
	unchecked := ""
	switch {
	case errors.Is(terr, ErrPermissionDenied):
		unchecked = c.TwinsUnchecked(v)
	case terr != nil:
		return Handed{Undo: true}, terr // nothing sent
	case len(twins) > 0:
		return Handed{Undo: true}, c.TwinsError(v, ns, twins)
	}
	have, err := c.VolumeIn(ctx, v.ID, ns, c.Region)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return Handed{Undo: true}, err // nothing sent; VolumeIn's error names the volume
	default:
		if d := c.Identity(have, v); len(d) > 0 && !first {
			// Marked from before: Nomad's volume of the ID is someone else's now, and leaving
			// this volume to volctl is no way (it claims nothing marked), nor is deregistering
			// that one. Said as a registration refused so says it (othersCopy): before, the
			// deregister was advised (TestNomadRegisterAgainOverAnotherVolumeNamesTheWayBack).
			return Handed{Undo: true}, fmt.Errorf("volume %q: Nomad at %s %w in namespace %s, with %s: nothing was sent%s",
				v.ID, c.Address, ErrOtherVolume, ns, c.shown(strings.Join(d, ", "), v), c.othersCopy(v, ns))
		} else if len(d) > 0 {
			return Handed{Undo: true}, fmt.Errorf("volume %q: Nomad at %s %w in namespace %s, with %s: not volctl's to update (volctl registers it with its own); deregister that one there first (`%s`) if it is no one's, or leave this volume to volctl",
				v.ID, c.Address, ErrOtherVolume, ns, c.shown(strings.Join(d, ", "), v), c.nomadCmd("volume deregister", ns, v.ID))
		}
	}
	out := Handed{Updated: err == nil, Unchecked: unchecked, Peers: peers}
	if out.Updated {
		out.Before = &have
	}
	if out.Updated && len(v.Context) == 0 && len(have.Context) > 0 {
		// A volume volctl has no context for, whose copy in Nomad has one (the plugin's, from
		// `nomad volume create`, or written there): Nomad 1.9.6 and later keep it when an
		// update sends none, earlier ones (1.8.10 and 1.7.18 Enterprise aside) clear it, and
		// the plugin's node calls may need it. Sent back, it is kept by both.
		v.Context = maps.Clone(have.Context)
	}
	// The cluster's leader before the registration (asked above), and again after it is read
	// back: two clusters behind one balancer answer at one address, and a registration one
	// took and a read-back the other answered proves nothing of either (crossedClusters).
	warnings, index, err := c.register(ctx, v)
	if err == nil || inFlight(err) {
		// Nomad has it now, or may yet: a later volume of this command of the same storage
		// is its twin (Twins lists Nomad's volumes once per command).
		c.tookStorage(v, ns)
	}
	if err != nil {
		if !first { // marked from before: the mark stays whatever happened
			out.Undo, out.InFlight = true, inFlight(err)
			switch refusalOf(err) {
			case copyRefused:
				err = fmt.Errorf("%w%s", err, c.keptCopy(v, ns))
			case otherVolume:
				err = fmt.Errorf("%w%s", err, c.othersCopy(v, ns))
			case updateFailed:
				err = fmt.Errorf("%w%s", err, updateFailedAdvice(v))
			}
			if out.InFlight {
				err = fmt.Errorf("%w; it stays marked handed over, and until Nomad answers a registration of it OK, Nomad's word that it has no such volume does not take it back (Nomad may yet apply this one): `%s` again settles it", err, volctl("register", v.ID))
			}
			return out, err
		}
		out.Undo, out.InFlight, err = c.hasNot(ctx, v, ns, out.Updated, err)
		return out, err
	}
	out.OK, out.Index = true, index
	out.Warnings = c.shown(warnings, v)
	got, gerr := c.VolumeIn(ctx, v.ID, ns, c.Region)
	if crossed := c.crossedClusters(ctx, before, "the registration"); crossed != "" && (gerr == nil || errors.Is(gerr, ErrNotFound)) {
		// Which cluster took the registration, and which one answered the read, is not
		// known: neither Nomad's copy nor its 404 settles it. The mark stays, unsettled, so
		// that no later word of the other cluster's ("no such volume") takes it back while the
		// one that took it may use the volume.
		out.InFlight = true
		return out, fmt.Errorf("volume %q: Nomad at %s answered the registration OK at index %d, but %s, so volctl cannot tell which cluster took it nor trust the read-back (%s); %s",
			v.ID, c.Address, index, crossed, readBackWords(gerr), c.crossedWayOut(ns, v.ID))
	}
	switch {
	case errors.Is(gerr, ErrNotFound) && IndexOf(gerr) < index:
		// A state older than the one Nomad applied the registration in (X-Nomad-Index going
		// backwards): not Nomad's word on it.
		return out, fmt.Errorf("volume %q: Nomad at %s answered the registration OK at index %d, then said it has no volume %q in namespace %s at index %d, from a state before the registration: not its word on it (another server or cluster answers at NOMAD_ADDR, or one restored from an older snapshot); it stays marked handed over, as Nomad said it took it: see `%s`, and run `%s` again against the Nomad that has it",
			v.ID, c.Address, index, v.ID, ns, IndexOf(gerr), c.nomadCmd("volume status", ns, v.ID), volctl("register", v.ID))
	case errors.Is(gerr, ErrNotFound):
		mark := "volctl took its handover mark back"
		if !first {
			mark = fmt.Sprintf("it stays marked handed over from before: `%s` takes it back", volctl("release", v.ID))
		}
		out.Undo = true
		if index > 0 && IndexOf(gerr) > index {
			// From a state after the one Nomad applied the registration in: it took the
			// volume, and something deregistered it since.
			return out, fmt.Errorf("volume %q: Nomad at %s answered the registration OK at index %d, then said at index %d that it has no volume %q in namespace %s: it was deregistered there since, by someone or something other than this command (`nomad volume deregister`, Terraform) (%s); run `%s` again to hand it over anew once that is settled",
				v.ID, c.Address, index, IndexOf(gerr), v.ID, ns, mark, volctl("register", v.ID))
		}
		return out, fmt.Errorf("volume %q: Nomad at %s answered the registration OK, then says it has no volume %q in namespace %s: it did not register it (%s); check Nomad (or what answers at NOMAD_ADDR) and run `%s` again",
			v.ID, c.Address, v.ID, ns, mark, volctl("register", v.ID))
	case gerr != nil:
		return out, fmt.Errorf("volume %q: Nomad at %s answered the registration OK, but reading it back failed: %v; it stays marked handed over, as Nomad said it took it: `%s` shows Nomad's copy, and `%s` again registers and checks it anew",
			v.ID, c.Address, gerr, volctl("status", v.ID), volctl("register", v.ID))
	}
	if d := c.differs(got, v); len(d) > 0 {
		again := fmt.Sprintf("`%s` again sends it anew", volctl("register", v.ID))
		if len(Kept(got, v)) > 0 {
			// Registered before without one: no registration gives it one now (Kept).
			again = fmt.Sprintf("Nomad keeps the topology a volume was first registered with, none here, whatever a registration sends, so its allocs may be placed on nodes that cannot reach it: once none uses it, `%s`, then `%s` again registers it anew with volctl's",
				c.nomadCmd("volume deregister", ns, v.ID), volctl("register", v.ID))
		}
		return out, fmt.Errorf("volume %q: Nomad at %s answered the registration OK, but has it with %s; it stays marked handed over, as Nomad said it took it, so volctl does not claim it: see `%s`; %s, and once Nomad has let go of it (nomad volume deregister), `%s` takes it back",
			v.ID, c.Address, c.shown(strings.Join(d, ", "), v), c.nomadCmd("volume status", ns, v.ID),
			again, volctl("release", v.ID))
	}
	out.Plugin = &got.Plugin
	return out, nil
}

// hasNot asks Nomad, after the registration of a volume not marked before failed with err,
// whether it has the volume: undo when it certainly does not, in flight when Nomad may yet
// apply the registration (the mark stays unsettled), and the error to report. updated says
// Nomad had the volume before the registration.
//
// Nomad's 404 settles it only for a registration whose outcome Nomad said (settled): one it
// did not answer, or answered with an error that may come before the write is applied, may
// still be applied after that 404. Nomad applies a write through its Raft log, and answers a
// read from its state as applied so far, without waiting for a write in flight (the request
// still on its way to the leader, its entry appended but not committed, or committed by a
// leader elected after the one that took it).
func (c *Client) hasNot(ctx context.Context, v spec.Volume, ns string, updated bool, err error) (undo, inflight bool, _ error) {
	inflight = inFlight(err)
	// Asked even after Ctrl-C, within its own bound (question), so that an unanswered
	// question says so, not that it was interrupted.
	have, gerr := c.question().VolumeIn(context.WithoutCancel(ctx), v.ID, ns, c.Region)
	switch {
	case gerr == nil && len(c.Identity(have, v)) > 0 && !inflight:
		// Another volume by the ID: not this one, and Nomad's state store refused to apply a
		// registration that would change its plugin or external ID.
		return true, false, err
	case gerr == nil && len(c.Identity(have, v)) > 0:
		// Nomad's state store refuses this registration while that volume is there, but one
		// still in flight would be applied once that one is deregistered: not proof.
		return false, true, fmt.Errorf("%w; Nomad has another volume by the ID %q in namespace %s now (%s), which it does not let a registration change, but it may yet apply this one, whose outcome it did not say, once that one is deregistered; so volume %q stays marked handed over and volctl does not claim it (do not `nomad volume deregister` that one for volctl: it is someone else's): once Nomad is done with that request, and nothing in Nomad uses this volume's storage, `%s` takes it back",
			err, v.ID, ns, c.shown(strings.Join(c.Identity(have, v), ", "), v), v.ID, volctl("release --force", v.ID))
	case gerr == nil && updated && refusalOf(err) == copyRefused:
		// Nomad had it before, and refused to change its copy so: the same registration is
		// refused again. Nomad has the storage, so the mark stays.
		return false, false, fmt.Errorf("%w; Nomad has volume %q (namespace %s) from before, so it stays marked handed over and volctl does not claim it%s",
			err, v.ID, ns, c.keptCopy(v, ns))
	case gerr == nil:
		// Nomad has it: when it had not before, this registration is what it applied (settled).
		inflight = inflight && updated
		undo := "to take it back, `" + c.nomadCmd("volume deregister", ns, v.ID) + "`, then `" + volctl("release", v.ID) + "`"
		if inflight {
			undo = "to take it back, after that, `" + c.nomadCmd("volume deregister", ns, v.ID) + "`, then `" + volctl("release", v.ID) + "` (Nomad may yet apply the update it did not answer, so release waits for one it answers)"
		}
		has := "nonetheless"
		if updated {
			has = "from before"
		}
		return false, inflight, fmt.Errorf("%w; Nomad has volume %q (namespace %s) %s, so it stays marked handed over and volctl does not claim it: `%s` again updates it; %s",
			err, v.ID, ns, has, volctl("register", v.ID), undo)
	case refusedForCertain(err):
		return true, false, err
	case errors.Is(gerr, ErrNotFound) && !inflight:
		return true, false, err
	case errors.Is(gerr, ErrNotFound):
		return false, true, fmt.Errorf("%w; Nomad says it has no volume %q (namespace %s) now, but it may yet apply a registration whose outcome it did not say (it applies writes through its Raft log, and answers a read without waiting for one in flight), so the volume stays marked handed over and volctl does not claim it, nor does `volctl nomad release` on that word until Nomad answers a registration of it: `%s` again finishes the handover (`%s` says whether Nomad took it meanwhile); to take it back instead, after that, `%s`, then `%s`",
			err, v.ID, ns, volctl("register", v.ID), c.nomadCmd("volume status", ns, v.ID), c.nomadCmd("volume deregister", ns, v.ID), volctl("release", v.ID))
	}
	if inflight {
		return false, true, fmt.Errorf("%w; volume %q stays marked handed over, so volctl does not claim it while Nomad may have it or yet apply the registration (asking it failed too: %v): `%s` again, once Nomad answers, settles it (`%s` shows Nomad's copy)",
			err, v.ID, gerr, volctl("register", v.ID), volctl("status", v.ID))
	}
	return false, false, fmt.Errorf("%w; volume %q stays marked handed over, so volctl does not claim it while Nomad may have it (asking it failed too: %v): `%s` shows whether Nomad has it, and `%s` takes it back once Nomad says it has not",
		err, v.ID, gerr, volctl("status", v.ID), volctl("release", v.ID))
}

// ErrUpdateRefused matches a registration Nomad refused because its copy of the volume, which
// it had before, conflicts with it (refusalOf: copyRefused or otherVolume): a conflict (exit
// 4), as --dry-run says of it, which the same registration meets again until one side changes.
var ErrUpdateRefused = errors.New("refuses to change its copy of the volume so")

// refusal is what Nomad's 500 to a registration of a volume it had says of its copy
// (refusalOf).
type refusal int

const (
	// notRefused: no refusal of the update (another error).
	notRefused refusal = iota
	// copyRefused: CSIVolume.Register's "unable to update volume: " for what this volume's
	// copy has (Merge's immutable name, parameters and topology request, mount options or
	// capabilities while in use; expandVolume's capacity below the copy's, or a controller
	// that cannot expand): the same registration is refused again, whose way on is
	// deregistering the copy (keptCopy).
	copyRefused
	// otherVolume: the copy is another volume (Merge's "volume external ID cannot be
	// updated" or "volume plugin ID cannot be updated", the state store's "volume identity
	// cannot be updated: "): refused again too, but someone else's, whose deregistration
	// volctl must not advise (othersCopy).
	otherVolume
	// updateFailed: "unable to update volume: " for anything else, the plugin's
	// ControllerExpandVolume or NodeExpandVolume failing as Nomad's register grows the
	// volume ("unable to expand volume: ...": a controller restarting, a client gone), which
	// a later run may not meet: Nomad applied nothing (updateFailedAdvice).
	updateFailed
)

// copyRefusals are the reasons of Nomad's "unable to update volume: " that refuse what this
// volume's copy has, for good (copyRefused): Merge's (nomad/structs/csi.go) and expandVolume's
// (nomad/csi_endpoint.go), as prefixes.
var copyRefusals = []string{
	"volume name cannot be updated",
	"volume clone ID cannot be updated",
	"volume snapshot ID cannot be updated",
	"volume requested capabilities update was not compatible with existing capability in use",
	"volume topology request update was not compatible with existing topology",
	"can not update mount options while volume is in use",
	"volume parameters cannot be updated",
	"max requested capacity (",
	"expand is not implemented by this controller plugin",
}

// identityRefusals are Merge's reasons that say Nomad's copy is another volume (otherVolume).
var identityRefusals = []string{
	"volume external ID cannot be updated",
	"volume plugin ID cannot be updated",
}

// refusalOf says what err, Nomad's 500 to a registration, refuses (refusal). Merge answers
// its reasons as a list ("N errors occurred:" and a "\t* " line for each): the registration is
// copyRefused when each is one of copyRefusals, otherVolume when one is of identityRefusals
// and the others known; any reason not known (expandVolume's controller error, or
// nodeExpandVolume's list of the node plugins') is updateFailed, whose run again may go
// through.
func refusalOf(err error) refusal {
	msg, ok := leaders500(err)
	if !ok {
		return notRefused
	}
	if strings.HasPrefix(msg, "volume identity cannot be updated: ") {
		return otherVolume
	}
	rest, found := strings.CutPrefix(msg, "unable to update volume: ")
	if !found {
		return notRefused
	}
	out := copyRefused
	for _, r := range mergeReasons(rest) {
		switch {
		case slices.Contains(identityRefusals, r):
			out = otherVolume
		case !slices.ContainsFunc(copyRefusals, func(p string) bool { return strings.HasPrefix(r, p) }):
			return updateFailed
		}
	}
	return out
}

// mergeReasons splits the reasons of a go-multierror list ("1 error occurred:\n\t* A" or "2
// errors occurred:\n\t* A\n\t* B"), as Merge answers them; msg itself when it is no list. A
// reason of several lines leaves a line not of the list, kept as a reason of its own (not
// known, so refusalOf takes it for a failure).
func mergeReasons(msg string) []string {
	head, list, ok := strings.Cut(msg, "\n")
	if !ok || !strings.HasSuffix(head, " occurred:") {
		return []string{msg}
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		out = append(out, strings.TrimPrefix(strings.TrimSpace(line), "* "))
	}
	return out
}

// leaders500 is the leader's words (leadersWords) of err when it is Nomad's 500.
func leaders500(err error) (string, bool) {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || !ure.HasStatusCode() || ure.StatusCode() != http.StatusInternalServerError {
		return "", false
	}
	return leadersWords(ure.Body()), true
}

// keptCopy is what volctl adds to a registration of volume v Nomad refused for what its copy in
// namespace ns has (copyRefused): that the same registration is refused again, what shows
// how the copy differs, and the two ways on.
func (c *Client) keptCopy(v spec.Volume, ns string) string {
	return fmt.Sprintf("; Nomad keeps its copy as it is, and refuses this registration again until one side changes: `%s` says what its copy has otherwise; to give Nomad volctl's, once no job of Nomad's uses it, `%s`, then `%s` again; to take the volume back instead, `%s`, then `%s`",
		volctl("register --dry-run", v.ID), c.nomadCmd("volume deregister", ns, v.ID), volctl("register", v.ID), c.nomadCmd("volume deregister", ns, v.ID), volctl("release", v.ID))
}

// othersCopy is what volctl adds to a registration of volume v, marked handed over from
// before, that Nomad refused because its copy in namespace ns is another volume (otherVolume):
// someone else's, not to be deregistered for volctl, and the way to take v back.
func (c *Client) othersCopy(v spec.Volume, ns string) string {
	return fmt.Sprintf("; Nomad has another volume by the ID %q in namespace %s now (it refuses to change a volume's plugin or external ID): someone else's, not volctl's to update, nor to be deregistered in Nomad for volctl; volume %q stays marked handed over from before and volctl does not claim it: `%s` shows Nomad's volume, and if nothing in Nomad uses this volume's storage, `%s` takes it back",
		v.ID, ns, v.ID, volctl("status", v.ID), volctl("release --force", v.ID))
}

// updateFailedAdvice is what volctl adds to a registration of volume v, marked handed over from
// before, whose update Nomad did not apply for what a later run may not meet (updateFailed: the
// plugin's expand failing as Nomad grows the volume).
func updateFailedAdvice(v spec.Volume) string {
	return fmt.Sprintf("; Nomad applied nothing of it and keeps its copy as it was (the volume stays marked handed over): `%s` again, once what failed answers (the plugin's controller, or its node plugins), updates it",
		volctl("register", v.ID))
}

// inFlight reports whether Nomad may yet apply a registration that failed with err: neither
// refused for certain nor settled.
func inFlight(err error) bool { return !refusedForCertain(err) && !settled(err) }

// nomadFlags are the nomad CLI's flags naming the namespace ns and the client's region, for a
// command volctl tells people to run there.
func (c *Client) nomadFlags(ns string) string {
	f := shellquote.Flag("-namespace", ns)
	if c.Region != "" {
		f += " " + shellquote.Flag("-region", c.Region)
	}
	return f
}

// nomadCmd is the nomad CLI command `nomad CMD -namespace NS [-region R] ID` (nomadFlags), its
// words quoted for a shell (shellquote).
func (c *Client) nomadCmd(cmd, ns, id string) string {
	return shellquote.Command("nomad "+cmd+" "+c.nomadFlags(ns), id)
}

// volctl is the command `volctl nomad CMD ID`, its words quoted for a shell (shellquote).
func volctl(cmd, id string) string { return shellquote.Command("volctl nomad "+cmd, id) }

// refusedForCertain reports whether a registration's error says Nomad did not apply it: a
// 4xx (Nomad's HTTP layer refuses a request it cannot decode or a token may not make before
// anything is applied), a redirect not followed, or a request that never reached Nomad.
func refusedForCertain(err error) bool {
	var re *redirectError
	if errors.As(err, &re) || errors.Is(err, errNotSent) {
		return true
	}
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.HasStatusCode() && ure.StatusCode() >= 400 && ure.StatusCode() < http.StatusInternalServerError
}

// settled reports whether Nomad said how a failed registration ended: refused for certain, or
// answered by Nomad with a 500 whose error is one Nomad returns only for a registration it did
// not apply (settledBy). Nomad's HTTP layer answers every error of the RPC behind a request
// with a 500, text/plain, without the X-Nomad-* headers of an answer it ran (agent's wrap and
// errCodeFromHandler: only an error coded for HTTP, a permission denied or a token not found
// gets another code), so the error's text is all there is to tell a refusal from a Raft or RPC
// failure after which the write may still be applied; a 500 whose text is not known, Nomad's
// or a proxy's, is taken as unsettled (the safe side), as is any other 5xx.
func settled(err error) bool {
	if refusedForCertain(err) {
		return true
	}
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.HasStatusCode() && ure.StatusCode() == http.StatusInternalServerError && settledBy(ure.Body())
}

// settledErrors begin the errors of Nomad's CSIVolume.Register (nomad/csi_endpoint.go) that
// come before its raftApply, and those of its state store's UpsertCSIVolume, which the FSM
// returns having changed nothing: a registration answered with one was not applied, and never
// will be.
var settledErrors = []string{
	"No cluster leader",                       // no leader to forward to: Nomad's canRetry says "no state could have been changed"
	"missing volume definition",               // Register
	"validation: ",                            // CSIVolume.Validate
	"no CSI plugin named: ",                   // pluginValidateVolume
	"no healthy controllers for CSI plugin: ", // pluginValidateVolume
	"unable to update volume: ",               // reconcileVolume: an update of an immutable field
	"controller validate volume: ",            // the plugin's ControllerValidateVolumeCapabilities
	"volume identity cannot be updated: ",     // state store: another plugin or external ID
	"volume existence check error: ",          // state store
}

// leadersWords is the body of Nomad's 500 without the "rpc error: " that each server forwarding
// the RPC puts before the leader's error.
func leadersWords(body string) string {
	msg := strings.TrimSpace(body)
	for {
		rest, ok := strings.CutPrefix(msg, "rpc error: ")
		if !ok {
			return msg
		}
		msg = rest
	}
}

// settledBy reports whether the body of Nomad's 500 to a registration is one of settledErrors
// (leadersWords).
func settledBy(body string) bool {
	msg := leadersWords(body)
	for _, p := range settledErrors {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	// The state store's "volume ID is in nonexistent namespace NS".
	return strings.HasPrefix(msg, "volume ") && strings.Contains(msg, " is in nonexistent namespace ")
}

// Identity lists how Nomad's copy of a volume differs from v where it says which volume it
// is: ID, namespace, plugin ID, external ID. A copy that differs so is another volume.
func (c *Client) Identity(have VolumeState, v spec.Volume) []string {
	return IdentityIn(have, v, c.namespaceFor(v))
}

// IdentityIn is Identity with the namespace volctl's volume is in (or was handed over to)
// given. A copy naming no namespace is in the one asked (VolumeIn read it there).
func IdentityIn(have VolumeState, v spec.Volume, ns string) []string {
	var out []string
	add := func(field, h, w string) {
		if h != w {
			out = append(out, fmt.Sprintf("%s %q (volctl's: %q)", field, h, w))
		}
	}
	add("ID", have.ID, v.ID)
	// A copy that names no namespace is an older Nomad's, as VolumeIn takes it: the one asked.
	if have.Namespace != "" {
		add("namespace", have.Namespace, ns)
	}
	add("plugin_id", have.PluginID, v.PluginID)
	add("external_id", have.ExternalID, v.ExternalID)
	return out
}

// differs is Identity, and the capabilities, the capacity and the topologies (when volctl sends
// them) besides: what a registration Nomad took must read back as. A copy registered before
// without a topology keeps none (Kept).
func (c *Client) differs(have VolumeState, v spec.Volume) []string {
	out := c.Identity(have, v)
	if !sameCapabilities(have.Capabilities, v.Capabilities) {
		out = append(out, fmt.Sprintf("capabilities %s (volctl's: %s)", capabilities(have.Capabilities), capabilities(v.Capabilities)))
	}
	if (v.CapacityMin != 0 || v.CapacityMax != 0) && (have.CapacityMin != v.CapacityMin || have.CapacityMax != v.CapacityMax) {
		out = append(out, fmt.Sprintf("capacity min %d, max %d (volctl's: %d, %d)", have.CapacityMin, have.CapacityMax, v.CapacityMin, v.CapacityMax))
	}
	if tr := sentTopologyRequest(v); tr != nil && len(tr.Required) > 0 && !slices.EqualFunc(have.Topologies, tr.Required, sameSegments) {
		out = append(out, fmt.Sprintf("topologies %s (volctl's: %s)", topologyList(have.Topologies), topologyList(tr.Required)))
	}
	return out
}

// sameSegments compares two topologies by their segments, as Nomad's CSITopology.Equal does.
func sameSegments(a, b spec.Topology) bool { return maps.Equal(a.Segments, b.Segments) }

// topologyList words topologies for an error: each one's segments, keys sorted, "none" for
// none.
func topologyList(ts []spec.Topology) string {
	if len(ts) == 0 {
		return "none"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "{}"
		if len(t.Segments) > 0 {
			parts[i] = mapWords(t.Segments)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func capabilities(cs []spec.Capability) string {
	parts := make([]string, len(cs))
	for i, cp := range cs {
		parts[i] = fmt.Sprintf("%q/%q", cp.AccessMode, cp.AttachmentMode)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// shown is s, something Nomad said, with the credentials and the volume's secrets and mount
// flags replaced.
func (c *Client) shown(s string, v spec.Volume) string { return scrub(c.hideCreds(s), v) }

// leader is the address of the leader of the Nomad cluster's region (c.Region, the agent's own
// when none) as GET /v1/status/leader answers it ("10.0.0.1:4647": no ACL needed), "" when it
// did not answer so (an error, a proxy's page, no leader, an older fake): then nothing is
// compared. Bounded as the question after a failed registration is (askAfterFailure), and not
// noted as Nomad stopping: it is a check, not the command's work.
func (c *Client) leader(ctx context.Context) string {
	addr, _ := c.askLeader(ctx)
	return addr
}

// askLeader is leader, and the error of a question that got no answer at all (no connection,
// none in time, Ctrl-C: stopsAll, noted as Nomad stopping), which the command's next request
// would meet too; nil when it was answered, whatever the answer.
func (c *Client) askLeader(ctx context.Context) (string, error) {
	ask := c.question()
	rctx, a, cancel := ask.request(ctx)
	defer cancel()
	var addr string
	_, err := c.api.Raw().Query("/v1/status/leader", &addr, (&api.QueryOptions{Region: c.Region}).WithContext(rctx))
	if err != nil && !a.got.Load() {
		// No HTTP answer: an answer of any status or body (a proxy's page, a 404 of one that
		// passes only the volume API, Nomad's "No cluster leader") is none to compare, and the
		// command goes on to say what its own requests meet.
		c.noteStopped(ctx, err, "its cluster's leader")
		return "", fmt.Errorf("Nomad at %s: %s", c.Address, ask.said(ctx, err, nil))
	}
	if err != nil || !a.connected.Load() {
		return "", nil
	}
	return addr, nil
}

// leaderTwice asks the cluster's leader twice in a row (leader): the leader both named, and
// "" for crossed; or, when they named two, "" and crossed saying so (crossedWords). Two
// questions around other requests may reach one cluster of several behind a balancer that
// sends each request to the next one (two requests apart, the first of two clusters; three
// apart, the first of three), and the requests between them the others; two in a row reach
// two of them, whatever their number. A balancer that picks at random is caught so by each
// pair with a chance of one in two or better; one that keeps a client on one cluster (per
// connection, per source address) gives one cluster's answers throughout, and goes unseen.
// err is the first question's when it got no answer at all (askLeader).
func (c *Client) leaderTwice(ctx context.Context) (leader, crossed string, err error) {
	first, err := c.askLeader(ctx)
	if first == "" || err != nil {
		return "", "", err
	}
	if second := c.leader(ctx); second != "" && second != first {
		return "", crossedWords(first, second, "two questions in a row", c.hideCreds), nil
	}
	return first, "", nil
}

// crossedClusters says, when the leader GET /v1/status/leader names now differs from before,
// the one it named before what (the registration, the read), that more than one cluster
// answers at NOMAD_ADDR; "" when both named the same leader, or either named none. Nomad's
// answers name no cluster (its X-Nomad-Index is a Raft index of whichever cluster answered,
// and a request naming no region is answered in the agent's own), so a leader that changes
// between questions of one command is the sign volctl has: two clusters behind one load
// balancer (a round-robin one sends the registration to one and the read-back to the other),
// or a new leader elected meanwhile, for which the same command run again settles it.
func (c *Client) crossedClusters(ctx context.Context, before, what string) string {
	if before == "" {
		return ""
	}
	after := c.leader(context.WithoutCancel(ctx))
	if after == "" || after == before {
		return ""
	}
	return crossedWords(before, after, what, c.hideCreds)
}

// crossedWords says that the leader was before, then after, asked around what.
func crossedWords(before, after, what string, hide func(string) string) string {
	when := fmt.Sprintf("was %s before %s and is %s after it", hide(spec.Cut(before, 64)), what, hide(spec.Cut(after, 64)))
	if what == "two questions in a row" {
		when = fmt.Sprintf("was named %s and %s by two questions in a row", hide(spec.Cut(before, 64)), hide(spec.Cut(after, 64)))
	}
	return "its cluster's leader " + when + " (more than one Nomad cluster answers at that address, behind a load balancer, or a new leader was elected meanwhile)"
}

// ErrClustersCrossed matches Nomad's word that it has no such volume when the cluster's leader
// changed around it (VolumeOfOneCluster): not the word of the cluster the volume was handed
// to, for all volctl can tell.
var ErrClustersCrossed = errors.New("more than one Nomad cluster answers at that address")

// VolumeOfOneCluster is VolumeIn for a take-back (volctl nomad release): Nomad's 404 is taken
// as its word only when the cluster's leader, asked twice in a row before the read and once
// after it, named one leader throughout (leaderTwice, crossedClusters). Else the error matches
// ErrClustersCrossed (not ErrNotFound), and says so: a 404 one cluster behind a balancer
// answered says nothing of the other, which the volume was handed to, and may still have it.
// A leader not answered (a proxy that passes only the volume API) is not compared.
//
// peers are the servers of the cluster the volume was handed to, as the mark recorded them
// (none: not known): a 404 from a cluster that names none of them as its servers (Peers) is
// another cluster's, one a balancer that keeps a client on one cluster for a while sent every
// request of this command to, where no leader question can tell; the error matches
// ErrOtherCluster, and not ErrNotFound.
func (c *Client) VolumeOfOneCluster(ctx context.Context, id, ns, region string, peers []string) (VolumeState, error) {
	in := *c // the leader of the region asked (an empty one is the agent's own)
	in.Region = region
	before, crossed, err := in.leaderTwice(ctx)
	if err != nil {
		return VolumeState{}, fmt.Errorf("volume %q: %w", id, err)
	}
	if crossed == "" {
		have, err := c.VolumeIn(ctx, id, ns, region)
		if !errors.Is(err, ErrNotFound) {
			return have, err
		}
		if crossed = in.crossedClusters(ctx, before, "the read"); crossed == "" {
			var now []string
			if before != "" { // a Nomad that names no leader names no servers either
				now = in.Peers(context.WithoutCancel(ctx), region)
			}
			if !OtherCluster(peers, now) {
				return have, err
			}
			return VolumeState{}, &otherClusterError{fmt.Errorf("volume %q (namespace %s): Nomad at %s %s, so its word that it has no such volume (at index %d) is not the word of the cluster the volume was handed to",
				id, ns, c.Address, c.otherClusterWords(peers, now), IndexOf(err))}
		}
	}
	return VolumeState{}, &crossedError{fmt.Errorf("volume %q (namespace %s): Nomad at %s: %s, so no word of its that it has no such volume can be taken as the word of the cluster the volume was handed to",
		id, ns, c.Address, crossed)}
}

// crossedError is VolumeOfOneCluster's error when the leader changed: it matches
// ErrClustersCrossed, its text saying so in its own words.
type crossedError struct{ error }

func (e *crossedError) Is(target error) bool { return target == ErrClustersCrossed }

// crossedWayOut says what works for volume id marked handed over to an address more than one
// cluster answers at: it stays marked, and neither a registration elsewhere (refused for the
// mark) nor a release through that address (VolumeOfOneCluster) settles it, so each cluster is
// seen through its own servers, and the take-back is forced once none has it. Before, the
// advice was to register again with NOMAD_ADDR set to one cluster's servers, which the mark
// refuses, and to release, which refuses the crossed answers.
func (c *Client) crossedWayOut(ns, id string) string {
	return fmt.Sprintf("it stays marked handed over, unsettled, and volctl does not claim it; neither a registration with NOMAD_ADDR set elsewhere (the mark names this address) nor a release through this one (it cannot tell the clusters apart) settles it: see `%s` against each cluster's own servers (NOMAD_ADDR set to them), and once none has it (`%s` there), `%s` takes it back; then `%s`, with NOMAD_ADDR set to one cluster's own servers (and NOMAD_REGION to its region), hands it to that one",
		c.nomadCmd("volume status", ns, id), c.nomadCmd("volume deregister", ns, id), volctl("release --force", id), volctl("register", id))
}

// readBackWords says what the read-back of a registration answered, for crossedClusters' error.
func readBackWords(gerr error) string {
	if gerr != nil {
		return fmt.Sprintf("the read-back said it has no such volume, at index %d", IndexOf(gerr))
	}
	return "the read-back found it"
}

// ErrOtherCluster matches an answer of a cluster that names none of the servers of the one a
// volume was handed to (OtherCluster): a registration not sent to it, or its 404 not taken.
var ErrOtherCluster = errors.New("another Nomad cluster answers at that address")

// otherClusterError is the error of an answer of another cluster (OtherCluster): it matches
// ErrOtherCluster, its text saying so in its own words.
type otherClusterError struct{ error }

func (e *otherClusterError) Is(target error) bool { return target == ErrOtherCluster }

// mostPeers bounds the servers an answer of Peers may name, and peerLen each one's length: an
// answer past them (no Raft configuration has so many servers, nor an address so long) is
// none, not recorded.
const (
	mostPeers = 64
	peerLen   = 256
)

// Peers are the servers of the Nomad cluster of region (the agent's own when ""), as GET
// /v1/status/peers answers them (the Raft configuration's addresses, "10.0.0.1:4647"; no ACL
// needed), sorted; none when it did not answer so (an error, a proxy's page or 404, an answer
// that is no list of server addresses). A cluster's servers change one at a time, and two
// clusters have none in common: a Nomad that names none of the servers a handover recorded is
// another cluster (OtherCluster). Bounded as the leader question is, and, as it, a check: not
// noted as Nomad stopping.
func (c *Client) Peers(ctx context.Context, region string) []string {
	rctx, a, cancel := c.question().request(ctx)
	defer cancel()
	var peers []string
	if _, err := c.api.Raw().Query("/v1/status/peers", &peers, (&api.QueryOptions{Region: region}).WithContext(rctx)); err != nil || !a.connected.Load() {
		return nil
	}
	if len(peers) > mostPeers {
		return nil
	}
	for _, p := range peers {
		if p == "" || len(p) > peerLen || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == ',' || r >= 0x7f }) {
			return nil
		}
	}
	slices.Sort(peers)
	return slices.Compact(peers)
}

// OtherCluster reports whether a cluster whose servers are now (Peers) is another one than the
// cluster whose servers were recorded: both known, and no server in common. A cluster whose
// servers were all replaced since the handover reads as another one too: volctl cannot tell the
// two apart, and the safe side is to take no 404 of it.
func OtherCluster(recorded, now []string) bool {
	if len(recorded) == 0 || len(now) == 0 {
		return false
	}
	for _, p := range now {
		if slices.Contains(recorded, p) {
			return false
		}
	}
	return true
}

// otherClusterWords says that the cluster answering names servers now, none of those recorded
// at the handover, and what that may be.
func (c *Client) otherClusterWords(recorded, now []string) string {
	return fmt.Sprintf("names its cluster's servers %s, none of those the cluster it was handed over to named (%s): another Nomad cluster answers there now (a load balancer that keeps a client on one cluster for a while has moved this one, or sends these requests elsewhere), or that cluster's servers were all replaced since",
		c.hideCreds(peerList(now)), c.hideCreds(peerList(recorded)))
}

// peerList words servers for an error, the first four and how many more.
func peerList(peers []string) string {
	const most = 4
	s := strings.Join(peers[:min(len(peers), most)], ", ")
	if len(peers) > most {
		s += fmt.Sprintf(" and %d more", len(peers)-most)
	}
	return "[" + s + "]"
}

// Cluster is what a command that only reads (volctl nomad status, register --dry-run) learns
// of the cluster that answers at the client's address in a region (OneCluster): its servers
// (Peers, none when not answered), or Crossed saying that two questions in a row named two
// leaders (leaderTwice): more than one cluster answers there, and no read through it can be
// tied to one.
type Cluster struct {
	Peers   []string
	Crossed string
}

// OneCluster asks the leader of region twice in a row, then its servers, as a handover does
// before it sends anything (HandOver): what a read of a volume through the address can be
// tied to. err is the first question's when it got no answer at all (no connection, none in
// time): Nomad not reached.
func (c *Client) OneCluster(ctx context.Context, region string) (Cluster, error) {
	in := *c
	in.Region = region
	leader, crossed, err := in.leaderTwice(ctx)
	if err != nil || crossed != "" || leader == "" { // no leader named: no servers either
		return Cluster{Crossed: crossed}, err
	}
	return Cluster{Peers: in.Peers(ctx, region)}, nil
}

// CrossedRead is the error of a read of volume id not made because more than one cluster
// answers at the client's address (Cluster.Crossed): what it read could be either's. It says
// what shows the volume: nomad's own status command against each cluster's servers.
func (c *Client) CrossedRead(id, ns, region, crossed, what string) error {
	in := *c // its nomad command names the region asked
	in.Region = region
	return fmt.Errorf("volume %q: Nomad at %s: %s, so volctl cannot tell which cluster %s: not asked; see `%s` against each cluster's own servers (NOMAD_ADDR set to them)",
		id, c.Address, c.hideCreds(crossed), what, in.nomadCmd("volume status", ns, id))
}

// OtherClusterRead is the error of a read of volume id, handed over to a cluster whose
// servers were recorded, not made because the cluster answering now names none of them
// (OtherCluster): its answer is another cluster's.
func (c *Client) OtherClusterRead(id, ns, region string, recorded, now []string, what string) error {
	in := *c // its nomad command names the region asked
	in.Region = region
	return &otherClusterError{fmt.Errorf("volume %q: Nomad at %s %s, so %s; see `%s` against the servers of the cluster it was handed to (NOMAD_ADDR set to one of them)",
		id, c.Address, c.otherClusterWords(recorded, now), what, in.nomadCmd("volume status", ns, id))}
}
