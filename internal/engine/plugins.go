package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// RegisterPlugin fingerprints and probes a plugin and records it. The plugin must be reachable,
// except one the agent starts itself (an exec block): that one is recorded as declared and
// fingerprinted when the agent has started it.
func (e *Engine) RegisterPlugin(ctx context.Context, sp spec.Plugin) (PluginInfo, error) {
	info, _, err := e.RegisterPluginOutcome(ctx, sp)
	return info, err
}

// RegisterPluginOutcome is RegisterPlugin, and what it did: Created (registered anew),
// Unchanged (registered again with the declaration it has, and answering as the same driver
// version), or Updated, naming what changed (type, socket, controller_socket, node_socket,
// timeout, exec — its env by that name only, never its values — and the driver's version).
// Decided in the registration's transaction. Before, every registration said "registered" and
// recorded "plugin registered", whatever it changed (TestRegisterPluginAgainSaysWhatItDid).
func (e *Engine) RegisterPluginOutcome(ctx context.Context, sp spec.Plugin) (PluginInfo, Registration, error) {
	if err := spec.ValidateNewID("plugin ID", sp.ID); err != nil {
		return PluginInfo{}, Registration{}, invalidf("register plugin: %v", err)
	}
	var r Registration
	info, err := bySpecID(sp.ID, func(id string) (PluginInfo, error) { sp.ID = id; return e.registerPlugin(ctx, sp, false, &r) })
	return info, r, err
}

// RegisterDeclaredPlugin is RegisterPlugin as the agent does it, of a plugin its config declares,
// at its start and again while one cannot be registered: not the operator's choice of whoever
// serves the plugin's sockets now, it holds them to the users who served them when the plugin
// was last fingerprinted (servers), as every connection does. Nobody's process that bound the
// name first, after a reboot before the plugin's supervisor started it, is refused; the
// operator's registration (RegisterPlugin) takes another user.
func (e *Engine) RegisterDeclaredPlugin(ctx context.Context, sp spec.Plugin) (PluginInfo, error) {
	if err := spec.ValidateNewID("plugin ID", sp.ID); err != nil {
		return PluginInfo{}, invalidf("register plugin: %v", err)
	}
	var r Registration
	return bySpecID(sp.ID, func(id string) (PluginInfo, error) { sp.ID = id; return e.registerPlugin(ctx, sp, true, &r) })
}

// registerPlugin is RegisterPlugin of the ID as stored (bySpecID); keepServers holds the
// sockets to who served them as the stored row records (RegisterDeclaredPlugin). A half whose
// other half another volctl registered, or replaced, while this one was fingerprinted
// (errHalfMoved) is joined and fingerprinted again, with the row as it is now.
func (e *Engine) registerPlugin(ctx context.Context, sp spec.Plugin, keepServers bool, r *Registration) (PluginInfo, error) {
	for attempt := 1; ; attempt++ {
		info, err := e.registerPluginOnce(ctx, sp, keepServers, r)
		if errors.Is(err, errHalfMoved) && attempt < 3 {
			e.forget(sp.ID)
			continue
		}
		return info, err
	}
}

// errHalfMoved is a split plugin's half whose registration joined (or did not join) the other
// half as one row said, which another volctl's registration of the plugin changed before this
// one's commit: recorded, it would replace the half that one registered.
var errHalfMoved = errors.New("the other half moved")

// registerPluginOnce is one try of registerPlugin, saying what it did in r.
func (e *Engine) registerPluginOnce(ctx context.Context, given spec.Plugin, keepServers bool, r *Registration) (PluginInfo, error) {
	sp, joined, err := e.joinRegisteredHalf(ctx, given)
	if err != nil {
		return PluginInfo{}, fmt.Errorf("register plugin %q: %w", sp.ID, err)
	}
	p := store.PluginFromSpec(sp)
	if keepServers {
		old, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(sp.ID) })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return PluginInfo{}, fmt.Errorf("register plugin %q: %w", sp.ID, err)
		}
		// Who served each socket only: no file identity, no fingerprint to reuse (serversOf).
		for _, s := range old.Fingerprint.Sockets {
			p.Fingerprint.Sockets = append(p.Fingerprint.Sockets, store.SocketIdentity{Path: s.Path, ServerUID: s.ServerUID, ServerKnown: s.ServerKnown})
		}
	}
	var (
		fp     *csi.Fingerprint
		health store.Health
	)
	c, err := e.connectPlugin(ctx, p, false)
	defer e.done(c)
	switch {
	case err == nil:
		fp = c.fp
		if err := checkPluginType(sp, fp); err != nil {
			e.forget(sp.ID)
			return PluginInfo{}, fmt.Errorf("register plugin %q: %w", sp.ID, err)
		}
		health = e.probe(ctx, c)
	case sp.Exec != nil && PluginNotAnswering(err):
		// Nothing answers on its socket: the agent starts it. A process that answers and
		// fails (hangs, another driver, a socket that is another plugin's) is refused as
		// without the exec block: it was said "not started yet", exit 0
		// (TestExecPluginRegisteredOnAHungSocketIsNotSaidNotStarted).
		health = store.Health{LastError: "not started yet: the agent starts it (volctl agent)"}
	default:
		return PluginInfo{}, fmt.Errorf("register plugin %q: %w", sp.ID, e.nothingRecorded(ctx, err, fmt.Sprintf("plugin %q", sp.ID), func(tx *store.Tx) error {
			_, err := tx.Plugins().Get(sp.ID)
			return err
		}))
	}
	e.failpoint("plugin:fingerprinted") // fingerprinted and probed, nothing recorded yet
	now := e.cfg.Now()
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		if err := notStoredOtherwise(tx, store.PluginIDs, p.ID); err != nil {
			return err
		}
		if spec.IsSplitHalf(given.Type) {
			// The join was made with the row read before the fingerprint: another volctl's
			// registration of the other half (or of the plugin) committed since would be
			// replaced by this one's, and both would say "registered".
			now, nowJoined, err := joinHalfWith(tx, given)
			if err != nil {
				return err
			}
			if nowJoined != joined || !reflect.DeepEqual(now, sp) {
				return &kindWrap{kind: errHalfMoved, err: conflictf("plugin %q was registered again by another volctl while this %s half was fingerprinted, three times (it is %s now); nothing was recorded: run this again to register this half beside it",
					p.ID, given.Type, describeStored(tx, p.ID))}
			}
		}
		if err := checkReregistration(tx, p.ID, fp); err != nil {
			return err
		}
		if err := refuseSocketMoveUnderMounts(tx, p); err != nil {
			return err
		}
		if err := refuseNodeDroppedUnderMounts(tx, p); err != nil {
			return err
		}
		// Created too: this half joined beside the other, registered alone before.
		*r = Registration{Outcome: Created}
		if old, err := tx.Plugins().Get(p.ID); err == nil && !(joined && spec.IsSplitHalf(old.Type)) {
			r.Changed = pluginChanges(old, p, fp)
			r.Outcome = Unchanged
			if len(r.Changed) > 0 {
				r.Outcome = Updated
			}
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		// Another driver under the ID: the deletes of snapshots volctl has no record of, sent
		// to the earlier driver and not finished, are forgotten, as a deregister forgets them:
		// reconcile sent them to the new driver, deleting its snapshot of that ID
		// (TestReregisterForAnotherDriverDoesNotInheritUnrecordedDeletes).
		var forgot []string
		if slices.Contains(r.Changed, "driver") {
			if forgot, err = forgetUnrecordedDeletes(tx, p.ID); err != nil {
				return err
			}
		}
		before, err := pathMates(tx, p.ID)
		if err != nil {
			return err
		}
		// Registered without a fingerprint (an exec plugin the agent has yet to start) where
		// the ID was deregistered with --force while volumes still name it: the driver it last
		// gave (store.LeftPlugin, which Put lets go) is pinned on the new record, so that the
		// first connection refuses another driver (checkIdentity) as the registration would
		// have (checkReregistration). Before, the record had no driver, whichever answered
		// first was taken, and the volumes' RPCs went to it: a DeleteVolume its NOT_FOUND
		// answered dropped the record of storage the first driver still held
		// (TestExecReregisterAfterForcedDeregisterKeepsTheLastDriver).
		// Pinned alone (PinProvider), the fingerprint left untaken: a fingerprint of the name
		// alone was taken for one taken now, with no capabilities, shown so, and compared with
		// the first real one as a plugin that came back with every capability
		// (TestPinnedReregisterFirstFingerprintIsNoCapabilityChange). Only while volumes name
		// the ID, as checkReregistration refuses only then: their deregistration, which its
		// refusal advises, frees the ID for another driver
		// (TestPinnedReregisterWithoutVolumesLeftTakesTheNewDriver).
		pinned := ""
		if fp == nil {
			if _, err := tx.Plugins().Get(p.ID); errors.Is(err, store.ErrNotFound) {
				vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: p.ID})
				if err != nil {
					return err
				}
				if len(vols) > 0 {
					if pinned, err = recordedProvider(tx, p.ID); err != nil {
						return err
					}
				}
			} else if err != nil {
				return err
			}
		}
		if err := tx.Plugins().Put(&p); err != nil {
			return err
		}
		if pinned != "" {
			if err := tx.Plugins().PinProvider(p.ID, pinned); err != nil {
				return err
			}
		}
		if err := refuseJoinedStorage(tx, p, before); err != nil {
			return err
		}
		if fp != nil {
			// Registered again (the agent does at every start): a plugin that came back with
			// other capabilities gets its event here, as on any other connection.
			if err := e.noteCapabilityChange(tx, p.ID, fp); err != nil {
				return err
			}
			if err := tx.Plugins().SetFingerprint(p.ID, c.storedFingerprint(now)); err != nil {
				return err
			}
			if node := fp.AccessibleTopology; node != nil {
				if err := respellVolumesAsNode(tx, p.ID, node.Segments); err != nil {
					return err
				}
			}
		}
		if err := tx.Plugins().SetHealth(p.ID, health); err != nil {
			return err
		}
		if !health.ProbedAt.IsZero() {
			// Probed (not a plugin the agent has yet to start, whose first probe records it):
			// a plugin registered again may be in another state than its last health event.
			if err := healthSinceEvent(tx, p.ID, health, now, true); err != nil {
				return err
			}
		}
		did := "registered"
		switch r.Outcome {
		case Unchanged:
			did = "registered again, unchanged"
		case Updated:
			did = "registered again, " + strings.Join(r.Changed, ", ") + " changed"
		}
		msg := fmt.Sprintf("plugin %q %s (%s)", p.ID, did, describeFingerprint(fp))
		if joined {
			if r.Outcome != Created {
				did += "," // "registered again, unchanged, with its controller on ..."
			}
			msg = fmt.Sprintf("plugin %q %s with its controller on %s and its node on %s (%s)",
				p.ID, did, p.ControllerSocket, p.NodeSocket, describeFingerprint(fp))
		}
		if len(forgot) > 0 {
			msg += fmt.Sprintf("; the unfinished deletes of snapshots %s, which volctl has no record of, were sent to the ID's earlier driver: forgotten, not sent to this one",
				strings.Join(forgot, ", "))
		}
		return tx.Events().Append(&store.Event{Kind: "plugin-register", PluginID: p.ID, Message: msg})
	})
	if sa := (*storedAsError)(nil); errors.As(err, &sa) {
		e.forget(p.ID) // connected under the ID as given; bySpecID registers the stored one
		return PluginInfo{}, err
	}
	if err != nil {
		return PluginInfo{}, fmt.Errorf("register plugin %q: %w", sp.ID, err)
	}
	if c != nil {
		// The stored row changed (UpdatedAt): the connection, made for this very declaration,
		// serves the stored row. Only its rowAt changes, under e.mu; its plugin row is read by
		// other goroutines (the agent's probe, reconcile) without a lock, and is left as it is.
		e.mu.Lock()
		c.rowAt = p.UpdatedAt
		e.mu.Unlock()
	}
	infos, err := e.pluginInfos(ctx, p.ID, nil)
	if err != nil {
		return PluginInfo{}, err
	}
	return infos[0], nil
}

