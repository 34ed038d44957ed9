package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// RegisterVolume records an existing volume of a registered, reachable plugin. With a controller
// service, the plugin must confirm the volume's capabilities first. Registering an ID again
// updates it by Nomad's rules: name, external_id, plugin_id, parameters and topology cannot
// change, capacity can only grow, and an empty context keeps the stored one.
func (e *Engine) RegisterVolume(ctx context.Context, sv spec.Volume) (VolumeInfo, error) {
	fail := func(err error) (VolumeInfo, error) {
		return VolumeInfo{}, fmt.Errorf("register volume %q: %w", sv.ID, err)
	}
	c, unlock, err := e.lockSpecVolume(ctx, &sv)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	if needsControllerHalf(c) {
		return fail(noControllerHalf(store.VolumeFromSpec(sv)))
	}
	if c.fp.Controller {
		err := e.retry(ctx, c, csi.RPCValidateVolumeCapabilities, func(ctx context.Context) error {
			return c.client.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{
				VolumeID: sv.ExternalID, VolumeContext: sv.Context, Capabilities: volumeCapabilities(sv),
				Parameters: sv.Parameters, Secrets: sv.Secrets,
			})
		})
		if err != nil {
			return fail(err)
		}
	}
	if err := e.expandRegistered(ctx, c, sv); err != nil {
		return fail(err)
	}

	err = e.store.Update(ctx, func(tx *store.Tx) error {
		old, err := tx.Volumes().Get(sv.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// One plugin volume under two IDs would let each one's claims ignore the other's
			// access mode: two writers on a single-node-writer volume.
			same, err := tx.Volumes().List(store.VolumeFilter{PluginID: sv.PluginID, ExternalID: sv.ExternalID})
			if err != nil {
				return err
			}
			if len(same) > 0 {
				return conflictf("external ID %q on plugin %q is already registered as volume %q; "+
					"one plugin volume under two IDs would let their claims ignore each other's access mode", sv.ExternalID, sv.PluginID, same[0].ID)
			}
			v := store.VolumeFromSpec(sv)
			v.State = store.VolumeReady
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
			return tx.Events().Append(&store.Event{Kind: "volume-register", VolumeID: v.ID, PluginID: v.PluginID,
				Message: fmt.Sprintf("volume %q registered (external ID %q)", v.ID, v.ExternalID)})
		case err != nil:
			return err
		}
		if old.State != store.VolumeReady {
			return conflictf("volume %q is %s; run `volctl reconcile` to finish that first", old.ID, old.State)
		}
		if err := checkImmutable(old, sv, true); err != nil {
			return err
		}
		v := mergeRegistered(old, sv)
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-register", VolumeID: v.ID, PluginID: v.PluginID,
			Message: fmt.Sprintf("volume %q updated by a new registration", v.ID)})
	})
	if err != nil {
		return fail(err)
	}
	return e.Volume(ctx, sv.ID)
}

// expandRegistered grows an already registered volume whose re-registration asks for more than
// its known size, when the plugin can expand; otherwise the larger request is only recorded by
// the registration itself. It runs before the registration's update so that the expansion
// compares against the stored size, not the new request.
func (e *Engine) expandRegistered(ctx context.Context, c *conn, sv spec.Volume) error {
	var old store.Volume
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		old, err = tx.Volumes().Get(sv.ID)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case old.State != store.VolumeReady || checkImmutable(old, sv, true) != nil:
		return nil // the registration's own checks report it
	case sv.CapacityMin <= currentSize(old) || !canExpand(c):
		return nil
	}
	_, err = e.expandLocked(ctx, c, old, sv.CapacityMin, sv.CapacityMax)
	return err
}

// canExpand reports whether the plugin has any way to grow a volume.
func canExpand(c *conn) bool {
	return (c.fp.Controller && c.fp.Capabilities.Controller.ExpandVolume) || (c.fp.Node && c.fp.Capabilities.Node.ExpandVolume)
}

