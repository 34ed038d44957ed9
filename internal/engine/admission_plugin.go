package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// checkPublishable refuses, at admission and before any RPC, a claim the volume's plugin can
// never publish on this host, as its registration and last fingerprint say: admitting it would
// leave a claim that no RPC can move, held until `volume detach --force`. A plugin not
// fingerprinted yet is given the benefit of the doubt; the publish path checks the live
// fingerprint again and rolls back a claim it cannot publish. p is the volume's plugin row as
// admission's transaction read it (load), nil when the plugin is not registered.
func checkPublishable(v store.Volume, p *store.Plugin) error {
	if p == nil {
		// The volume is recorded here: its plugin is to be registered here, not looked for
		// in another state dir, as the advice of a plain not-found says
		// (TestClaimOfAVolumeWhosePluginIsGoneGetsNoAdviceToLookElsewhere).
		return &hereNotFound{notFoundf("volume %q: plugin %q is not registered (volctl plugin register)", v.ID, v.PluginID)}
	}
	if p.Type == spec.PluginController {
		return noNodeService(v)
	}
	if p.Type == spec.PluginNode && slices.Contains(p.Fingerprint.PluginCaps, "CONTROLLER_SERVICE") {
		return noControllerHalf(v)
	}
	return nil
}

// noControllerHalf is the refusal of a claim (or a registration) whose plugin advertises
// CONTROLLER_SERVICE while only its node half is registered: nothing can send the controller
// RPCs the driver expects (ControllerPublishVolume before staging, ValidateVolumeCapabilities),
// as Nomad refuses it with "no controllers available for plugin".
func noControllerHalf(v store.Volume) error {
	return controllerHalfMissing(v.PluginID, fmt.Sprintf("attach or validate volume %q", v.ID))
}

// controllerHalfMissing is noControllerHalf for any controller work (what: `create volume "db"`,
// "delete snapshots"): what is missing is not a capability of the driver, which has them, but
// the half of it that serves them, and the refusal says so rather than name the capability.
func controllerHalfMissing(pluginID, what string) error {
	return invalidf("plugin %q advertises CONTROLLER_SERVICE but only its node half is registered: nothing can %s; "+
		"register the plugin's controller half too (a plugin block with the same ID, type \"controller\")", pluginID, what)
}

// needsControllerHalf reports a connection to a plugin that advertises CONTROLLER_SERVICE
// without a controller socket to reach it on.
func needsControllerHalf(c *conn) bool {
	return c.fp.Capabilities.Plugin.ControllerService && !c.fp.Controller
}

// noNodeService is the refusal of a claim whose plugin has no node service on this host.
func noNodeService(v store.Volume) error {
	return invalidf("plugin %q has no node service on this host (it is registered as a controller plugin, or serves no node service): volume %q cannot be published here; register the plugin's node service (type \"node\" or \"monolith\") to claim it",
		v.PluginID, v.ID)
}

// claimProbe is what a claim's Probe of its volume's plugin found, before admission inserts the
// claim (probeForClaim): Nomad's scheduler places no claim on a node whose plugin is not
// healthy, and a volume whose plugin says so shows "no: plugin not ready" (takesClaims). A
// plugin the probe could not reach (its socket missing, nothing listening, its connection
// refused or lost before it answered: PluginNotAnswering) is not judged here (reached false):
// the publish path's connection fails the same way and leaves the claim for reconcile, saying
// so (TestPluginGoneAtConnectSaysWhatIsLeft). One that answered UNAVAILABLE itself, or held the
// Probe past the timeout, is judged (TestProbeUnavailableAnsweredIsNotAPluginGone).
type claimProbe struct {
	plugin  string
	reached bool
	health  store.Health
	err     error // the Probe's error; nil when it answered
	// refused is why the connection the Probe was to go through was refused though something
	// answered on the socket: another driver there, a fingerprint volctl refuses, a plugin back
	// without the service the volume needs. Judged as a Probe that failed: before, only the
	// Probe's answer was, and such a claim was inserted, answered as refused (exit 4) and left
	// taken, holding the volume, for reconcile to publish once the plugin was right again
	// (TestClaimThroughAnImpostorIsRefusedWithNothingRecorded).
	refused error
}