// pluginChanges names what a registration again changes of plugin old, registered before: the
// fields of its declaration p, and the driver and its version when fp (nil: not reached)
// answers with another. exec's env is named, never its values.
func pluginChanges(old, p store.Plugin, fp *csi.Fingerprint) []string {
	var changed []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"type", old.Type == p.Type},
		{"socket", old.Socket == p.Socket},
		{"controller_socket", old.ControllerSocket == p.ControllerSocket},
		{"node_socket", old.NodeSocket == p.NodeSocket},
		{"timeout", old.Timeout == p.Timeout},
		{"exec", execSame(old.Exec, p.Exec)},
		// Another driver answering (allowed while no volume uses the ID: checkReregistration)
		// was "unchanged" (TestRegisterAgainForAnotherDriverIsNotUnchanged).
		{"driver", fp == nil || old.Fingerprint.Provider == "" || old.Fingerprint.Provider == fp.Provider},
		{"version", fp == nil || old.Fingerprint.At.IsZero() || old.Fingerprint.Version == fp.Version},
		// Capabilities lost or gained, of the halves both declare (as its plugin-capabilities
		// event compares them): a plugin back without STAGE_UNSTAGE_VOLUME under a staged
		// volume was "unchanged" (TestRegisterAgainOfAPluginThatLostStageUnstageIsNotUnchanged).
		{"capabilities", fp == nil || old.Fingerprint.At.IsZero() || !capsDiffer(p.Type, old.Fingerprint, fp)},
	} {
		if !f.same {
			changed = append(changed, f.name)
		}
	}
	return changed
}

// respellVolumesAsNode records the topologies of plugin pluginID's volumes with each key spelled
// as its node states them (node: NodeGetInfo's segments), where they differ only in case
// (spelledAsNode): volctl admits claims by them folding keys, Nomad, which the export and the
// handover write them for, compares keys as bytes. A create and a registration record them so
// when the node's topology is known; a volume made through a controller half registered alone
// was not, and its Nomad spec was placed on no node while volctl said it schedulable here
// (TestExportNomadOfAVolumeCreatedThroughAControllerHalfIsPlaceableByNomad). Respelled when
// read instead, what went to Nomad drifted with the plugin's record
// (TestNomadStatusOfAHandedOverVolumeDoesNotDriftWhenItsPluginIsDeregistered).
func respellVolumesAsNode(tx *store.Tx, pluginID string, node map[string]string) error {
	if len(node) == 0 {
		return nil
	}
	vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: pluginID})
	if err != nil {
		return err
	}
	for _, v := range vols {
		topo, req := spelledAsNode(v.AccessibleTopology, node), spelledTopologyRequest(v.TopologyRequest, node)
		if reflect.DeepEqual(topo, v.AccessibleTopology) && reflect.DeepEqual(req, v.TopologyRequest) {
			continue
		}
		v.AccessibleTopology, v.TopologyRequest = topo, req
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
	}
	return nil
}

// spelledTopologyRequest is req with each key of its required and preferred topologies spelled
// as node (spelledAsNode); nil for nil.
func spelledTopologyRequest(req *spec.TopologyRequest, node map[string]string) *spec.TopologyRequest {
	if req == nil || len(node) == 0 {
		return req
	}
	spelled := *req
	spelled.Required, spelled.Preferred = spelledAsNode(req.Required, node), spelledAsNode(req.Preferred, node)
	return &spelled
}

// capsDiffer says whether fingerprint fp has other capabilities than was, of the halves a
// plugin declared as typ has (declaredCapsChange).
func capsDiffer(typ spec.PluginType, was store.Fingerprint, fp *csi.Fingerprint) bool {
	lost, gained, _ := declaredCapsChange(typ, was, fingerprintToStore(fp, time.Time{}))
	return len(lost)+len(gained) > 0
}

// execSame reports whether two exec blocks start the same process.
func execSame(a, b *spec.Exec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Command == b.Command && slices.Equal(a.Args, b.Args) && maps.Equal(a.Env, b.Env)
}

// joinRegisteredHalf makes registering one half of a split plugin (type controller or node)
// what Nomad users expect of a plugin ID served by a controller job and a node job: when the
// plugin ID is registered with the other half, the two are joined into one plugin with both
// sockets (spec.JoinSplit), and registering a half again replaces only that half. Anything
// else is registered as declared, replacing what was there. To turn a registered half into
// the other, deregister it first.
func (e *Engine) joinRegisteredHalf(ctx context.Context, sp spec.Plugin) (spec.Plugin, bool, error) {
	if !spec.IsSplitHalf(sp.Type) {
		return sp, false, nil
	}
	type result struct {
		sp     spec.Plugin
		joined bool
	}
	r, err := viewOne(ctx, e.store, func(tx *store.Tx) (result, error) {
		sp, joined, err := joinHalfWith(tx, sp)
		return result{sp, joined}, err
	})
	if err != nil {
		return sp, false, err
	}
	return r.sp, r.joined, nil
}

// describeStored says how plugin id is registered as tx reads it, for messages.
func describeStored(tx *store.Tx, id string) string {
	p, err := tx.Plugins().Get(id)
	if err != nil {
		return "not registered"
	}
	return "registered as " + describeSockets(p)
}

// joinHalfWith is joinRegisteredHalf with the plugin's row as tx reads it.
func joinHalfWith(tx *store.Tx, sp spec.Plugin) (spec.Plugin, bool, error) {
	if !spec.IsSplitHalf(sp.Type) {
		return sp, false, nil
	}
	old, err := tx.Plugins().Get(sp.ID)
	if errors.Is(err, store.ErrNotFound) {
		return sp, false, nil
	}
	if err != nil {
		return sp, false, err
	}
	// The other half as registered: a plugin of the other type, or that half of a plugin
	// already joined (a monolith on two sockets).
	// A timeout an older volctl stored outside its bounds joins clamped, as it is used.
	old.Timeout, _ = spec.ClampPluginTimeout(old.Timeout)
	other := spec.Plugin{ID: old.ID, Exec: old.Exec, Timeout: old.Timeout}
	split := old.Type == spec.PluginMonolith && old.Socket == "" && old.ControllerSocket != "" && old.NodeSocket != ""
	switch {
	case sp.Type == spec.PluginNode && (old.Type == spec.PluginController || split):
		other.Type, other.ControllerSocket = spec.PluginController, firstNonEmpty(old.ControllerSocket, old.Socket)
	case sp.Type == spec.PluginController && (old.Type == spec.PluginNode || split):
		other.Type, other.NodeSocket = spec.PluginNode, firstNonEmpty(old.NodeSocket, old.Socket)
	default:
		return sp, false, nil
	}
	if split {
		// A joined plugin has one timeout: the new half's when it gives one, else the kept one.
		other.Timeout = 0
		if sp.Timeout == 0 {
			sp.Timeout = old.Timeout
		}
	}
	joined, problem := spec.JoinSplit(other, sp)
	if problem != "" {
		return sp, false, invalidf("registered as %s, this %s half cannot join it: %s", describeSockets(old), sp.Type, problem)
	}
	return joined, true, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// describeSockets says how a registered plugin is reached, for messages.
func describeSockets(p store.Plugin) string {
	if p.Socket != "" {
		return fmt.Sprintf("a %s on %s", p.Type, p.Socket)
	}
	switch p.Type {
	case spec.PluginController:
		return "a controller on " + p.ControllerSocket
	case spec.PluginNode:
		return "a node plugin on " + p.NodeSocket
	}
	return fmt.Sprintf("a plugin with its controller on %s and its node on %s", p.ControllerSocket, p.NodeSocket)
}

// checkReregistration refuses to register another driver under a plugin ID whose volumes
// belong to the registered one: their external IDs mean nothing to the new driver.
//
// The registered driver is the record's, or, for an ID deregistered with --force while volumes
// still name it, the one its kept record says it last gave (store.LeftPlugin): registered
// again with another driver on its socket, the ID's volumes were handed to that driver, and a
// delete's NOT_FOUND from it dropped a record of storage the first still held
// (TestReregisterAfterForcedDeregisterOfAnotherDriverIsRefused).
func checkReregistration(tx *store.Tx, id string, fp *csi.Fingerprint) error {
	provider, err := recordedProvider(tx, id)
	if err != nil {
		return err
	}
	if fp == nil || provider == "" || provider == fp.Provider {
		return nil
	}
	vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: id})
	if err != nil || len(vols) == 0 {
		return err
	}
	was := "it is registered as driver"
	if _, err := tx.Plugins().Get(id); errors.Is(err, store.ErrNotFound) {
		was = "it was deregistered with --force as driver"
	}
	return conflictf("%s %q and %d volume(s) use it (%s), but its socket now serves %q; "+
		"their storage is that driver's: start %q on the socket again, or deregister the volumes first",
		was, provider, len(vols), volumeIDs(vols, 5), fp.Provider, provider)
}

