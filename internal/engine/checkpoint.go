package engine

import (
	"context"
	"errors"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// checkpoint gathers a claim's state changes, and its volume's staging changes, between RPCs
// and commits them in one transaction just before the next RPC is sent (flush). That is
// the rule of docs/architecture.md (Checkpoints) — every state change is committed before the next RPC — with no transaction
// spent on a step that sends no RPC.
type checkpoint struct {
	e     *Engine
	cl    *store.Claim
	saved store.ClaimState // the claim's state as the store has it
	// from is the claim's state when the operation began: past the point where an earlier
	// command may have sent an RPC whose answer it never recorded (publishedBefore).
	from store.ClaimState
	// publishUnanswered: as loaded, the claim records a NodePublishVolume that may have been sent
	// and whose answer it never recorded (a kill, a timeout; not a failure the plugin
	// answered), which a restore driven again looks for at its target (publishedBefore). Read at
	// the load, since a drive's own commits clear the last error before it publishes.
	publishUnanswered bool
	others            *usage // nil: count when needed
	st                store.Staging
	hasSt             bool // a staging row exists in the store
	clDirty           bool
	stDirty           bool
	events            []*store.Event
	free              store.Outcome // when set, the flush moves the claim to the history
	// attachIntent: the staging's attach intent is admission's, sent to no node yet (loaded).
	attachIntent bool
	// stageIntent: no NodeStageVolume of the volume was sent since it was last unstaged: no
	// staging path was recorded when the operation began under the volume lock, or only
	// admission's, recorded where none was (loaded). A link there is not the plugin's answer
	// (linkedStaging). Cleared before nodeStage's flush that precedes NodeStageVolume.
	stageIntent bool
	// keptAttach: undoUnused kept the volume's attachment recorded, owed, because the plugin
	// lost PUBLISH_UNPUBLISH_VOLUME; it says so (keptAttachment).
	keptAttach string
	keptWhy    string // keptAttach's why alone (keptAttachmentWhy)
	// stagedUnattached: the volume's staging was recorded without an attachment when the
	// publish began, and the plugin attaches now (publish; stagedBeforeAttach).
	stagedUnattached bool
	// attached: this command sent ControllerPublishVolume for the claim, answered OK; a node
	// call refused as "not published to the node" then is not one reattach answers.
	attached bool
	// targetShows is what the target showed once its publish was accepted (nil: not known),
	// recorded with the claim by the next commit when targetDirty (store.Claim.TargetMount).
	targetShows *store.TargetMount
	targetDirty bool
	// publishedAgain: a restore's NodePublishVolume, answered OK with nothing mounted at the
	// target and taken back, was sent once more in this pass (nodePublish).
	publishedAgain bool
	// stagedAgain: a restore's NodeStageVolume, answered OK with nothing mounted at the staging
	// (a plugin answering from its record of the staging before the reboot), was taken back
	// and sent once more in this pass (nodeStage).
	stagedAgain bool
}

// loaded is what an operation read in its first transaction, under the volume lock, handed to
// the steps after it so that they need not read it again.
type loaded struct {
	plugin     *store.Plugin // nil when the plugin is not registered
	staging    store.Staging
	hasStaging bool
	others     *usage // what the volume's other claims use, when the transaction counted them
	// onNode: admission found the volume on the node already (a live claim or a staging row).
	onNode bool
	// attachIntent: admission's transaction recorded the attach intent (recordIntents), from
	// the plugin's stored fingerprint, and no RPC has been sent for it.
	attachIntent bool
	// stageIntent: admission's transaction recorded the staging path where none was recorded
	// (recordIntents): no NodeStageVolume of the volume was sent since it was last unstaged.
	stageIntent bool
}

// usage is what a volume's claims other than the one being driven use: its staging (claims
// node-staged and on until unpublished), its attachment (claims controller-published and on),
// and either (holders: any claim not yet on its way out). The volume lock keeps the first two
// from changing; admissions without the lock may add holders, which is safe to miss (the new
// claim attaches the volume again if it finds it detached).
type usage struct {
	staging, attached, holders int
	// handover is the volume's handover mark (nil: none): the attachment of a volume handed
	// over to Nomad is not undone when its last local claim goes (keptForNomad).
	handover *store.Handover
}

// readHandover sets u.handover from the store, in the transaction that counted u.
func (u *usage) readHandover(tx *store.Tx, volumeID string) error {
	h, err := tx.Handovers().Get(volumeID)
	switch {
	case err == nil:
		u.handover = &h
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	return nil
}

func countUsage(claims []store.Claim, exclude int64) *usage {
	u := &usage{}
	for _, c := range claims {
		if c.ID == exclude {
			continue
		}
		switch c.State {
		case store.ClaimNodeStaged, store.ClaimPublished, store.ClaimUnpublishing:
			u.staging++
			u.attached++
			u.holders++
		case store.ClaimControllerPublished:
			u.attached++
			u.holders++
		case store.ClaimTaken:
			u.holders++
		}
	}
	return u
}

// load reads a volume's plugin and staging rows inside a transaction held under its lock.
func load(tx *store.Tx, v store.Volume) (*loaded, error) {
	ld := &loaded{staging: store.Staging{VolumeID: v.ID}}
	p, err := tx.Plugins().Get(v.PluginID)
	switch {
	case err == nil:
		ld.plugin = &p
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	st, err := tx.Stagings().Get(v.ID)
	switch {
	case err == nil:
		ld.staging, ld.hasStaging = st, true
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	return ld, nil
}

// newCheckpoint starts an operation's checkpoints with the volume's staging row, read once for
// the whole operation (or taken from ld, read in the operation's first transaction): the caller
// holds the volume lock, so nothing else changes it meanwhile.
func (e *Engine) newCheckpoint(ctx context.Context, cl *store.Claim, ld *loaded) (*checkpoint, error) {
	if ld != nil {
		return &checkpoint{e: e, cl: cl, saved: cl.State, from: cl.State, st: ld.staging, hasSt: ld.hasStaging, others: ld.others, attachIntent: ld.attachIntent,
			stageIntent: ld.stageIntent || ld.staging.StagingPath == ""}, nil
	}
	st, ok, err := e.getStaging(ctx, cl.VolumeID)
	if err != nil {
		return nil, err
	}
	return &checkpoint{e: e, cl: cl, saved: cl.State, from: cl.State, st: st, hasSt: ok, stageIntent: st.StagingPath == "",
		publishUnanswered: cl.Target == store.TargetNotAccepted && sentUnanswered(cl, csi.RPCNodePublishVolume)}, nil
}

// advance moves the claim past a step that sends no RPC (a plugin without controller publishing,
// a release of a claim never published). No RPC depends on it, so it needs no commit of its
// own: the next commit records it.
func (p *checkpoint) advance(s store.ClaimState) {
	p.cl.State = s
}

// setState moves the claim to a new state, to be committed by the next flush. A success clears
// the last error.
func (p *checkpoint) setState(s store.ClaimState) {
	p.cl.State = s
	p.cl.LastRPC, p.cl.LastCode, p.cl.LastError = "", "", ""
	p.clDirty = true
}

// staging changes the staging row, to be committed by the next flush.
func (p *checkpoint) staging(change func(st *store.Staging)) {
	change(&p.st)
	p.stDirty = true
}

func (p *checkpoint) event(ev *store.Event) { p.events = append(p.events, ev) }

// flush commits what is pending, fires the failpoint of a newly committed claim state, and is a
// no-op when nothing is pending. It survives a cancelled context: what was done must be written.
//
// The commit is durable (forced to disk) when it records the intent of a controller RPC, whose
// effect outlives this machine's power: an attachment must never be made that a power loss could
// make volctl forget. Node-local progress is committed as progress (store.UpdateProgress): it
// survives a crash of volctl, and a power loss that undoes it undoes the mounts it records too,
// leaving the claim at an earlier checkpoint that reconcile re-drives.
func (p *checkpoint) flush(ctx context.Context, path string) error {
	return p.commit(ctx, path, p.e.store.UpdateProgress)
}

// flushDurable is flush with a commit forced to disk.
func (p *checkpoint) flushDurable(ctx context.Context, path string) error {
	return p.commit(ctx, path, p.e.store.Update)
}

func (p *checkpoint) commit(ctx context.Context, path string, update func(context.Context, func(*store.Tx) error) error) error {
	// Every step of the claim and release paths, the commit before each RPC and the last one,
	// comes through here, pending writes or not: the volume's lock must still be this
	// process's (stillHeld), checked again inside the transaction (holding), since the commit
	// may wait for the database while the lock file is removed and another volctl locks a new one.
	if err := p.e.locks.stillHeld(p.cl.VolumeID); err != nil {
		p.cl.State = p.saved
		return err
	}
	if !p.clDirty && !p.stDirty && !p.targetDirty && len(p.events) == 0 && p.free == "" {
		return nil
	}
	st := p.st
	dropSt := st.StagingPath == "" && !st.Staged && !st.ControllerPublished
	err := update(context.WithoutCancel(ctx), p.e.locks.holding(p.cl.VolumeID, func(tx *store.Tx) error {
		if p.stDirty {
			switch {
			case !dropSt:
				st.VolumeID = p.cl.VolumeID
				if err := tx.Stagings().Put(&st); err != nil {
					return err
				}
			case p.hasSt:
				if err := tx.Stagings().Delete(st.VolumeID); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
		}
		if p.clDirty || p.free != "" {
			if err := tx.Claims().Update(p.cl); err != nil {
				return err
			}
		}
		if p.targetDirty && p.free == "" {
			if err := tx.Claims().SetTargetMount(p.cl.ID, p.targetShows); err != nil {
				return err
			}
		}
		if p.free != "" {
			if err := tx.Claims().Free(p.cl.ID, p.free); err != nil {
				return err
			}
		}
		for _, ev := range p.events {
			if err := p.e.appendEvent(tx, ev); err != nil {
				return err
			}
		}
		return nil
	}))
	if err != nil {
		// Nothing was recorded (a full disk, the database replaced): the claim is where the
		// store has it, and that is what the error says it was left at, what `volume status`
		// shows and where reconcile starts from, not the state the commit would have recorded.
		p.cl.State = p.saved
		return err
	}
	if p.stDirty {
		p.hasSt = !dropSt
	}
	committed := p.clDirty
	p.saved = p.cl.State
	if p.targetDirty {
		p.cl.TargetMount = p.targetShows
	}
	p.clDirty, p.stDirty, p.targetDirty, p.events = false, false, false, nil
	if committed {
		p.e.failpoint(path + ":" + string(p.cl.State))
	}
	return nil
}

// usage returns what the volume's other claims use: counted by the operation's first
// transaction, or now, leaving out the claim being driven as the store has it.
func (p *checkpoint) usage(ctx context.Context) (*usage, error) {
	if p.others != nil {
		return p.others, nil
	}
	var u *usage
	err := p.e.store.View(ctx, func(tx *store.Tx) error {
		claims, err := tx.Claims().ByVolume(p.cl.VolumeID)
		if err != nil {
			return err
		}
		u = countUsage(claims, p.cl.ID)
		return u.readHandover(tx, p.cl.VolumeID)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
