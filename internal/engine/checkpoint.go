package engine

import (
	"context"
	"errors"

	"github.com/volctl/volctl/internal/store"
)

// checkpoint gathers a claim's state changes, and its volume's staging changes, between RPCs
// and commits them in one transaction just before the next RPC is sent (flush). That is
// DESIGN.md's rule — every state change is committed before the next RPC — with no transaction
// spent on a step that sends no RPC.
type checkpoint struct {
	e       *Engine
	cl      *store.Claim
	saved   store.ClaimState // the claim's state as the store has it
	st      store.Staging
	hasSt   bool // a staging row exists in the store
	clDirty bool
	stDirty bool
	events  []*store.Event
	free    store.Outcome // when set, the flush moves the claim to the history
}

// newCheckpoint reads the volume's staging row once for the whole operation; the caller holds
// the volume lock, so nothing else changes it meanwhile.
func (e *Engine) newCheckpoint(ctx context.Context, cl *store.Claim) (*checkpoint, error) {
	st, ok, err := e.getStaging(ctx, cl.VolumeID)
	if err != nil {
		return nil, err
	}
	return &checkpoint{e: e, cl: cl, saved: cl.State, st: st, hasSt: ok}, nil
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
func (p *checkpoint) flush(ctx context.Context, path string) error {
	if !p.clDirty && !p.stDirty && len(p.events) == 0 && p.free == "" {
		return nil
	}
	st := p.st
	dropSt := st.StagingPath == "" && !st.Staged && !st.ControllerPublished
	err := p.e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
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
		if p.free != "" {
			if err := tx.Claims().Free(p.cl.ID, p.free); err != nil {
				return err
			}
		}
		for _, ev := range p.events {
			if err := tx.Events().Append(ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if p.stDirty {
		p.hasSt = !dropSt
	}
	committed := p.clDirty
	p.saved = p.cl.State
	p.clDirty, p.stDirty, p.events = false, false, nil
	if committed {
		failpoint(path + ":" + string(p.cl.State))
	}
	return nil
}