func describeFingerprint(fp *csi.Fingerprint) string {
	if fp == nil {
		return "not fingerprinted"
	}
	return fp.Provider + " " + fp.Version
}

// checkPluginType refuses a declaration the plugin contradicts: a controller or monolith that
// serves no controller, or a node or monolith without a node service.
func checkPluginType(sp spec.Plugin, fp *csi.Fingerprint) error {
	wantController := sp.Type == spec.PluginController || sp.Type == spec.PluginMonolith
	if wantController && !fp.Capabilities.Plugin.ControllerService {
		return &kindWrap{kind: ErrAnsweredAsAnotherType, err: invalidf("declared %s but the plugin does not advertise CONTROLLER_SERVICE "+
			"(declare it as type \"node\"; or, if it was started with other flags than it serves its volumes with, start it as declared)", sp.Type)}
	}
	wantNode := sp.Type == spec.PluginNode || sp.Type == spec.PluginMonolith
	if wantNode && !fp.Node {
		return &kindWrap{kind: ErrAnsweredAsAnotherType, err: invalidf("declared %s but the plugin has no node service "+
			"(declare it as the type it serves; or, if it was started with other flags than it serves its volumes with, start it as declared)", sp.Type)}
	}
	return nil
}

// ErrAnsweredAsAnotherType is a registration refused (ErrInvalid too) because the plugin on the
// socket answers as another type than declared: the running process's word, which its own
// supervisor restarting it as declared changes, not the declaration's alone. The agent does not
// stop at it, as at a declaration that can never run: it tries the registration again.
var ErrAnsweredAsAnotherType = errors.New("the plugin answers as another type than declared")

// probe asks a plugin whether it is healthy and ready, timing the answer.
func (e *Engine) probe(ctx context.Context, c *conn) store.Health {
	h, _ := e.probeErr(ctx, c)
	return h
}

// probeErr is probe with the Probe's error, which the health words as its LastError.
func (e *Engine) probeErr(ctx context.Context, c *conn) (store.Health, error) {
	start := time.Now()
	ready, err := c.client.Probe(ctx)
	h := store.Health{Healthy: err == nil, Ready: err == nil && ready, ProbeLatency: time.Since(start), ProbedAt: e.cfg.Now().UTC()}
	if err != nil {
		h.LastError = err.Error()
	} else if !ready {
		h.LastError = "plugin says it is not ready yet"
	}
	return h, err
}

// Plugins lists the registered plugins with their last recorded health, without contacting them.
func (e *Engine) Plugins(ctx context.Context) ([]PluginInfo, error) {
	return e.pluginInfos(ctx, "", nil)
}

// PluginSpecs returns every registered plugin's declaration, exec block included, as the agent
// needs it to start and supervise plugins. The exec environment is a spec.Secrets: it prints
// redacted.
func (e *Engine) PluginSpecs(ctx context.Context) ([]spec.Plugin, error) {
	var out []spec.Plugin
	err := e.store.View(ctx, func(tx *store.Tx) error {
		plugins, err := tx.Plugins().List()
		for _, p := range plugins {
			out = append(out, p.Spec())
		}
		return err
	})
	return out, err
}

// PluginMounts is what a plugin may hold mounted on this host, as the store records it.
type PluginMounts struct {
	// Mounts are publish targets of claims node-staged (NodePublishVolume sent or being sent:
	// a plugin that does not stage may have mounted), published or unpublishing, and stagings
	// in place.
	Mounts int
	// InDoubt are stagings whose intent is committed but not the stage: a NodeStageVolume
	// being sent (by any process: the intent is committed before the RPC, at admission or in
	// nodeStage), or one whose answer was lost, may have mounted; a NodeUnstageVolume not yet
	// confirmed may not have unmounted. The release path unstages each of them.
	InDoubt int
	// Publishing says a publish through the plugin (a claim's or a restore's, by any process)
	// holds its publish lock: it may be about to send NodeStageVolume or NodePublishVolume, or
	// be sending one, before the store shows it (HoldPluginMountsOf). So does the undoing of a
	// staging or an attachment (a release's, reconcile's, a forced detach's: undoUnused),
	// whose ControllerUnpublishVolume follows a commit that leaves no mount to count.
	Publishing bool
}

// Any reports whether the plugin may hold a mount.
func (m PluginMounts) Any() bool { return m.Mounts+m.InDoubt > 0 || m.Publishing }

// HoldPluginMountsOf counts a plugin's mounts as PluginMounts does, under the plugin's publish
// lock taken exclusively without waiting, and returns with the lock held: until release, no
// process starts a publish through the plugin (publish waits for the lock), so a plugin the
// count finds without mounts can be stopped before release without a claim admitted after the
// count getting its NodeStageVolume or NodePublishVolume sent to the plugin being stopped.
// When a publish holds the lock, m.Publishing is set, the store is not read, and nothing is
// held. release is never nil. served, when not nil, are the sockets the plugin's process was
// started to serve, whose publish locks it holds too (HoldPluginMountsServing says why).
func (e *Engine) HoldPluginMountsOf(ctx context.Context, pluginID string, served *spec.Plugin) (m PluginMounts, release func(), err error) {
	var also []store.Plugin
	if served != nil {
		also = append(also, storePluginOf(*served))
	}
	return e.holdPluginMounts(ctx, pluginID, false, also)
}

// HoldPluginMountsServing is HoldPluginMountsOf waiting for the lock while ctx lasts, for a stop
// made once (the agent's of a deregistered plugin, or at its own stop), which nothing tries
// again: a publish or release holding the lock ends in moments, and so does another process's
// brief hold of it (a reconcile pass's tidy of the lock files), where the look without waiting
// found it held, said a publish was under way, and left the plugin's process running for good,
// nothing supervising it. m.Publishing is set only when ctx ended first.
//
// It holds too the publish lock of the node socket served declares: the socket the process to
// be stopped serves, which the plugin as stored may no longer name (registered again on another
// socket, or deregistered with --force while a claim published through it). A publish under way
// through that socket holds its lock; before, the agent took the stored plugin's alone (another
// socket's, or the ID's) and stopped the process under it
// (TestSocketMoveDoesNotStopThePluginUnderAPublishOnItsOldSocket,
// TestForcedDeregisterDoesNotStopThePluginUnderAPublish).
//
// started, when not nil, are the sockets the process was started to serve (recorded in its pid
// file), which served, the declaration it runs for now, may no longer name: an earlier agent
// left it running, the plugin registered again on another socket since.
func (e *Engine) HoldPluginMountsServing(ctx context.Context, pluginID string, served spec.Plugin, started *spec.Plugin) (m PluginMounts, release func(), err error) {
	also := []store.Plugin{storePluginOf(served)}
	if started != nil {
		also = append(also, storePluginOf(*started))
	}
	return e.holdPluginMounts(ctx, pluginID, true, also)
}

// storePluginOf is the stored form of declaration sp, for its sockets.
func storePluginOf(sp spec.Plugin) store.Plugin {
	return store.Plugin{ID: sp.ID, Type: sp.Type, Socket: sp.Socket, ControllerSocket: sp.ControllerSocket, NodeSocket: sp.NodeSocket}
}

// also are the sockets the process serves (served declarations, as stored), whose publish
// locks are held too and whose plugins' mounts count: an adopted process left serving its old
// socket serves the plugins registered there since, and was stopped under their mounts
// (TestOutdatedProcessIsNotStoppedUnderItsOldSocketMatesMounts).
func (e *Engine) holdPluginMounts(ctx context.Context, pluginID string, wait bool, also []store.Plugin) (m PluginMounts, release func(), err error) {
	release = func() {}
	// By the ID as stored (byStoredID), as PluginMounts counts: a plugin an older volctl stored
	// decomposed, named in NFC by the agent's configuration, is on its socket's lock, which
	// publishes through it take, not on a lock of the name alone.
	p, err := byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) (store.Plugin, error) {
		return viewOne(ctx, e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(id) })
	})
	if errors.Is(err, store.ErrNotFound) {
		p, err = store.Plugin{ID: pluginID}, nil // no socket known: the plugin ID's lock
	}
	if err != nil {
		return m, release, err
	}
	locks := publishLocks(p)
	for _, a := range also {
		for _, name := range publishLocks(a) {
			if !slices.Contains(locks, name) {
				locks = append(locks, name)
			}
		}
	}
	slices.Sort(locks) // publishLocks' order: a publish holding one of them waits for no other here
	var (
		unlock func()
		ok     bool
	)
	if wait {
		unlock, err = e.locks.all(ctx, locks, fmt.Sprintf("plugin %q's publishes and releases", pluginID), false)
		if err != nil && ctx.Err() != nil {
			err = nil // still held when ctx ended: a publish under way
		}
		ok = unlock != nil
	} else {
		unlock, ok, err = e.locks.exclusiveAll(locks)
	}
	switch {
	case err != nil:
		return m, release, fmt.Errorf("plugin %q publish lock: %w", pluginID, err)
	case !ok:
		m.Publishing = true
		return m, release, nil
	}
	if m, err = e.pluginMountsServing(ctx, p.ID, also); err != nil {
		unlock()
		return m, release, err
	}
	return m, unlock, nil
}