// checkImmutable refuses a re-submitted spec that changes what Nomad does not let change.
// External IDs are compared only for registration: a created volume's comes from the plugin.
func checkImmutable(old store.Volume, sv spec.Volume, register bool) error {
	type field struct {
		name     string
		was, now any
	}
	fields := []field{
		{"name", old.Name, sv.Name},
		{"namespace", old.Namespace, sv.Namespace},
		{"plugin_id", old.PluginID, sv.PluginID},
		{"parameters", nilIfEmpty(old.Parameters), nilIfEmpty(sv.Parameters)},
		{"topology_request", topologyOrNil(old.TopologyRequest), topologyOrNil(sv.TopologyRequest)},
	}
	if register {
		fields = append(fields, field{"external_id", old.ExternalID, sv.ExternalID})
	} else {
		fields = append(fields,
			field{"snapshot_id", old.SnapshotID, sv.SnapshotID},
			field{"clone_id", old.CloneID, sv.CloneID})
	}
	advice := "deregister and register it again to change it"
	if !register {
		advice = "a created volume keeps it: delete the volume and create it again to change it"
	}
	for _, f := range fields {
		if reflect.DeepEqual(f.was, f.now) {
			continue
		}
		change := fmt.Sprintf("it is %s, the spec says %s", describe(f.was), describe(f.now))
		if was, ok := f.was.(map[string]string); ok {
			change = describeMapChange(was, f.now.(map[string]string))
		}
		return conflictf("volume %q: %s cannot be changed (%s); %s", old.ID, f.name, change, advice)
	}
	if sv.CapacityMin != 0 && sv.CapacityMin < old.RequestedMin {
		return conflictf("volume %q: capacity_min cannot shrink (from %s to %s)", old.ID,
			spec.FormatSize(old.RequestedMin), spec.FormatSize(sv.CapacityMin))
	}
	return nil
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "empty"
		}
		return fmt.Sprintf("%q", x)
	case map[string]string:
		if x == nil {
			return "empty"
		}
		keys := sort.StringSlice(slicesFromKeys(x))
		keys.Sort()
		return "{" + strings.Join(keys, ", ") + "}"
	case *spec.TopologyRequest:
		if x == nil {
			return "empty"
		}
		return fmt.Sprintf("%d required, %d preferred", len(x.Required), len(x.Preferred))
	}
	return fmt.Sprint(v)
}

// describeMapChange says which keys of a map differ and how, in key order: `kind is "x", the
// spec says "y"; zone is not set, the spec says "a"`.
func describeMapChange(was, now map[string]string) string {
	keys := slicesFromKeys(was)
	for k := range now {
		if _, ok := was[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	value := func(m map[string]string, k string) string {
		if v, ok := m[k]; ok {
			return fmt.Sprintf("%q", v)
		}
		return "not set"
	}
	var parts []string
	for _, k := range keys {
		if a, b := value(was, k), value(now, k); a != b {
			parts = append(parts, fmt.Sprintf("%s is %s, the spec says %s", k, a, b))
		}
	}
	return strings.Join(parts, "; ")
}

func slicesFromKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func topologyOrNil(t *spec.TopologyRequest) *spec.TopologyRequest {
	if t == nil || (len(t.Required) == 0 && len(t.Preferred) == 0) {
		return nil
	}
	return t
}

// mergeRegistered applies a re-registration to the stored volume.
func mergeRegistered(old store.Volume, sv spec.Volume) store.Volume {
	v := old
	v.Capabilities = sv.Capabilities
	v.MountOptions = sv.MountOptions
	v.Secrets = sv.Secrets
	if len(sv.Context) > 0 {
		v.Context = sv.Context
	}
	if sv.CapacityMin > v.RequestedMin {
		v.RequestedMin = sv.CapacityMin
	}
	if sv.CapacityMax != 0 {
		v.RequestedMax = sv.CapacityMax
	}
	return v
}

// csiName is the name sent to CreateVolume: its idempotency key, derived only from namespace and
// ID so that a replay after a crash names the same volume. It is short, lower-case and made of
// letters, digits and dashes, which every plugin accepts, and a hash keeps distinct IDs distinct.
func csiName(namespace, id string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + id))
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 32 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug != "" {
		slug += "-"
	}
	return "volctl-" + slug + hex.EncodeToString(sum[:6])
}

// lockSpecVolume begins RegisterVolume and CreateVolume: it fills in sv's default namespace,
// takes the volume's lock and connects to its plugin. The caller runs unlock when done.
func (e *Engine) lockSpecVolume(ctx context.Context, sv *spec.Volume) (c *conn, unlock func(), err error) {
	if sv.Namespace == "" {
		sv.Namespace = spec.DefaultNamespace
	}
	if unlock, err = e.locks.volume(ctx, sv.ID); err != nil {
		return nil, nil, err
	}
	if c, err = e.connect(ctx, sv.PluginID); err != nil {
		unlock()
		return nil, nil, err
	}
	return c, unlock, nil
}

