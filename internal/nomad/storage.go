package nomad

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/spec"
)

// ErrSameStorage matches a registration not sent because Nomad has the volume's storage (its
// plugin and external ID) registered as another volume already: under another ID, or under
// the same ID in another namespace.
var ErrSameStorage = errors.New("has the volume's storage registered as another volume")

// Twin is a volume Nomad has of the same plugin and external ID as one of volctl's, under
// another ID or in another namespace: the same storage.
type Twin struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
}

// Twins lists the volumes Nomad has, in every namespace the token may list volumes in, of v's
// plugin and external ID other than v itself in namespace ns, where volctl registers it. Nomad
// keeps its access-mode rules per volume: two volumes of one storage let one alloc of each
// write it at once, whatever their access modes say, and `nomad volume deregister` of one
// (or its plugin's DeleteVolume, `nomad volume delete`) takes the storage from under the other.
//
// The request lists every CSI volume (GET /v1/volumes?type=csi&namespace=*) and compares the
// plugin here: Nomad 2.0.5 answers a list filtered by plugin_id in namespace "*" with none
// (CSIVolumesByPluginID drops every volume whose namespace is not "*"). The error matches
// ErrPermissionDenied when the token may list volumes in no namespace.
func (c *Client) Twins(ctx context.Context, v spec.Volume, ns string) ([]Twin, error) {
	return c.TwinsIn(ctx, v, ns, c.Region)
}

// TwinsIn is Twins in region (the client's, or one a volume was handed over in).
func (c *Client) TwinsIn(ctx context.Context, v spec.Volume, ns, region string) ([]Twin, error) {
	if v.ExternalID == "" {
		return nil, nil
	}
	stubs, err := c.storages(ctx, v, region)
	if err != nil {
		return nil, err
	}
	var out []Twin
	for _, s := range stubs {
		if s.PluginID == v.PluginID && s.ExternalID == v.ExternalID && (s.ID != v.ID || s.Namespace != ns) {
			out = append(out, Twin{ID: s.ID, Namespace: s.Namespace})
		}
	}
	slices.SortFunc(out, func(a, b Twin) int { return strings.Compare(a.Namespace+"\x00"+a.ID, b.Namespace+"\x00"+b.ID) })
	return slices.Compact(out), nil
}

// storage is one volume Nomad has, as Twins compares it: its ID and namespace (the default
// one for a Nomad that names none), plugin and external ID.
type storage struct {
	ID, Namespace, PluginID, ExternalID string
}

// volumeList is Nomad's CSI volumes of every namespace as listed once for the client and its
// copies (NewClient makes one per command), per region: a command over many volumes
// (register --all, status) asked Nomad for the whole list once per volume, every volume of
// the cluster each time. What the command registers after the list is added to it
// (tookStorage), so a later volume of the command is compared with it too. A failure is
// kept as well when it is a 403, not asked again per volume: a token refused the list is
// refused it again. Any other failure (a 500) is asked again by the next volume: one Nomad
// answered while a server restarted would otherwise fail every later volume of a `register
// --all` (TestTwinsListFailedOnceIsAskedAgain); `nomad status`, which only notes it, stops
// asking itself.
type volumeList struct {
	mu       sync.Mutex
	byRegion map[string]*regionVolumes
}

// regionVolumes is one region's entry of a volumeList.
type regionVolumes struct {
	listed bool
	// denied is what Nomad said when it refused the token the list (a 403), kept.
	denied string
	stubs  []storage
}

// storages is Nomad's volumes of every namespace of region for Twins of v: listed once per
// client (volumeList), or for each call by a Client not made by NewClient. The error names
// v, and matches ErrPermissionDenied when the token may list volumes in no namespace.
func (c *Client) storages(ctx context.Context, v spec.Volume, region string) ([]storage, error) {
	kept := &regionVolumes{}
	if l := c.volumes; l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.byRegion == nil {
			l.byRegion = map[string]*regionVolumes{}
		}
		if r := l.byRegion[region]; r != nil {
			kept = r
		} else {
			l.byRegion[region] = kept
		}
		if kept.listed {
			return kept.stubs, nil
		}
		if kept.denied != "" {
			return nil, &deniedError{c.listFailed(v, kept.denied)}
		}
	}
	rctx, a, cancel := c.request(ctx)
	defer cancel()
	var stubs []*api.CSIVolumeListStub
	_, err := c.api.Raw().Query("/v1/volumes?type=csi", &stubs,
		(&api.QueryOptions{Namespace: api.AllNamespacesNamespace, Region: region}).WithContext(rctx))
	if err != nil {
		c.noteStopped(ctx, err, fmt.Sprintf("the volumes of volume %q's plugin", v.ID))
		said := c.said(ctx, err, nil) + c.denied(ctx, err, "csi-list-volume", "") + c.noRegion(err, region) + busy(err, a)
		if isDenied(err) {
			kept.denied = said
			return nil, &deniedError{c.listFailed(v, said)}
		}
		return nil, c.listFailed(v, said)
	}
	out := make([]storage, 0, len(stubs))
	for _, s := range stubs {
		if s != nil {
			// No namespace: an older Nomad's, its default one.
			out = append(out, storage{ID: s.ID, Namespace: cmp.Or(s.Namespace, spec.DefaultNamespace), PluginID: s.PluginID, ExternalID: s.ExternalID})
		}
	}
	kept.listed, kept.stubs = true, out
	return out, nil
}