// recordedProvider is the driver name plugin id last gave, as its record keeps it, or as the
// record of its deregistration with --force does (store.LeftPlugin); "" when neither says.
func recordedProvider(tx *store.Tx, id string) (string, error) {
	p, err := tx.Plugins().Get(id)
	if err == nil {
		return p.Fingerprint.Provider, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	left, err := tx.Plugins().ListLeft()
	if i := slices.IndexFunc(left, func(l store.LeftPlugin) bool { return l.ID == id }); err == nil && i >= 0 {
		return leftReach(left[i]).provider, nil
	}
	return "", err
}

// pluginMountsServing is PluginMounts, counting too the mounts of the plugins registered on
// the sockets also declare (socketsMates).
func (e *Engine) pluginMountsServing(ctx context.Context, pluginID string, also []store.Plugin) (PluginMounts, error) {
	if len(also) == 0 {
		return e.PluginMounts(ctx, pluginID)
	}
	return byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) (PluginMounts, error) {
		return viewOne(ctx, e.store, func(tx *store.Tx) (PluginMounts, error) {
			ids, err := socketMates(tx, id)
			if err != nil {
				return PluginMounts{}, err
			}
			provider, err := recordedProvider(tx, id) // the process's driver: its plugin's
			if err != nil {
				return PluginMounts{}, err
			}
			for _, a := range also {
				more, err := socketsMates(tx, a, provider)
				if err != nil {
					return PluginMounts{}, err
				}
				maps.Copy(ids, more)
			}
			return pluginMountsOf(tx, ids)
		})
	})
}

// PluginMounts counts a plugin's mounts and mounts in doubt in one read of the store: the
// agent never stops a plugin that may hold one. They are the plugin process's: those made
// through any plugin ID registered on one of its sockets count (socketMates).
func (e *Engine) PluginMounts(ctx context.Context, pluginID string) (PluginMounts, error) {
	return byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) (PluginMounts, error) { return e.pluginMountsStored(ctx, id) })
}

// pluginMountsStored is PluginMounts of the ID as stored (byStoredID).
func (e *Engine) pluginMountsStored(ctx context.Context, pluginID string) (PluginMounts, error) {
	return viewOne(ctx, e.store, func(tx *store.Tx) (PluginMounts, error) { return pluginMountsIn(tx, pluginID) })
}

// pluginMountsIn is PluginMounts in transaction tx.
func pluginMountsIn(tx *store.Tx, pluginID string) (PluginMounts, error) {
	ids, err := socketMates(tx, pluginID)
	if err != nil {
		return PluginMounts{}, err
	}
	return pluginMountsOf(tx, ids)
}

// pluginMountsOf counts the mounts and mounts in doubt made through the plugin IDs ids.
func pluginMountsOf(tx *store.Tx, ids map[string]bool) (PluginMounts, error) {
	var m PluginMounts
	err := func() error {
		mine := map[string]bool{}
		for id := range ids {
			vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: id})
			if err != nil {
				return err
			}
			for _, v := range vols {
				mine[v.ID] = true
			}
		}
		claims, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		for _, c := range claims {
			switch {
			case !mine[c.VolumeID]:
			case c.State == store.ClaimNodeStaged, c.State == store.ClaimPublished, c.State == store.ClaimUnpublishing:
				m.Mounts++
			}
		}
		stagings, err := tx.Stagings().List()
		if err != nil {
			return err
		}
		for _, st := range stagings {
			switch {
			case !mine[st.VolumeID] && !ids[st.PluginID]:
			case st.Staged:
				m.Mounts++
			case st.StagingPath != "":
				m.InDoubt++
			}
		}
		return nil
	}()
	return m, err
}

// refuseSocketMoveUnderMounts refuses a registration moving plugin p, which the agent runs (an
// exec block), to other sockets while it holds mounts: the agent keeps its process on the old
// ones until it has none (it never stops a plugin under mounts), while every command goes to
// the new ones from the registration on, finds nothing there, and so never releases them: the
// claims were left unpublishing for good, claim GC and reconcile failing every pass
// (TestExecPluginsSocketIsNotMovedFromUnderItsMounts).
func refuseSocketMoveUnderMounts(tx *store.Tx, p store.Plugin) error {
	old, err := tx.Plugins().Get(p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if old.Exec == nil || slices.Equal(pluginSockets(old), pluginSockets(p)) {
		return nil
	}
	m, err := pluginMountsIn(tx, p.ID)
	if err != nil || m.Mounts+m.InDoubt == 0 {
		return err
	}
	return conflictf("plugin %q, which the agent runs on %s, holds %d mount(s) (%d more in doubt): the agent moves it to %s only once it has none, and every command would go there meanwhile, finding nothing, "+
		"so its claims could not be released; nothing was recorded: release the volumes' claims first (`volctl volume ls` lists them), then register it again",
		p.ID, strings.Join(pluginSockets(old), " and "), m.Mounts, m.InDoubt, strings.Join(pluginSockets(p), " and "))
}

// refuseNodeDroppedUnderMounts refuses a registration of plugin p without a node service (a
// controller plugin) where its row declared one while volumes are mounted through it on this
// host: nothing could send their NodeUnpublishVolume or NodeUnstageVolume from then on, the
// claims shown published, reconcile saying nothing, the release refused "no node service".
// Before, it was taken, "updated", healthy (TestRegisterAgainWithoutTheNodeServiceUnderMountsIsNotSilent),
// as a socket move under mounts is refused (refuseSocketMoveUnderMounts) and a deregister
// leaving an owed unpublish is.
func refuseNodeDroppedUnderMounts(tx *store.Tx, p store.Plugin) error {
	old, err := tx.Plugins().Get(p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || !declaresNode(old.Type) || declaresNode(p.Type) {
		return err
	}
	m, err := pluginMountsOf(tx, map[string]bool{p.ID: true})
	if err != nil || m.Mounts+m.InDoubt == 0 {
		return err
	}
	vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: p.ID})
	if err != nil {
		return err
	}
	var mounted []string
	for _, v := range vols {
		claims, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		st, serr := tx.Stagings().Get(v.ID)
		if serr != nil && !errors.Is(serr, store.ErrNotFound) {
			return serr
		}
		if st.Staged || st.StagingPath != "" || slices.ContainsFunc(claims, func(c store.Claim) bool {
			return c.State == store.ClaimNodeStaged || c.State == store.ClaimPublished || c.State == store.ClaimUnpublishing
		}) {
			mounted = append(mounted, strconv.Quote(v.ID))
		}
	}
	return conflictf("plugin %q is registered with a node service, through which volume(s) %s are mounted on this host (%d mount(s), %d more in doubt): registered as a %s plugin, "+
		"nothing could unpublish or unstage them; nothing was recorded: release those volumes' claims first (`volctl volume ls` lists them), or register its node service beside the controller (a spec with both, or its node half too)",
		p.ID, listSome(mounted, 10, func(s string) string { return s }), m.Mounts, m.InDoubt, p.Type)
}

// PluginEvent appends an event about a plugin to the event log, e.g. the agent starting,
// losing or restarting a plugin process. A failure to record it is logged, not returned. The
// events a crash loop repeats (loopingKinds) are bounded as a plugin's changes of health are
// (appendLooping).
func (e *Engine) PluginEvent(ctx context.Context, pluginID, kind, message string) {
	ev := &store.Event{Kind: kind, PluginID: pluginID, Message: message}
	if _, ok := loopingKinds[kind]; !ok {
		e.event(ctx, ev)
		return
	}
	ev.Message = stopWords(ctx, ev.Message)
	now := e.cfg.Now()
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error { return appendLooping(tx, ev, now) }); err != nil {
		e.log.Warn("writing the event log", "err", err)
	}
}

// loopingKinds are the events of a plugin's process the agent records at each of its starts,
// exits, restarts and daemons followed, with what they say of it. A plugin that exits at every
// start (bad credentials, a missing device, a command that is not there) is restarted at most
// a minute apart, for as long as the agent runs: two or three events a minute, which pushed the
// rest of the event log (10,000 rows: every claim and release recorded) out within three days
// (TestCrashLoopingPluginIsBoundedInTheEventLog).
var loopingKinds = map[string]struct{ did, them, this string }{
	"plugin-start":   {"was started, or failed to start,", "starts", "start"},
	"plugin-exit":    {"exited", "exits", "exit"},
	"plugin-restart": {"was restarted", "restarts", "restart"},
	"plugin-daemon":  {"left a daemon", "daemons", "daemon"}, // a plugin that daemonises at each start, its daemon dying
}

// appendLooping appends ev, an event of a kind loopingKinds names, unless the plugin's newest
// flapChanges events of that kind fall within flapWindow of now (flapping): then the first one
// past them is recorded as a notice saying so, and the next ones not at all, until the older
// ones are an hour old. The agent's log has every one.
func appendLooping(tx *store.Tx, ev *store.Event, now time.Time) error {
	k := loopingKinds[ev.Kind]
	mark := fmt.Sprintf("plugin %q is looping: it %s", ev.PluginID, k.did)
	notice := fmt.Sprintf("%s %d times within an hour, and its %s are not recorded until fewer happen (the agent's log has each; `%s` shows its health now); this %s: ",
		mark, flapChanges, k.them, shellquote.Command("volctl plugin status", ev.PluginID), k.this)
	return appendBounded(tx, ev, ofPlugin(ev), now, false, mark, notice)
}

// ofPlugin is the filter of ev's kind of events of its plugin, which a plugin's loop repeats.
func ofPlugin(ev *store.Event) store.EventFilter {
	return store.EventFilter{Kind: ev.Kind, PluginID: ev.PluginID}
}