// CreateVolume provisions a volume through its plugin and records it. The intent (a row in
// state creating, with the CSI name) is committed before CreateVolume is sent, so a crash in
// between is healed by sending CreateVolume again with the same name — by the next create of
// the same spec or by reconcile — never by creating a second volume.
func (e *Engine) CreateVolume(ctx context.Context, sv spec.Volume) (VolumeInfo, error) {
	fail := func(err error) (VolumeInfo, error) {
		return VolumeInfo{}, fmt.Errorf("create volume %q: %w", sv.ID, err)
	}
	c, unlock, err := e.lockSpecVolume(ctx, &sv)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	if err := checkCreateCapabilities(c, sv); err != nil {
		return fail(err)
	}

	var v store.Volume
	done, replay := false, false
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		old, err := tx.Volumes().Get(sv.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			v = store.VolumeFromSpec(sv)
			v.ExternalID = ""
			v.State = store.VolumeCreating
			v.CSIName = csiName(sv.Namespace, sv.ID)
			if v.CloneID, err = e.cloneSource(tx, sv); err != nil {
				return err
			}
			return tx.Volumes().Insert(&v)
		case err != nil:
			return err
		}
		if old.State == store.VolumeDeleting {
			return conflictf("volume %q is being deleted; run `volctl reconcile` to finish that first", old.ID)
		}
		if err := checkImmutable(old, sv, false); err != nil {
			return err
		}
		if old.State == store.VolumeReady {
			done = true // creating an existing volume with the same spec changes nothing
			v = old
			return nil
		}
		v = old // an earlier create was interrupted: replay it with the stored name
		replay = true
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if done {
		if sv.CapacityMin > v.CapacityBytes && sv.CapacityMin > v.RequestedMin {
			return e.expandLocked(ctx, c, v, sv.CapacityMin, sv.CapacityMax)
		}
		return e.Volume(ctx, sv.ID)
	}
	failpoint("create:intent")
	if err := e.finishCreate(ctx, c, v, replay); err != nil {
		return fail(err)
	}
	return e.Volume(ctx, sv.ID)
}