// refusal is the claim's refusal when the probe found the plugin unhealthy or not ready: a
// conflict (exit 4), as the other refusals of a volume that cannot take claims.
func (pr *claimProbe) refusal(v store.Volume) error {
	status := shellquote.Command("volctl plugin status", pr.plugin)
	if pr.refused != nil {
		kinded := errors.Is(pr.refused, ErrConflict) || errors.Is(pr.refused, ErrInvalid)
		if !kinded && !errors.As(pr.refused, new(*csi.Error)) {
			// Not the plugin's doing (volctl's own state failing, recording what the connection
			// found: a full disk): not worded as a plugin to wait for, nor a refusal
			// (TestClaimWhoseFingerprintCannotBeRecordedIsNoPluginRefusal).
			return fmt.Errorf("volume %q: connecting to plugin %q to probe it for the claim: %w; no claim was admitted", v.ID, pr.plugin, pr.refused)
		}
		err := fmt.Errorf("volume %q cannot take claims through plugin %q: %w; no claim was admitted: claim again once `%s` shows it healthy",
			v.ID, pr.plugin, pr.refused, status)
		if !kinded {
			// A plugin's error (a fingerprint question failing, a listener that accepts no
			// connection) refuses the claim as a Probe that failed does: a conflict, exit 4,
			// where it exited 1 (TestClaimOnAStoppedPluginNotFingerprintedIsARefusalConflict).
			return &kindWrap{kind: ErrConflict, err: err}
		}
		return err
	}
	if !pr.reached || takesClaims(pr.health) {
		return nil
	}
	if pr.err != nil {
		return conflictf("volume %q cannot take claims: its plugin %q is unhealthy: its Probe failed: %v; no claim was admitted: fix the plugin (`%s` probes it again), then claim again",
			v.ID, pr.plugin, pr.err, status)
	}
	return conflictf("volume %q cannot take claims: its plugin %q is not ready: its Probe answered ready=false (still starting, or waiting for what it needs); no claim was admitted: claim again once `%s` shows it healthy",
		v.ID, pr.plugin, status)
}

// unprobed is admission's answer to a claim it would admit before its plugin was probed: no
// RPC is sent inside admission's transaction, so the caller probes plugin (probeForClaim) and
// admits again with what the probe found. A claim's plugin is most often probed before
// admission already, when the claim's preview read found a claim admission would insert
// (claimPreview); admission answers unprobed when that read could not tell, or found otherwise
// than admission does. Only a claim admission would insert is probed: one refused anyway by
// the checks the preview makes is refused at once, and the alloc's claim held already is
// handed back without a word to the plugin.
type unprobed struct{ plugin store.Plugin }

func (u *unprobed) Error() string { return fmt.Sprintf("plugin %q not probed yet", u.plugin.ID) }

// probeForClaim connects to plugin p, as the publish path does (the connection is kept for it),
// sends it one Probe, and records the health it found when it differs from what p's row says.
// The error is only the caller's interruption.
func (e *Engine) probeForClaim(ctx context.Context, p store.Plugin) (*claimProbe, error) {
	pr := &claimProbe{plugin: p.ID}
	c, err := e.connectPlugin(withProbeFollowing(ctx), p, true)
	defer e.done(c)
	if err != nil && !PluginNotAnswering(err) && ctx.Err() == nil {
		pr.reached, pr.refused = true, err
		return pr, nil
	}
	if err == nil {
		var h store.Health
		h, err = e.probeErr(ctx, c)
		if err != nil {
			e.noteAcceptedElsewhere(ctx, p.ID, c.servers)
		}
		if err == nil || !PluginNotAnswering(err) {
			pr.reached, pr.health, pr.err = true, h, err
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted while probing plugin %q (no claim was admitted): %w", p.ID, ctx.Err())
	}
	if pr.reached {
		e.noteProbed(ctx, p, pr.health)
	}
	return pr, nil
}

// noteProbed records the health a claim's probe of plugin p found, when it says otherwise than
// p's row, so that `volume ls` and the dashboard agree with the claim's verdict; a reading that
// agrees costs no commit. As a status command's reading, it never waits for another process's
// write lock (TryUpdateProgress): the next probe records it.
func (e *Engine) noteProbed(ctx context.Context, p store.Plugin, h store.Health) {
	if was := p.Health; !was.ProbedAt.IsZero() && was.Healthy == h.Healthy && was.Ready == h.Ready && was.LastError == h.LastError {
		return
	}
	err := e.store.TryUpdateProgress(ctx, func(tx *store.Tx) error {
		cur, err := tx.Plugins().Get(p.ID)
		if err != nil {
			return err
		}
		if err := tx.Plugins().SetHealth(p.ID, h); err != nil {
			return err
		}
		return recordHealth(tx, p.ID, cur.Health, h, e.cfg.Now())
	})
	if err != nil && !errors.Is(err, store.ErrBusy) && !errors.Is(err, store.ErrNotFound) {
		e.log.Warn("recording a plugin's health", "plugin", p.ID, "err", err)
	}
}