// appendBounded appends ev unless the newest flapChanges events of those it repeats (same,
// its kind of its plugin, or of its claim) fall within flapWindow of now (flapping) and the
// newest of them begins with mark, the notice already recorded; when they fall so and it does
// not, ev is recorded as the notice, its own message after it. A first event (first) is always
// recorded as it is.
func appendBounded(tx *store.Tx, ev *store.Event, same store.EventFilter, now time.Time, first bool, mark, notice string) error {
	recent, err := tx.Events().Recent(flapChanges, same)
	if err != nil {
		return err
	}
	if !first && flapping(recent, now) {
		if strings.HasPrefix(recent[0].Message, mark) {
			return nil
		}
		ev.Message = notice + ev.Message
	}
	return tx.Events().Append(ev)
}

// PluginStatus probes plugins live (one, or all when id is empty), records what it learns, and
// returns them: a fresh fingerprint and health for each, the error kept for an unreachable one.
// It is a read: recording never waits for another process's write lock (see checkHealth), and
// what it returns is what the probes found, recorded or not.
func (e *Engine) PluginStatus(ctx context.Context, id string) ([]PluginInfo, error) {
	return byStoredID(ctx, e, store.PluginIDs, id, func(id string) ([]PluginInfo, error) { return e.pluginStatusStored(ctx, id) })
}

// pluginStatusStored is PluginStatus of the ID as stored (byStoredID).
func (e *Engine) pluginStatusStored(ctx context.Context, id string) ([]PluginInfo, error) {
	var plugins []store.Plugin
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		plugins, err = oneOrAll(id, tx.Plugins().Get, tx.Plugins().List)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundf("plugin %q is not registered", id)
	}
	if err != nil {
		return nil, err
	}
	// All at once: a hung plugin costs one timeout, not one per plugin in the list.
	readings := make([]reading, len(plugins))
	var wg sync.WaitGroup
	for i, p := range plugins {
		crash.GoGroup(&wg, func() {
			readings[i] = e.checkHealth(ctx, p)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		// Stopped while probing: say which plugins, not the state read that would fail next.
		ids := make([]string, len(plugins))
		for i, p := range plugins {
			ids[i] = fmt.Sprintf("%q", p.ID)
		}
		return nil, fmt.Errorf("interrupted while probing plugin %s: %w", strings.Join(ids, ", "), context.Cause(ctx))
	}
	live := map[string]reading{}
	for i, p := range plugins {
		live[p.ID] = readings[i]
	}
	return e.pluginInfos(ctx, id, live)
}

// reading is what one health check found: the health, and the fingerprint when it connected,
// of the plugin as registered on sockets, for driver (its recorded fingerprint's, "" for none).
type reading struct {
	health  store.Health
	fp      *store.Fingerprint
	sockets []string
	driver  string
}

// of reports whether the reading is of plugin p as registered now: on the sockets it probed,
// for the driver it knew (either without one recorded, the same).
func (r reading) of(p store.Plugin) bool {
	return slices.Equal(r.sockets, pluginSockets(p)) &&
		(r.driver == "" || p.Fingerprint.Provider == "" || r.driver == p.Fingerprint.Provider)
}

// errRegisteredAnew refuses to record a reading of a plugin registered again, on other sockets
// or for another driver, since it was read: it is the earlier registration's.
var errRegisteredAnew = errors.New("the plugin was registered again meanwhile, on other sockets or for another driver")

// checkHealth connects to a plugin (fingerprinting it again if it restarted), probes it and
// records the result, with an event when its health changed. It returns the reading.
//
// Recording does not wait for another process's write lock: a command that only shows plugins
// (volctl status, plugin status, the dashboard's probe) must not stall for up to the busy
// timeout behind a writer for a reading it can show without storing. When the lock is taken
// the reading is not stored (nor the health event); the next check, which takes it again,
// stores it.
func (e *Engine) checkHealth(ctx context.Context, p store.Plugin) reading {
	r := reading{sockets: pluginSockets(p), driver: p.Fingerprint.Provider}
	replaced := false // another driver answers on the connection's sockets
	c, err := e.connectPlugin(ctx, p, false)
	defer e.done(c)
	if err != nil {
		r.health = store.Health{LastError: err.Error(), ProbedAt: e.cfg.Now().UTC()}
		e.forget(p.ID)
	} else {
		// The connection is kept whatever Probe answers: other goroutines of this process (the
		// agent's reconcile and claim GC) may have RPCs in flight on it, which closing it would
		// cut short (Canceled); a plugin that restarted makes new socket files, on which
		// connectPlugin (and checkSockets, mid-operation) connects and fingerprints afresh.
		r.health = e.probe(ctx, c)
		if r.health.Healthy {
			// A plugin replaced behind a socket something else holds keeps the socket file, so
			// the connection's fingerprint may be an earlier instance's: a probe (the agent's,
			// every 30 s; status; the dashboard) asks the driver's name too, one short RPC, and
			// one that is not the registered driver shows unhealthy, as on a new socket file,
			// its fingerprint marked stale so that the next connection refuses it.
			// A driver that answers Probe but not GetPluginInfo (an error, a hang to the RPC's
			// bound) is not known to be the registered one: not healthy, and its fingerprint
			// marked stale as well, so that the next connection asks its name before any volume
			// RPC. Before, the comparison was skipped, the plugin shown healthy and its
			// fingerprint reused, volume RPCs sent to whatever answered
			// (TestProbeOfAHeldSocketWhoseDriverWillNotSayItsNameIsNotHealthy).
			// Each socket is asked: a split plugin's node half replaced behind its held socket
			// was shown healthy, the controller's name alone asked, and claims then staged and
			// published by the other driver
			// (TestSplitPluginStatusSeesAnotherDriverBehindItsHeldNodeSocket).
			var ierr error
			if names, err := c.client.DriverNames(ctx); err == nil {
				if socket, now, ok := anotherDriverOn(p.Fingerprint.Provider, names); ok && p.Fingerprint.Provider != "" {
					ierr = servedByAnother(p, socket, now)
				}
			} else if ctx.Err() == nil {
				ierr = fmt.Errorf("%w: which driver answers on the plugin's socket cannot be told, so the plugin is not taken for %q", err, p.Fingerprint.Provider)
			}
			if ierr != nil {
				e.mu.Lock()
				e.retire(c)
				e.mu.Unlock()
				replaced = true // its fingerprint is marked stale with the reading, below
				r.health.Healthy, r.health.Ready, r.health.LastError = false, false, ierr.Error()
			}
		}
		if !c.fpRecorded.Load() && !replaced {
			fp := c.storedFingerprint(e.cfg.Now())
			r.fp = &fp
		}
	}
	// A probe refused for a connection accepted by another process than the listener
	// (servers.checkAccepted) is recorded with the reading: the next check fingerprints the plugin.
	var seen map[string]socketID
	if c != nil {
		seen = c.servers.takeElsewhere()
	}
	// Health is a reading of now, retaken every probe: it need not be forced to disk. The
	// fingerprint of a new connection goes with it (see connectPlugin).
	err = e.store.TryUpdateProgress(ctx, func(tx *store.Tx) error {
		cur, err := tx.Plugins().Get(p.ID)
		if err != nil {
			return err
		}
		if !r.of(cur) {
			// Registered again by another volctl while this probed (a registration the probe
			// does not wait for), on other sockets or, on the same, for another driver (its
			// binary replaced): what it found is of the registration it read, and written over
			// the new row it pinned the new registration to the earlier driver, every
			// connection then refused as "now served by" the driver registered
			// (TestProbeDoesNotWriteItsFingerprintOverARegistrationAnew,
			// TestProbeDoesNotWriteItsFingerprintOverARegistrationAnewOnTheSameSocket). The
			// connection's own record checks the same (pluginStillRegistered).
			return errRegisteredAnew
		}
		if seen != nil {
			if err := recordAcceptedElsewhere(tx, p.ID, seen); err != nil {
				return err
			}
		}
		if replaced {
			if err := forgetFingerprintSockets(tx, c); err != nil {
				return err
			}
		}
		if r.fp != nil {
			// A probe may be the first to reach a restarted plugin (the agent's runner is):
			// a change of capabilities gets its event here, as on any other connection.
			if err := e.noteCapabilityChange(tx, p.ID, c.fp); err != nil {
				return err
			}
			all, err := tx.Plugins().List()
			if err != nil {
				return err
			}
			if err := moveTogether(tx, cur, all); err != nil {
				return err
			}
			if err := tx.Plugins().SetFingerprint(p.ID, *r.fp); err != nil {
				return err
			}
		}
		if err := tx.Plugins().SetHealth(p.ID, r.health); err != nil {
			return err
		}
		return recordHealth(tx, p.ID, cur.Health, r.health, e.cfg.Now())
	})
	switch {
	case err == nil:
		if r.fp != nil {
			c.fpRecorded.Store(true)
		}
	case errors.Is(err, store.ErrBusy):
		e.log.Debug("plugin health not recorded: another volctl holds the state's write lock", "plugin", p.ID)
		// A refusal is not a reading the next probe takes again: it goes back to the client,
		// and the next operation's connection records it (with a write that waits) before it
		// reads the row, or the stored `listener` has it refused the same way. A process that
		// ends here (`plugin status`) leaves it to the next process's first operation, which
		// is refused once, nothing sent, and records it.
		if seen != nil {
			c.servers.giveBack(seen)
		}
	case errors.Is(err, errRegisteredAnew):
		e.log.Debug("plugin health not recorded", "plugin", p.ID, "err", err)
	case e.store.CheckWritable() != nil:
		// A read-only file system, or a bind of the state dir at another path: the reading is
		// shown, and every write would fail the same way.
		e.log.Debug("plugin health not recorded: the state cannot be written here", "plugin", p.ID, "err", err)
	case ctx.Err() != nil:
		// The command was stopped (a signal): its own error says so and where; a warning here
		// printed Go's "context canceled" before it (TestPluginStatusStoppedBySignalSaysTheSignal).
		e.log.Debug("plugin health not recorded: interrupted", "plugin", p.ID, "err", err)
	case !errors.Is(err, store.ErrNotFound):
		e.log.Warn("recording plugin health", "plugin", p.ID, "err", err)
	}
	return r
}

// healthEvent describes a change of health worth an event, or nil.
func healthEvent(id string, before, after store.Health) *store.Event {
	b, a := healthState(before), healthState(after)
	if b == a && !before.ProbedAt.IsZero() {
		return nil
	}
	msg := fmt.Sprintf("plugin %q became %s", id, a)
	if after.LastError != "" {
		msg += ": " + after.LastError
	}
	return &store.Event{Kind: "plugin-health", PluginID: id, Message: msg}
}

// healthState is the word for h in a plugin-health event.
func healthState(h store.Health) string {
	switch {
	case !h.Healthy:
		return "unhealthy"
	case !h.Ready:
		return "not ready"
	}
	return "healthy"
}

// A plugin whose health flaps (healthy, unhealthy, healthy at every other probe: a backend
// half up, a liveness check racing its own restarts) had every change recorded as an event:
// one at least every 30 s, the agent's probe while it is ready, every 5 s while not, which
// pushed the rest of the event log (10,000 rows) out within a day or two
// (TestFlappingPluginHealthIsBoundedInTheEventLog). Past flapChanges events about its health
// within flapWindow, its changes are not recorded: one event says so, naming where its health
// is shown; once its older changes are past the window, they are recorded again.
const (
	flapChanges = 6
	flapWindow  = time.Hour
)

// flappingMark begins the event saying a plugin's changes of health are not recorded for now.
func flappingMark(id string) string { return fmt.Sprintf("plugin %q is flapping", id) }

// recordHealth records in the event log what a probe of plugin id found, before being the
// health its row held: a change (healthEvent, bounded by appendHealthEvent), or, for a health
// unchanged since the row's last reading in another settleCheckEvery slot, its settling after
// the changes appendHealthEvent left unrecorded (healthSinceEvent).
func recordHealth(tx *store.Tx, id string, before, after store.Health, now time.Time) error {
	if ev := healthEvent(id, before, after); ev != nil {
		return appendHealthEvent(tx, ev, now, before.ProbedAt.IsZero())
	}
	if before.ProbedAt.IsZero() || before.ProbedAt.Truncate(settleCheckEvery).Equal(now.Truncate(settleCheckEvery)) {
		return nil
	}
	return healthSinceEvent(tx, id, after, now, false)
}

// settleCheckEvery is how often a probe that found a plugin's health unchanged reads its newest
// health event (healthSinceEvent): at the first probe in each such slot of the clock, as the
// row's last probe tells, whichever process probes. The events table has no index by plugin: a
// stable plugin's newest health event is far back in a busy log, and reading back to it at
// every probe (every 30 s, and every `plugin status`) cost 1.5 ms of CPU each (BENCHMARKS.md).
const settleCheckEvery = 10 * time.Minute

// appendHealthEvent appends ev, a change of a plugin's health (healthEvent), unless the plugin
// flaps: its newest flapChanges events of health within flapWindow of now. Then the first
// change past them is recorded as a flapping notice, and the next ones not at all. A first
// reading (a plugin registered again under its ID) is always recorded.
func appendHealthEvent(tx *store.Tx, ev *store.Event, now time.Time, first bool) error {
	notice := fmt.Sprintf("%s: its health changed %d times within an hour, and its changes are not recorded until fewer do (`%s` shows its health now)%s",
		flappingMark(ev.PluginID), flapChanges, shellquote.Command("volctl plugin status", ev.PluginID), thisChange)
	return appendBounded(tx, ev, ofPlugin(ev), now, first, flappingMark(ev.PluginID), notice)
}

// thisChange joins a flapping notice to the change it was written for.
const thisChange = "; this change: "

// flapping reports whether recent, a plugin's newest flapChanges events of health, all fall
// within flapWindow of now: its changes are not recorded for now. The events' times are the
// wall clock's, stamped by whichever process recorded them, so no monotonic reading measures
// their age: one dated after now was stamped before the clock stepped back (NTP correcting a
// clock that ran ahead, a VM resumed with a wrong one), and its age is unknown. It is not
// counted as within the window: taken as younger than the hour, changes dated a day ahead left
// the plugin's changes, and its settling (healthSinceEvent), unrecorded for a day and the hour,
// the newest event saying the opposite of `plugin status` all along
// (TestFlappingRuleAfterTheClockSteppedBackRecordsTheSettling). Not counted, they let at most
// flapChanges changes more be recorded, on the stepped clock, before the rule holds again.
func flapping(recent []store.Event, now time.Time) bool {
	if len(recent) != flapChanges {
		return false
	}
	age := now.Sub(recent[flapChanges-1].At)
	return age >= 0 && age < flapWindow
}

// healthSinceEvent records a plugin's health h when it is not the one its newest health event
// says: at a probe that found the health unchanged since the row's last reading, once the
// plugin no longer flaps; at a registration (registered), always. A plugin that settled within
// the hour of its flapping notice, in the state opposite to the change the notice names,
// changes no more, so no change would ever record it, and the newest event said the opposite
// of `volctl plugin status` for good (TestFlappingPluginThenSettledIsRecorded); a plugin
// registered again under its ID stores its health with the registration, no change either
// (TestReRegisteredPluginsFirstReadingIsRecorded). It reads the event log, not the process's
// memory: the agent and every command probe the plugin, each in its own process. Its cost is
// one read of the plugin's newest health event at such a probe (once per settleCheckEvery) or
// registration, and of its newest flapChanges only when that one says otherwise.
func healthSinceEvent(tx *store.Tx, id string, h store.Health, now time.Time, registered bool) error {
	f := store.EventFilter{Kind: "plugin-health", PluginID: id}
	newest, err := tx.Events().Recent(1, f)
	if err != nil || len(newest) == 0 || eventHealth(id, newest[0].Message) == healthState(h) {
		return err
	}
	if !registered {
		recent, err := tx.Events().Recent(flapChanges, f)
		if err != nil || flapping(recent, now) {
			return err
		}
	}
	msg := fmt.Sprintf("plugin %q stopped flapping: it became %s", id, healthState(h))
	if registered {
		msg = fmt.Sprintf("plugin %q became %s", id, healthState(h))
	}
	if h.LastError != "" {
		msg += ": " + h.LastError
	}
	return tx.Events().Append(&store.Event{Kind: "plugin-health", PluginID: id, Message: msg})
}

// eventHealth is the state a plugin-health event of plugin id says the plugin is in
// (healthState's words), "" if it says none.
func eventHealth(id, msg string) string {
	if rest, ok := strings.CutPrefix(msg, flappingMark(id)); ok {
		_, msg, _ = strings.Cut(rest, thisChange)
	}
	for _, prefix := range []string{fmt.Sprintf("plugin %q became ", id), fmt.Sprintf("plugin %q stopped flapping: it became ", id)} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			for _, state := range []string{"unhealthy", "not ready", "healthy"} {
				if strings.HasPrefix(rest, state) {
					return state
				}
			}
		}
	}
	return ""
}