// cloneSource resolves clone_id: a volctl volume ID of the same plugin means that volume's
// external ID; anything else is taken as the provider's volume ID.
func (e *Engine) cloneSource(tx *store.Tx, sv spec.Volume) (string, error) {
	if sv.CloneID == "" {
		return "", nil
	}
	src, err := tx.Volumes().Get(sv.CloneID)
	if err == nil && src.PluginID == sv.PluginID && src.ExternalID != "" {
		return src.ExternalID, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	return sv.CloneID, nil
}

func checkCreateCapabilities(c *conn, sv spec.Volume) error {
	ctrl := c.fp.Capabilities.Controller
	switch {
	case !c.fp.Controller || !ctrl.CreateDeleteVolume:
		return invalidf("plugin %q cannot create volumes (no CREATE_DELETE_VOLUME controller capability); register an existing volume instead", c.plugin.ID)
	case sv.CloneID != "" && !ctrl.CloneVolume:
		return invalidf("plugin %q cannot clone volumes (no CLONE_VOLUME controller capability)", c.plugin.ID)
	case sv.SnapshotID != "" && !ctrl.CreateDeleteSnapshot:
		return invalidf("plugin %q cannot restore snapshots (no CREATE_DELETE_SNAPSHOT controller capability)", c.plugin.ID)
	}
	return nil
}

// finishCreate sends CreateVolume for a volume in state creating and records the result. replay
// says an earlier call sent it already, its answer lost.
func (e *Engine) finishCreate(ctx context.Context, c *conn, v store.Volume, replay bool) error {
	req := csi.CreateVolumeRequest{
		Name: v.CSIName, CapacityMin: v.RequestedMin, CapacityMax: v.RequestedMax,
		Capabilities: volumeCapabilities(v.Spec()), Parameters: v.Parameters, Secrets: v.Secrets,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, TopologyRequest: v.TopologyRequest,
	}
	var (
		created csi.Volume
		sent    int
	)
	err := e.withController(ctx, c, func(ctx context.Context) error {
		return e.retry(ctx, c, csi.RPCCreateVolume, func(ctx context.Context) error {
			var err error
			sent++
			created, err = c.client.CreateVolume(ctx, req)
			return err
		})
	})
	failpoint("rpc:CreateVolume")
	if err != nil {
		if created.ID != "" {
			// The plugin made a volume we cannot use (smaller than asked): remove it again.
			_ = e.withController(ctx, c, func(ctx context.Context) error {
				if err := e.checkSockets(ctx, c, csi.RPCDeleteVolume); err != nil {
					return err
				}
				return c.client.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: created.ID, Secrets: v.Secrets})
			})
		}
		if csi.IsRetryable(err) || ctx.Err() != nil {
			e.event(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
				Code: csi.CodeOf(err).String(), Message: "create left for reconcile: " + err.Error()})
			return fmt.Errorf("%w (the create is recorded and `volctl reconcile` or the same create will finish it)", err)
		}
		if replay || sent > 1 {
			// A final error says this call created nothing, not that an earlier one whose
			// answer was lost did not: keep the intent, and the name that finds the volume.
			e.event(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
				Code: csi.CodeOf(err).String(), Message: "create failed, kept for reconcile: " + err.Error()})
			return fmt.Errorf("%w (an earlier CreateVolume's answer was lost, so the plugin may have the volume: the create stays recorded for `volctl reconcile` or the same create; `volctl volume delete %s` forgets it)", err, v.ID)
		}
		// A final error to the only CreateVolume sent: nothing was created, so forget the intent.
		if derr := e.store.Update(ctx, func(tx *store.Tx) error {
			if err := tx.Volumes().Delete(v.ID); err != nil {
				return err
			}
			return tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
				RPC: csi.RPCCreateVolume, Code: csi.CodeOf(err).String(), Message: "create failed: " + err.Error()})
		}); derr != nil {
			e.log.Warn("forgetting a failed create", "volume", v.ID, "err", derr)
		}
		return err
	}
	v.ExternalID = created.ID
	v.CapacityBytes = created.CapacityBytes
	if len(created.Context) > 0 {
		v.Context = created.Context
	}
	v.AccessibleTopology = created.AccessibleTopology
	v.State = store.VolumeReady
	var dup error
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		// One storage volume under two volctl IDs would let each one's claims ignore the other's
		// access mode, and deleting one would pull the storage from under the other. The check
		// and the record are one write transaction, so of two creates the plugin answers with
		// one ID, only the first to commit records it.
		same, err := tx.Volumes().List(store.VolumeFilter{PluginID: v.PluginID, ExternalID: v.ExternalID})
		if err != nil {
			return err
		}
		for _, o := range same {
			if o.ID == v.ID {
				continue
			}
			// The storage is the other volume's: it is not deleted. This create made nothing
			// volctl can use, so its intent is forgotten.
			dup = conflictf("plugin %q answered CreateVolume (name %q) with external ID %q, which is already volume %q; "+
				"the storage belongs to %q and is left alone, and this create is forgotten (the plugin maps two names onto one volume: report it to the plugin's authors)",
				v.PluginID, v.CSIName, v.ExternalID, o.ID, o.ID)
			if err := tx.Volumes().Delete(v.ID); err != nil {
				return err
			}
			return tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
				RPC: csi.RPCCreateVolume, Message: "create refused: " + dup.Error()})
		}
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCCreateVolume, Message: fmt.Sprintf("volume %q created (external ID %q)", v.ID, v.ExternalID)})
	})
	if err != nil {
		return err
	}
	if dup != nil {
		return dup
	}
	failpoint("create:ready")
	return nil
}

// withController runs fn holding the plugin's controller lock (one controller call per plugin at
// a time, across processes).
func (e *Engine) withController(ctx context.Context, c *conn, fn func(context.Context) error) error {
	unlock, err := e.locks.controller(ctx, c.plugin.ID)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(ctx)
}

// volumeCapabilities are the spec's capabilities as CSI requests them, each with the volume's
// mount options when it is a file-system capability.
func volumeCapabilities(sv spec.Volume) []csi.VolumeCapability {
	out := make([]csi.VolumeCapability, 0, len(sv.Capabilities))
	for _, c := range sv.Capabilities {
		vc := csi.VolumeCapability{Capability: c}
		if c.AttachmentMode == spec.FileSystem && sv.MountOptions != nil {
			vc.MountOptions = sv.MountOptions
		}
		out = append(out, vc)
	}
	return out
}

