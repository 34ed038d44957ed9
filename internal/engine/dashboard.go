package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/volctl/volctl/internal/store"
)

// Dashboard is one consistent read of everything the dashboard shows: the volume counts agree
// with the claims, and the plugins' health with the volumes' schedulability.
type Dashboard struct {
	Volumes []VolumeSummary `json:"volumes"`
	Claims  []ClaimInfo     `json:"claims"`
	Plugins []PluginInfo    `json:"plugins"`
	Events  []EventInfo     `json:"events"` // newest first
	// EventsLogged is how many events the log holds, of which Events are the newest.
	EventsLogged int         `json:"events_logged"`
	Groups       []GroupInfo `json:"groups"` // with their allocs' live claims, by name
}

// WithPluginsProbed is d with the health a live probe found (PluginStatus) of each plugin where
// it is newer than what d read, and its volumes' schedulability as that health says: the probe
// may have been kept from recording it (another process holding the state's write lock, a
// read-only state dir), as `volctl status` shows its own probe's reading. Before, the dashboard
// showed the stored health of a plugin its probe had just found dead, and its volumes "yes"
// (TestDashboardShowsWhatItsProbeFoundWhenItCannotRecordIt). d itself is not changed.
func (d Dashboard) WithPluginsProbed(probed []PluginInfo) Dashboard {
	var newer map[string]*PluginInfo
	for i := range probed {
		p := &probed[i]
		// By the IDs as read: d's are shown scrubbed of secrets (Dashboard), the probe's are not.
		k := slices.IndexFunc(d.Plugins, func(q PluginInfo) bool { return q.Key() == p.Key() })
		if k < 0 || !p.ProbedAt.After(d.Plugins[k].ProbedAt) {
			continue
		}
		if newer == nil {
			newer = map[string]*PluginInfo{}
			d.Plugins = slices.Clone(d.Plugins)
		}
		q := &d.Plugins[k]
		// Of the probe's text, only LastError: the dashboard scrubs it alone (tui's
		// scrubbedProbes), d being scrubbed already. Another text taken here is to be scrubbed there too.
		q.Healthy, q.Ready, q.ProbeLatency, q.LastError, q.ProbedAt = p.Healthy, p.Ready, p.ProbeLatency, p.LastError, p.ProbedAt
		newer[q.Key()] = q
	}
	if newer == nil {
		return d
	}
	d.Volumes = slices.Clone(d.Volumes)
	for i, v := range d.Volumes {
		if p := newer[v.PluginKey()]; p != nil {
			d.Volumes[i] = v.WithPluginProbed(p)
		}
	}
	return d
}