// DeregisterPlugin forgets a plugin. It is refused while volumes use the plugin, unless force,
// and, force or not, while a ControllerUnpublishVolume is owed through it (a volume recorded
// attached with no claim: a forced detach could not send it), since nothing would be left to
// send it through.
func (e *Engine) DeregisterPlugin(ctx context.Context, id string, force bool) error {
	_, err := byStoredID(ctx, e, store.PluginIDs, id, func(id string) (struct{}, error) { return struct{}{}, e.deregisterPluginStored(ctx, id, force) })
	return err
}

// deregisterPluginStored is DeregisterPlugin of the ID as stored (byStoredID).
func (e *Engine) deregisterPluginStored(ctx context.Context, id string, force bool) error {
	// Read first, so that a plugin gone by the write was deregistered by another volctl
	// meanwhile (two deregistrations at once), said so: not "not registered" with the advice
	// to look in another state dir or at a near ID (TestPluginDeregisteredByAnotherMeanwhileIsSaidSo).
	_, seenErr := viewOne(ctx, e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(id) })
	// Owing an unpublish, whose refusal words what sends it from the recorded fingerprint
	// (owedUnpublishWay), the plugin is reached first: its instance's now
	// (TestOwedUnpublishRefusalReadsThePluginAsItIsNow).
	owes, _ := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) {
		vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: id})
		if err != nil {
			return false, err
		}
		return refuseOwedUnpublishes(tx, id, vols) != nil, nil
	})
	if owes {
		e.refreshPlugin(ctx, id)
	}
	e.failpoint("plugin-deregister:read")
	err := e.store.Update(ctx, func(tx *store.Tx) error {
		p, err := tx.Plugins().Get(id)
		if err != nil {
			return err
		}
		vols, err := tx.Volumes().List(store.VolumeFilter{PluginID: id})
		if err != nil {
			return err
		}
		if err := refuseOwedUnpublishes(tx, id, vols); err != nil {
			return err
		}
		if len(vols) > 0 && !force {
			return conflictf("plugin %q is used by %d volume(s): %s (deregister or delete them first, or pass --force)",
				id, len(vols), volumeIDs(vols, 5))
		}
		// A snapshot is deleted through the driver that made it. Its record keeps the socket
		// and driver name, so it stays deletable after --force, but only while that driver
		// still answers there: refuse by default rather than leave that to chance.
		snaps, err := tx.Snapshots().List(id)
		if err != nil {
			return err
		}
		if len(snaps) > 0 && !force {
			return conflictf("plugin %q has %d snapshot(s) recorded: %s (delete them first with `%s SNAPSHOT_ID`, or pass --force to forget the plugin and keep them recorded: they stay deletable through the socket they were made on while the same driver answers there)",
				id, len(snaps), snapshotIDs(snaps, 5), shellquote.Command("volctl volume snapshot delete", id))
		}
		// A snapshot create under way or cut short may have made its snapshot: only a
		// CreateSnapshot sent again (reconcile's, or a delete by its name) learns it. Not looked
		// for, the deregistration went ahead silently, and the next reconcile made the snapshot
		// through the plugin the user had just let go of
		// (TestPluginDeregisterWithASnapshotBeingCreatedIsRefused).
		creates, err := tx.Snapshots().ListCreates(id)
		if err != nil {
			return err
		}
		if len(creates) > 0 && !force {
			return conflictf("plugin %q has %d snapshot create(s) under way or cut short: %s (the plugin may have made them: `volctl reconcile` finishes them, then delete them, "+
				"or `%s NAME` finishes one and deletes what it made; or pass --force to forget the plugin and keep them recorded)",
				id, len(creates), listSome(creates, 5, func(sc store.SnapshotCreate) string {
					return fmt.Sprintf("%q of volume %q", sc.Name, sc.SourceVolumeID)
				}),
				shellquote.Command("volctl volume snapshot delete", id))
		}
		forgot, err := forgetUnrecordedDeletes(tx, id)
		if err != nil {
			return err
		}
		if err := tx.Plugins().Delete(id); err != nil {
			return err
		}
		if len(vols) > 0 {
			// Its volumes record no socket of their own: kept, where they were reached ties
			// them to the plugin IDs registered there since (matesBy).
			if err := tx.Plugins().PutLeft(p); err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("plugin %q deregistered", id)
		if len(forgot) > 0 {
			msg += fmt.Sprintf(", the unfinished delete(s) of %d snapshot(s) volctl has no record of forgotten (the plugin may still have them: "+
				"delete them with the storage provider's tools): %s", len(forgot), strings.Join(forgot, ", "))
		}
		if len(vols) > 0 {
			msg += fmt.Sprintf(" with --force while %d volume(s) use it", len(vols))
		}
		if len(creates) > 0 {
			msg += fmt.Sprintf(", %d snapshot create(s) left recorded, finished through the socket they were sent to", len(creates))
		}
		if len(snaps) > 0 {
			msg += fmt.Sprintf(", %d snapshot(s) left recorded, deletable through the socket they were made on", len(snaps))
		}
		return tx.Events().Append(&store.Event{Kind: "plugin-deregister", PluginID: id, Message: msg})
	})
	if errors.Is(err, store.ErrNotFound) && seenErr == nil {
		return fmt.Errorf("deregister plugin %q: %w", id, &goneMeanwhile{msg: fmt.Sprintf("plugin %q was deregistered by another volctl meanwhile", id)})
	}
	if errors.Is(err, store.ErrNotFound) {
		return notFoundf("deregister plugin %q: not registered", id)
	}
	if err != nil {
		return fmt.Errorf("deregister plugin %q: %w", id, err)
	}
	e.forget(id)
	// Its volumes' staging directories went with them; the plugin's own goes now, if empty
	// (with --force, volumes it staged keep theirs until they are deleted or deregistered).
	e.removeStagingDir(ctx, id, "")
	return nil
}