// Volumes lists every volume with its claim counts and whether it can take claims now. It is
// one query for the volumes and their claim counts and one for the plugins' health, whatever
// the number of volumes.
func (e *Engine) Volumes(ctx context.Context) ([]VolumeSummary, error) {
	var out []VolumeSummary
	err := e.store.View(ctx, func(tx *store.Tx) error {
		briefs, err := tx.Volumes().Briefs()
		if err != nil {
			return err
		}
		plugins, err := tx.Plugins().List()
		if err != nil {
			return err
		}
		healthy := map[string]bool{}
		for _, p := range plugins {
			healthy[p.ID] = p.Health.Healthy
		}
		out = make([]VolumeSummary, 0, len(briefs))
		for _, b := range briefs {
			out = append(out, VolumeSummary{
				ID: b.ID, Namespace: b.Namespace, Name: b.Name, PluginID: b.PluginID, State: string(b.State),
				Schedulable: b.State == store.VolumeReady && healthy[b.PluginID],
				AccessMode:  b.AccessMode, AttachmentMode: b.AttachmentMode, CapacityBytes: b.CapacityBytes,
				ReadClaims: b.ReadClaims, WriteClaims: b.WriteClaims, Unsettled: b.Unsettled,
			})
		}
		return nil
	})
	return out, err
}

func volumeSummary(v store.Volume, claims []store.Claim, pluginHealthy bool) VolumeSummary {
	s := VolumeSummary{
		ID: v.ID, Namespace: v.Namespace, Name: v.Name, PluginID: v.PluginID, State: string(v.State),
		Schedulable: v.State == store.VolumeReady && pluginHealthy,
		AccessMode:  v.AccessMode, AttachmentMode: v.AttachmentMode, CapacityBytes: v.CapacityBytes,
	}
	for _, c := range claims {
		if c.Mode == store.ClaimWrite {
			s.WriteClaims++
		} else {
			s.ReadClaims++
		}
		if !c.AtRest() {
			s.Unsettled++
		}
	}
	return s
}

// AmbiguousError is returned for a volume ID prefix that matches several volumes.
type AmbiguousError struct {
	Prefix  string
	Matches []VolumeSummary
}

func (e *AmbiguousError) Error() string {
	ids := make([]string, len(e.Matches))
	for i, m := range e.Matches {
		ids[i] = m.ID
	}
	return fmt.Sprintf("prefix %q matches %d volumes: %s", e.Prefix, len(e.Matches), strings.Join(ids, ", "))
}

// Is makes an ambiguous prefix an invalid request (exit 2).
func (e *AmbiguousError) Is(target error) bool { return target == ErrInvalid }

// Volume returns everything about one volume, found by its ID or an unambiguous ID prefix.
func (e *Engine) Volume(ctx context.Context, idOrPrefix string) (VolumeInfo, error) {
	var info VolumeInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		v, err := e.resolveVolume(tx, idOrPrefix)
		if err != nil {
			return err
		}
		claims, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		p, perr := tx.Plugins().Get(v.PluginID)
		if perr != nil && !errors.Is(perr, store.ErrNotFound) {
			return perr
		}
		st, serr := tx.Stagings().Get(v.ID)
		if serr != nil && !errors.Is(serr, store.ErrNotFound) {
			return serr
		}
		info = volumeInfo(v, claims, p, perr == nil, st.Staged)
		return nil
	})
	return info, err
}

// resolveVolume finds a volume by ID, else by unambiguous prefix.
func (e *Engine) resolveVolume(tx *store.Tx, idOrPrefix string) (store.Volume, error) {
	v, err := tx.Volumes().Get(idOrPrefix)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return v, err
	}
	matches, err := tx.Volumes().ByPrefix(idOrPrefix)
	if err != nil {
		return store.Volume{}, err
	}
	switch len(matches) {
	case 0:
		return store.Volume{}, notFoundf("volume %q not found", idOrPrefix)
	case 1:
		return matches[0], nil
	}
	amb := &AmbiguousError{Prefix: idOrPrefix}
	healthy := map[string]bool{} // by plugin, as the volume list shows it
	for _, m := range matches {
		claims, err := tx.Claims().ByVolume(m.ID)
		if err != nil {
			return store.Volume{}, err
		}
		h, seen := healthy[m.PluginID]
		if !seen {
			p, err := tx.Plugins().Get(m.PluginID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return store.Volume{}, err
			}
			h = err == nil && p.Health.Healthy
			healthy[m.PluginID] = h
		}
		amb.Matches = append(amb.Matches, volumeSummary(m, claims, h))
	}
	return store.Volume{}, amb
}