// Dashboard reads volumes, live claims, plugins (stored health, no probe), up to events recent
// events (and how many the log holds) and the groups in one read transaction, so a refresh costs one snapshot of the store rather
// than four that may disagree.
//
// The dashboard reads for as long as it runs, and SQLite reads the file it opened, by inode: a
// backup restored over volctl.db (or the state dir moved) meanwhile would have it show the old
// file's rows as fresh, read after read. So each read first checks that the file at the path is
// still the one opened (one stat), as a reconcile pass does, and says to restart when it is not.
//
// It is scrubbed of the state's secrets as that same read found them (and those this process
// let go since), as EventsRedacted is: scrubbed later with a read of its own, another process's
// delete between the two took out of the state a secret an event already read held, and the
// dashboard showed it for a refresh (TestDashboardReadBeforeAnotherProcessDeletesTheVolumeShowsNoSecret).
// What is added to it afterwards (a probe's findings) is the caller's to scrub.
func (e *Engine) Dashboard(ctx context.Context, events int) (Dashboard, error) {
	var (
		d       Dashboard
		secrets []string
	)
	if err := e.store.CheckFile(); err != nil {
		return d, fmt.Errorf("dashboard: %w", err)
	}
	err := e.store.View(ctx, func(tx *store.Tx) error {
		vols, err := tx.Volumes().List(store.VolumeFilter{})
		if err != nil {
			return err
		}
		claims, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		plugins, err := tx.Plugins().List()
		if err != nil {
			return err
		}
		evs, err := tx.Events().Recent(events, store.EventFilter{})
		if err != nil {
			return err
		}
		if d.EventsLogged, err = tx.Events().Logged(); err != nil {
			return err
		}
		groups, err := tx.Groups().List()
		if err != nil {
			return err
		}
		d.Groups = make([]GroupInfo, 0, len(groups))
		mounts, err := groupMounts(tx, claims)
		if err != nil {
			return err
		}
		for _, g := range groups {
			d.Groups = append(d.Groups, groupInfo(g, claims, mounts))
		}

		byVolume := make(map[string][]store.Claim, len(vols))
		d.Claims = make([]ClaimInfo, 0, len(claims))
		for _, c := range claims {
			byVolume[c.VolumeID] = append(byVolume[c.VolumeID], c)
			d.Claims = append(d.Claims, claimInfo(c))
		}
		handedTo, err := handedOverTo(tx)
		if err != nil {
			return err
		}
		byID := make(map[string]store.Plugin, len(plugins))
		for _, p := range plugins {
			byID[p.ID] = p
		}
		perPlugin := make(map[string]int, len(plugins))
		d.Volumes = make([]VolumeSummary, 0, len(vols))
		for _, v := range vols {
			perPlugin[v.PluginID]++
			// As the lists say it (listedSummary): a volume whose plugin is not registered (one
			// deregistered with --force) says so, not "plugin unhealthy", and one its plugin's
			// node is outside the topology of cannot take claims. Before, the dashboard's list
			// said "yes" of the latter, its detail "no" (TestDashboardSaysAVolumeOutsideItsTopologyCannotTakeClaims).
			p, known := byID[v.PluginID]
			d.Volumes = append(d.Volumes, listedSummary(v, byVolume[v.ID], p, known, handedTo[v.ID]))
		}
		unclaimed, err := tx.Stagings().Unclaimed()
		if err != nil {
			return err
		}
		for i := range d.Volumes {
			// Not of a volume handed over to Nomad: its detach is refused, the attachment
			// waiting for the take-back (TestDashboardDoesNotOfferTheDetachOfAClaimlessVolumeHandedOverToNomad).
			_, left := slices.BinarySearch(unclaimed, d.Volumes[i].Key())
			d.Volumes[i].leftover = left && d.Volumes[i].handedTo == ""
		}
		d.Plugins = make([]PluginInfo, 0, len(plugins))
		for _, p := range plugins {
			d.Plugins = append(d.Plugins, pluginInfo(p, perPlugin[p.ID]))
		}
		sort.Slice(d.Plugins, func(i, j int) bool { return d.Plugins[i].ID < d.Plugins[j].ID })
		d.Events = make([]EventInfo, 0, len(evs))
		for _, ev := range evs {
			d.Events = append(d.Events, eventInfo(ev))
		}
		secrets, err = tx.SecretValues()
		return err
	})
	if err != nil {
		return d, err
	}
	e.agentLiveness(d.Plugins)
	e.markCovered(d.Claims) // as a volume's detail says them, the mount table read once
	// A covered claim is one not at rest, as the status summary counts it: the volume's row and
	// detail said "0 not at rest" above it (TestDashboardCountsAClaimWhoseTargetIsCoveredAsNotAtRest).
	coveredBy := CoveredByVolume(d.Claims)
	for i := range d.Volumes {
		d.Volumes[i].Unsettled += coveredBy[d.Volumes[i].Key()]
	}
	e.markUnbound(d.Groups) // as group status says them (TestDashboardGroupWhoseVolumeMountIsNotMountedIsSaid)
	return d, redactWith(&d, e.scrubbers.get(e.andForgotten(secrets)))
}

// CoveredByVolume counts, by volume (VolumeSummary.Key), the claims of claims that a look at
// their targets (markCovered: ClaimsLooked, the dashboard's read) found covered: published and
// at rest as recorded, so not among the volume's recorded Unsettled, and to be added to it, as
// the views that say them count them not at rest.
func CoveredByVolume(claims []ClaimInfo) map[string]int {
	by := map[string]int{}
	for _, c := range claims {
		if c.Covered != "" {
			by[c.VolumeKey()]++
		}
	}
	return by
}