// refuseOwedUnpublishes returns a conflict naming the volumes of plugin id (vols) for which a
// ControllerUnpublishVolume is owed, their nodes, and what to run, if there are any.
func refuseOwedUnpublishes(tx *store.Tx, id string, vols []store.Volume) error {
	mine := make(map[string]bool, len(vols))
	for _, v := range vols {
		mine[v.ID] = true
	}
	stagings, err := tx.Stagings().List()
	if err != nil {
		return err
	}
	type owed struct{ volume, node string }
	var all []owed
	var nomad []store.Handover // handed over, the attachment kept for Nomad's allocations
	for _, st := range stagings {
		if !mine[st.VolumeID] {
			continue
		}
		ok, err := unpublishOwed(tx, st)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		all = append(all, owed{st.VolumeID, attachedNode(st)})
		if h, err := tx.Handovers().Get(st.VolumeID); err == nil {
			nomad = append(nomad, h)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if len(all) == 0 {
		return nil
	}
	forget := "`volctl volume deregister VOLUME --force --yes`"
	if len(all) == 1 {
		forget = "`" + shellquote.CommandFlags("volctl volume deregister", []string{all[0].volume}, "--force", "--yes") + "`"
	}
	handed := ""
	if len(nomad) > 0 {
		// Reconcile leaves those alone and volume deregister refuses them until the take-back.
		handed = fmt.Sprintf(". Of those, %s handed over to Nomad: take each back first (%s)",
			listSome(nomad, 5, func(h store.Handover) string { return fmt.Sprintf("%q", h.VolumeID) }),
			listSome(nomad, 5, func(h store.Handover) string { return handoverInfo(h).TakeBackCommands() }))
	}
	way, err := owedUnpublishWay(tx, id, false)
	if err != nil {
		return err
	}
	return conflictf("plugin %q owes ControllerUnpublishVolume for %d volume(s) recorded attached with no claim (a forced detach could not send it, or the plugin lost PUBLISH_UNPUBLISH_VOLUME): %s; "+
		"deregistering the plugin, even with --force, would leave nothing to send it through. %s, then deregister again; "+
		"or deregister the volume with %s, which sends it too and, if the plugin still cannot take it, forgets the attachment%s",
		id, len(all), listSome(all, 5, func(o owed) string { return fmt.Sprintf("volume %q on node %q", o.volume, o.node) }), way, forget, handed)
}

func snapshotIDs(snaps []store.Snapshot, max int) string {
	return listSome(snaps, max, func(sn store.Snapshot) string { return fmt.Sprintf("%q", sn.SnapshotID) })
}

func volumeIDs(vols []store.Volume, max int) string {
	return listSome(vols, max, func(v store.Volume) string { return fmt.Sprintf("%q", v.ID) })
}

// listSome shows up to max items, comma-separated, and how many more there are.
func listSome[T any](items []T, max int, show func(T) string) string {
	parts := make([]string, 0, min(len(items), max+1))
	for i, it := range items {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(items)-max))
			break
		}
		parts = append(parts, show(it))
	}
	return strings.Join(parts, ", ")
}