func volumeInfo(v store.Volume, claims []store.Claim, p store.Plugin, pluginKnown, staged bool) VolumeInfo {
	info := VolumeInfo{
		VolumeSummary: volumeSummary(v, claims, pluginKnown && p.Health.Healthy),
		ExternalID:    v.ExternalID, CSIName: v.CSIName,
		Provider: p.Fingerprint.Provider, ProviderVersion: p.Fingerprint.Version,
		PluginHealthy: pluginKnown && p.Health.Healthy, PluginReady: pluginKnown && p.Health.Ready,
		PluginError:  p.Health.LastError,
		RequestedMin: v.RequestedMin, RequestedMax: v.RequestedMax,
		Capabilities: v.Capabilities, MountOptions: v.MountOptions, TopologyRequest: v.TopologyRequest,
		AccessibleTopology: v.AccessibleTopology, Secrets: v.Secrets,
		Parameters: v.Parameters, Context: maps.Clone(v.Context),
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, Staged: staged, NodeExpansionOwed: v.NodeExpandMin,
		Claims: make([]ClaimInfo, 0, len(claims)), CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
	}
	if !pluginKnown {
		info.PluginError = fmt.Sprintf("plugin %q is not registered", v.PluginID)
	}
	for _, c := range claims {
		info.Claims = append(info.Claims, claimInfo(c))
	}
	return info
}

// DeregisterVolume forgets a volume without touching its storage. It is refused while the volume
// has live claims, naming them; with force, the claims are released first.
func (e *Engine) DeregisterVolume(ctx context.Context, id string, force bool) error {
	if force {
		if _, err := e.Detach(ctx, id, false); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("deregister volume %q: %w", id, err)
		}
	}
	unlock, err := e.locks.volume(ctx, id)
	if err != nil {
		return fmt.Errorf("deregister volume %q: %w", id, err)
	}
	defer unlock()
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		v, err := tx.Volumes().Get(id)
		if err != nil {
			return err
		}
		if err := refuseClaimed(tx, v.ID, "deregister"); err != nil {
			return err
		}
		if err := refuseHandedOver(tx, v.ID); err != nil {
			return err
		}
		// With no claims, a staging row is what a forced detach could not undo: forgetting the
		// volume forgets that record too, as it leaves the storage alone.
		msg := fmt.Sprintf("volume %q deregistered", v.ID)
		if st, err := tx.Stagings().Get(v.ID); err == nil {
			if st.ControllerPublished {
				msg += fmt.Sprintf(" (it may still be attached to node %q: volctl no longer tracks it)", st.NodeID)
			}
			if err := tx.Stagings().Delete(v.ID); err != nil {
				return err
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Volumes().Delete(v.ID); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-deregister", VolumeID: v.ID, PluginID: v.PluginID, Message: msg})
	})
	if errors.Is(err, store.ErrNotFound) {
		return notFoundf("deregister volume %q: not found", id)
	}
	if err != nil {
		return fmt.Errorf("deregister volume %q: %w", id, err)
	}
	return nil
}

// refuseClaimed returns a conflict naming the volume's live claims, if it has any.
func refuseClaimed(tx *store.Tx, volumeID, verb string) error {
	claims, err := tx.Claims().ByVolume(volumeID)
	if err != nil || len(claims) == 0 {
		return err
	}
	return conflictf("volume %q has %d live claim(s): %s (release them first: volctl volume release / detach)",
		volumeID, len(claims), describeClaims(claims))
}

func describeClaims(claims []store.Claim) string {
	parts := make([]string, 0, len(claims))
	for i, c := range claims {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(claims)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("alloc %q (%s, %s)", c.Alloc, c.Mode, c.State))
	}
	return strings.Join(parts, ", ")
}