// listFailed is the error of a list of Nomad's volumes, for Twins of v, that Nomad answered
// so (said).
func (c *Client) listFailed(v spec.Volume, said string) error {
	return fmt.Errorf("volume %q: Nomad at %s: listing its volumes, to find any of plugin %q and external ID %q: %s", v.ID, c.Address, v.PluginID, v.ExternalID, scrub(said, v))
}

// tookStorage adds v, registered in namespace ns (or sent, and perhaps taken), to the
// client's list of Nomad's volumes, if listed: a later volume of the command of the same
// storage is its twin.
func (c *Client) tookStorage(v spec.Volume, ns string) {
	l := c.volumes
	if l == nil || v.ExternalID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.byRegion[c.Region]; r != nil && r.listed {
		r.stubs = append(r.stubs, storage{ID: v.ID, Namespace: ns, PluginID: v.PluginID, ExternalID: v.ExternalID})
	}
}

// TwinsError is the error of a registration of v in namespace ns not sent because Nomad has
// its storage as the volumes twins (Twins): it names both sides and what to run. It matches
// ErrSameStorage. Nomad's IDs and namespaces, which what answers at NOMAD_ADDR may make quote
// the request's token, are shown through c.shown, the command suggested too.
func (c *Client) TwinsError(v spec.Volume, ns string, twins []Twin) error {
	t := twins[0]
	return fmt.Errorf("volume %q: Nomad at %s %w (plugin %q, external ID %q): %s; registering it as volume %q in namespace %s too would give Nomad two volumes of one storage, whose allocs it would let use it at once (its access modes hold per volume): deregister that one there first (`%s`) if it is no one's, or leave this volume to it",
		v.ID, c.Address, ErrSameStorage, v.PluginID, v.ExternalID, c.shown(twinNames(twins), v), v.ID, ns, c.shown(c.nomadCmd("volume deregister", t.Namespace, t.ID), v))
}

// TwinsTakeBackError is the refusal of `volctl nomad release` of v, which Nomad has no volume
// of by its ID, while it has v's storage as the volumes twins (Twins): moved in Nomad to
// another namespace or ID, it is still Nomad's, its allocs free to claim it, and taken back,
// volctl would claim it beside them.
func (c *Client) TwinsTakeBackError(v spec.Volume, twins []Twin) error {
	t := twins[0]
	return fmt.Errorf("volume %q: Nomad at %s has no volume by that ID, but %w (plugin %q, external ID %q): %s; Nomad's allocs may claim it there, and taken back, volctl would claim it beside them, so it stays marked handed over: once nothing in Nomad uses it, `%s`, then `%s`",
		v.ID, c.Address, ErrSameStorage, v.PluginID, v.ExternalID, c.shown(twinNames(twins), v), c.shown(c.nomadCmd("volume deregister", t.Namespace, t.ID), v), volctl("release", v.ID))
}

// twinNames names twins for a message: volume "ID" in namespace NS, ....
func twinNames(twins []Twin) string {
	names := make([]string, len(twins))
	for i, t := range twins {
		names[i] = fmt.Sprintf("volume %q in namespace %s", t.ID, t.Namespace)
	}
	return strings.Join(names, ", ")
}

// TwinsUnchecked says that Nomad at c refused to list its volumes (err, a 403), so volctl could
// not check that none of them is v's storage under another ID or namespace (Twins).
func (c *Client) TwinsUnchecked(v spec.Volume) string {
	return fmt.Sprintf("volume %q: Nomad at %s did not list its volumes, so volctl could not check that none of them is this volume's storage (plugin %q, external ID %q) under another ID or namespace: NOMAD_TOKEN's ACL policy does not grant csi-list-volume; `nomad volume status -namespace '*'`, run with a token whose policy does in every namespace, lists them",
		v.ID, c.Address, v.PluginID, v.ExternalID)
}