// pluginInfos returns one plugin (or all) from the store, with the count of volumes using each.
// live holds readings just taken, which replace the stored ones: the store may not have them
// (checkHealth skips the write while another process holds the lock).
func (e *Engine) pluginInfos(ctx context.Context, id string, live map[string]reading) ([]PluginInfo, error) {
	var out []PluginInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		plugins, err := oneOrAll(id, tx.Plugins().Get, tx.Plugins().List)
		if err != nil {
			return err
		}
		for _, p := range plugins {
			n, err := tx.Volumes().CountByPlugin(p.ID)
			if err != nil {
				return err
			}
			// A reading of the sockets registered: not of those of a registration another
			// volctl replaced meanwhile.
			if r, ok := live[p.ID]; ok && r.of(p) {
				p.Health = r.health
				if r.fp != nil {
					p.Fingerprint = *r.fp
				}
			}
			info := pluginInfo(p, n)
			if ch := p.CapabilityChange; ch != nil {
				info.CapabilityChange = &CapabilityChange{At: ch.At, Lost: ch.Lost, Gained: ch.Gained}
			}
			out = append(out, info)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundf("plugin %q is not registered", id)
	}
	e.agentLiveness(out)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

func pluginInfo(p store.Plugin, volumes int) PluginInfo {
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	return PluginInfo{
		ID: p.ID, Type: p.Type, ControllerSocket: cfg.ControllerSocket, NodeSocket: cfg.NodeSocket,
		Supervised: supervised(p),
		Provider:   p.Fingerprint.Provider, Version: p.Fingerprint.Version, NodeID: p.Fingerprint.NodeID,
		MaxVolumes: p.Fingerprint.MaxVolumes, Topology: p.Fingerprint.Topology,
		Capabilities: CapabilityNames{
			Plugin:     nonNil(p.Fingerprint.PluginCaps),
			Controller: nonNil(p.Fingerprint.ControllerCaps),
			Node:       nonNil(p.Fingerprint.NodeCaps),
		},
		Healthy: p.Health.Healthy, Ready: p.Health.Ready, ProbeLatency: Duration(p.Health.ProbeLatency),
		LastError: p.Health.LastError, ProbedAt: p.Health.ProbedAt, FingerprintedAt: p.Fingerprint.At,
		Volumes: volumes, Supervision: supervisionInfo(p.Supervision, p.Exec == nil), noExec: p.Exec == nil,
		key: p.ID,
	}
}

// supervised is PluginInfo.Supervised: an exec plugin the agent has not found served by a
// process it did not start, or a plugin without an exec block whose socket's process the agent
// records it runs (the process of another ID on the socket, which the agent runs as that ID's:
// TestPluginStatusSaysTheAgentRunsTheProcessOfAnIDWithoutAnExecBlockOnItsSocket; before, it
// said false of it). agentLiveness makes the latter false once that agent is gone: no exec
// block says an agent would run it again.
func supervised(p store.Plugin) bool {
	s := p.Supervision
	if p.Exec == nil {
		return s != nil && (s.Mode == store.SupervisionRuns || s.Mode == store.SupervisionDaemon ||
			s.Mode == store.SupervisionStartFailed || s.Mode == store.SupervisionExited) // starting it again
	}
	return s == nil || s.Mode != store.SupervisionProbed
}

// supervisionInfo is what the agent recorded of a plugin's process, as PluginInfo shows it;
// noExec says the plugin has no exec block (now).
func supervisionInfo(s *store.Supervision, noExec bool) *Supervision {
	if s == nil {
		return nil
	}
	can := s.Mode == store.SupervisionRuns || s.Mode == store.SupervisionDaemon
	starts := can || s.Mode == store.SupervisionStartFailed || s.Mode == store.SupervisionExited
	return &Supervision{Mode: s.Mode, Pid: s.Pid, Note: s.Note, CanStop: can, CanRestart: starts, AgentPid: s.AgentPid, At: s.At, noExec: noExec}
}

// agentAtWork says a record of mode says an agent does something with the process now: runs
// it, follows its daemon, probes it, or starts it (again).
func agentAtWork(mode string) bool {
	switch mode {
	case store.SupervisionRuns, store.SupervisionDaemon, store.SupervisionProbed, store.SupervisionStartFailed, store.SupervisionExited:
		return true
	}
	return false
}

// agentLiveness says of each record in infos that the agent that recorded it is gone
// (Supervision.AgentGone) when it holds the state dir's agent lock no more, for the modes that
// say an agent does something now (runs, daemon, probed, start-failed, exited: agentAtWork): an agent killed with SIGKILL leaves
// its last record, "runs", which plugin status and the dashboard showed as true. The lock, not
// the pid: the kernel drops the lock with the process, and may give its pid to any process
// since. The lock's holders are looked up (store.FlockPids) once for all records, and only
// when one needs it; when /proc/locks cannot be read, or a holder is in a PID namespace this
// process cannot see (pid 0), the records are left as the agent wrote them.
func (e *Engine) agentLiveness(infos []PluginInfo) {
	var (
		read, known bool
		holders     []int
	)
	for i := range infos {
		s := infos[i].Supervision
		if s == nil || !agentAtWork(s.Mode) {
			continue
		}
		if !read {
			read = true
			holders, known = e.agentLockHolders()
		}
		if !known || slices.Contains(holders, 0) || slices.ContainsFunc(holders, func(h int) bool { return sameProcess(h, s.AgentPid) }) {
			continue
		}
		s.AgentGone, s.CanStop, s.CanRestart = true, false, false
		if infos[i].noExec {
			infos[i].Supervised = false // no exec block: no agent runs it again
		}
		if len(holders) > 0 {
			s.AgentNow = holders[0]
			s.AgentGoneBy = e.agentStartedAt(holders[0])
		}
	}
}

// agentStartedAt is when the agent pid, holding the agent lock, wrote run/agent.pid (its
// mtime), which it writes only once it has the lock: an agent gone before it took the lock was
// gone by then (Supervision.AgentGoneBy). Zero when the file is not a regular file, is larger
// than a pid, or names another process (the file of a killed agent stays until the next one
// writes its own; a holder in a nested PID namespace writes the pid it sees, NSpid's last).
func (e *Engine) agentStartedAt(pid int) time.Time {
	path := filepath.Join(e.cfg.StateDir, "run", "agent.pid")
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64 {
		return time.Time{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 || !sameProcess(pid, n) {
		return time.Time{}
	}
	return fi.ModTime()
}

// agentLockHolders lists the processes holding the state dir's agent lock, this one included
// (store.FlockPids); none, and known, when its file is not there (no agent ever ran here).
func (e *Engine) agentLockHolders() (pids []int, known bool) {
	pids, known, err := store.FlockPids(filepath.Join(e.locks.dir, "agent.lock"))
	if errors.Is(err, fs.ErrNotExist) {
		pids, known, err = nil, true, nil
	}
	if len(pids) == 0 {
		// An agent whose locks directory was removed under it holds the state dir's
		// agent.lock still (LockAgent): read as gone, it was shown so while it ran.
		if held, ok, derr := store.FlockPids(filepath.Join(e.cfg.StateDir, agentPinName)); derr == nil && ok && len(held) > 0 {
			return held, true
		}
	}
	return pids, known && err == nil
}

// sameProcess reports whether holder, a pid in this process's PID namespace, is the process an
// agent recorded as pid in its own: the same number, or one of the pids /proc/<holder>/status's
// NSpid gives it in the namespaces nested below this one (an agent in a container, its state
// dir shared with the host).
func sameProcess(holder, pid int) bool {
	if holder == pid {
		return true
	}
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(holder), "status"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			return slices.Contains(strings.Fields(rest), strconv.Itoa(pid))
		}
	}
	return false
}

// RecordSupervision records what the agent does with plugin id's process (store.Supervision's
// modes), by the agent running as agentPid, for plugin status and the dashboard.
func (e *Engine) RecordSupervision(ctx context.Context, id, mode string, pid int, note string, agentPid int) error {
	err := e.store.UpdateProgress(ctx, func(tx *store.Tx) error {
		return tx.Plugins().SetSupervision(id, store.Supervision{Mode: mode, Pid: pid, Note: note, AgentPid: agentPid})
	})
	if errors.Is(err, store.ErrNotFound) {
		return notFoundf("plugin %q is not registered", id) // deregistered meanwhile
	}
	return err
}

// ExecEnvRuns records, for the agent, that the one process of plugin id that may run now was
// started with env (nil: none runs, the agent stopped it): the values kept of the plugin's
// earlier exec envs that env does not hold (store's exec_env_kept, kept while a process started
// with them may run) are let go, and forgotten as any secret leaving the state. It costs one
// read when there are none, as at almost every start.
func (e *Engine) ExecEnvRuns(ctx context.Context, id string, env spec.Secrets) error {
	var beyond bool
	if err := e.store.ViewShort(ctx, func(tx *store.Tx) (err error) {
		beyond, err = tx.Plugins().HoldsEnvBeyond(id, env.Plain())
		return err
	}); err != nil || !beyond {
		return err
	}
	return e.store.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.Plugins().LetGoEnv(id, env.Plain())
		return err
	})
}

// ExecEnvHandedOver records, for the agent, that the process of plugin from (deregistered) runs
// as plugin to's now: the values kept of from's earlier exec envs, which it was started with,
// are kept as to's, let go when to's process is replaced or stopped (ExecEnvRuns). Left as
// from's, the next agent's start let them go (no pid file of from's) while the process ran on.
func (e *Engine) ExecEnvHandedOver(ctx context.Context, from, to string) error {
	return e.store.Update(ctx, func(tx *store.Tx) error { return tx.Plugins().MoveKeptEnv(from, to) })
}

// ExecEnvKeptOfGone returns the plugin IDs not registered of which values of earlier exec envs
// are kept (ExecEnvRuns): a deregistration keeps them while its process may run. For the agent,
// which lets go of those no process of it runs with (none started by an agent: no pid file).
func (e *Engine) ExecEnvKeptOfGone(ctx context.Context) ([]string, error) {
	var ids []string
	err := e.store.ViewShort(ctx, func(tx *store.Tx) (err error) {
		ids, err = tx.Plugins().EnvKeptOfGone()
		return err
	})
	return ids, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// forgetUnrecordedDeletes forgets the recorded deletes (snapshot_deletes) of plugin id's
// snapshots volctl has no record of, as the plugin is deregistered, and returns their IDs.
// Nothing records the driver they were sent to: reconcile would send them to whatever driver
// is registered under the ID later, deleting its snapshot of that ID
// (TestReview30fRecordedDeleteSentToAnotherDriverUnderTheID). A recorded snapshot's delete
// stays: its record names the driver and socket it is deleted through.
func forgetUnrecordedDeletes(tx *store.Tx, id string) ([]string, error) {
	dels, err := tx.Snapshots().ListDeleting()
	if err != nil {
		return nil, err
	}
	var forgot []string
	for _, d := range dels {
		if d.PluginID != id {
			continue
		}
		if _, err := tx.Snapshots().Get(id, d.SnapshotID); !errors.Is(err, store.ErrNotFound) {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := tx.Snapshots().Undelete(id, d.SnapshotID); err != nil {
			return nil, err
		}
		forgot = append(forgot, strconv.Quote(d.SnapshotID))
	}
	return forgot, nil
}

// refuseJoinedStorage refuses a registration of plugin p that makes it a mate of plugin IDs it
// was not one of (pathMates; before: its mates as it was registered), on one of their socket
// paths now, while one of its volumes and one of theirs record the same external ID (one
// spelled otherwise may be another volume of a case-sensitive plugin, as register allows).
// Each on a socket of its own, the two records were two plugins' volumes; on one socket they
// are one process's storage under two volume IDs, whose claims would ignore each other's access
// mode, which volume register and create refuse to make (sameStorage). Before, `plugin
// register` of such a move said "socket changed" and the two records stayed
// (`TestPluginMovedOntoASocketWhoseVolumesItRecordsIsRefused`). Mates it had already are not
// looked at: a registration again, the agent's at every start, is not refused for a pair an
// older volctl recorded (a claim of either is, while the other holds it:
// refuseStorageInUseElsewhere). The caller's transaction has put p's new row.
func refuseJoinedStorage(tx *store.Tx, p store.Plugin, before map[string]bool) error {
	id, socketWords := p.ID, describeSockets(p)
	after, err := pathMates(tx, id)
	if err != nil {
		return err
	}
	var joined []string
	for m := range after {
		if !before[m] {
			joined = append(joined, m)
		}
	}
	if len(joined) == 0 {
		return nil
	}
	mine, err := tx.Volumes().List(store.VolumeFilter{PluginID: id})
	if err != nil || len(mine) == 0 {
		return err
	}
	byID := make(map[string]store.Volume, len(mine))
	for _, v := range mine {
		if v.ExternalID != "" {
			byID[v.ExternalID] = v
		}
	}
	slices.Sort(joined)
	for _, m := range joined {
		theirs, err := tx.Volumes().List(store.VolumeFilter{PluginID: m})
		if err != nil {
			return err
		}
		for _, o := range theirs {
			v, ok := byID[o.ExternalID]
			if !ok || o.ExternalID == "" {
				continue
			}
			return conflictf("plugin %q, registered as %s, would be one process with plugin %q, and its volume %q records the storage of that plugin's volume %q (%s): "+
				"one storage under two volume IDs, whose claims would ignore each other's access mode; nothing was recorded. "+
				"`%s` or `%s` forgets one of the two records (the storage stays), then register the plugin again",
				id, socketWords, m, v.ID, o.ID, storageWords(v.ExternalID, id, m),
				shellquote.Command("volctl volume deregister", v.ID), shellquote.Command("volctl volume deregister", o.ID))
		}
	}
	return nil
}