// DeleteVolume deletes a volume's storage through its plugin and forgets it. Claims are checked
// before DeleteVolume is sent; NOT_FOUND from the plugin counts as deleted. The volume is marked
// deleting before the RPC, so an interrupted delete is finished by reconcile.
func (e *Engine) DeleteVolume(ctx context.Context, id string) error {
	fail := func(err error) error { return fmt.Errorf("delete volume %q: %w", id, err) }
	unlock, err := e.locks.volume(ctx, id)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	var v store.Volume
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if v, err = tx.Volumes().Get(id); err != nil {
			return err
		}
		return refuseClaimed(tx, id, "delete")
	})
	if errors.Is(err, store.ErrNotFound) {
		return notFoundf("delete volume %q: not found", id)
	}
	if err != nil {
		return fail(err)
	}
	c, err := e.connect(ctx, v.PluginID)
	if err != nil {
		return fail(err)
	}
	if !c.fp.Controller || !c.fp.Capabilities.Controller.CreateDeleteVolume {
		return fail(invalidf("plugin %q cannot delete volumes (no CREATE_DELETE_VOLUME controller capability); use `volctl volume deregister` to forget the volume", v.PluginID))
	}
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		if err := refuseClaimed(tx, id, "delete"); err != nil {
			return err
		}
		if err := refuseHandedOver(tx, id); err != nil {
			return err
		}
		v.State = store.VolumeDeleting
		return tx.Volumes().Update(&v)
	})
	if err != nil {
		return fail(err)
	}
	failpoint("delete:intent")
	if err := e.finishDelete(ctx, c, v); err != nil {
		return fail(err)
	}
	return nil
}

// finishDelete sends DeleteVolume for a volume in state deleting and forgets it. An attachment
// or staging left without a claim is undone first: a plugin may refuse to delete an attached
// volume, and the record of it would keep the volume's row.
func (e *Engine) finishDelete(ctx context.Context, c *conn, v store.Volume) error {
	if err := e.undoLeftStaging(ctx, c, v); err != nil {
		return fmt.Errorf("undoing the attachment left by its last claim: %w (the volume is marked deleting; run the delete again or `volctl reconcile`)", err)
	}
	if v.ExternalID != "" {
		err := e.withController(ctx, c, func(ctx context.Context) error {
			return e.retry(ctx, c, csi.RPCDeleteVolume, func(ctx context.Context) error {
				return c.client.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: v.ExternalID, Secrets: v.Secrets})
			})
		})
		if err != nil && !csi.IsIgnorable(err) {
			if csi.CodeOf(err) == codes.FailedPrecondition {
				// The plugin refuses for the volume's own state (snapshots, in use elsewhere): it
				// still exists, and stays usable rather than stuck deleting.
				return e.keepRefusedDelete(ctx, v, err)
			}
			e.event(ctx, &store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCDeleteVolume,
				Code: csi.CodeOf(err).String(), Message: "delete failed: " + err.Error()})
			return fmt.Errorf("%w (the volume is marked deleting; run the delete again or `volctl reconcile`)", err)
		}
	}
	failpoint("rpc:DeleteVolume")
	return e.store.Update(ctx, func(tx *store.Tx) error {
		if err := tx.Volumes().Delete(v.ID); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCDeleteVolume, Message: fmt.Sprintf("volume %q deleted", v.ID)})
	})
}

// keepRefusedDelete puts a volume whose DeleteVolume the plugin refused back to ready.
func (e *Engine) keepRefusedDelete(ctx context.Context, v store.Volume, cause error) error {
	err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		cur, err := tx.Volumes().Get(v.ID)
		if err != nil {
			return err
		}
		cur.State = store.VolumeReady
		if err := tx.Volumes().Update(&cur); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCDeleteVolume,
			Code: csi.CodeOf(cause).String(), Message: "delete refused, volume kept: " + cause.Error()})
	})
	if err != nil {
		return fmt.Errorf("%w (the volume is marked deleting and putting it back failed: %v; run `volctl reconcile`)", cause, err)
	}
	return fmt.Errorf("%w (the volume is kept, ready)", cause)
}

// event appends to the event log in its own transaction, logging (not returning) a failure:
// the event log is a record, and failing to write it must not fail the operation it describes.
func (e *Engine) event(ctx context.Context, ev *store.Event) {
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error { return tx.Events().Append(ev) }); err != nil {
		e.log.Warn("writing the event log", "err", err)
	}
}
