package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// One directory may be reached by two paths: an admin's bind mount (`mount --bind /data
// /srv/data`) makes /data/x and /srv/data/x one directory. Whether two volume_mounts there are
// one mount is up to propagation: when the mounts holding the two paths are joined (one mount,
// peers of one shared group, or one a slave of the other's group), a bind made at one path is
// made at the other too, and its unmount there as well; otherwise they are two separate
// mounts of one directory, which is no conflict. So two destinations conflict when their
// places are equal (the directory each names, beneath any bind of a volume there: a device and
// a path in its file system) and propagation joins the mounts that hold them
// (joinedDestination). Bind refuses a volume_mount joined so with an older claim's (a first
// bind: it would be made at the other path too; one found mounted: it is the other claim's
// bind, not its own), and unbind leaves a bind another claim of the volume uses through
// propagation only when that claim's own unmount will take it down (reachedBy: the same mount,
// or this one receives the other's); a bind at a master with a claim at its slave is
// unmounted, and at the slave with it, since the slave's unmount would leave the master's.

// placeView is the mount table as the destinations' places are read from it: read on first
// use, again when a destination shows a mount it does not list. A reconcile pass shares one
// (withPlaces), so settling 1,000 claims reads the table once, not once per claim.
type placeView struct {
	stateDir string
	reads    *atomic.Int64 // the engine's count of reads (placeReads)
	mu       sync.Mutex
	read     bool
	byID     map[int]*mountinfo.Info
	masterOf map[int]int      // a peer group -> the group it is a slave of
	volumes  map[devRoot]bool // the file systems and roots mounted in the state dir: the volumes
	made     map[int]madeBind // binds made since the read (noteBound), by mount ID
	// devs: a mount's device as its files report it where the table names another (a btrfs
	// subvolume), seen right after a read (lists): no reason to read the table again.
	devs   map[int]uint64
	claims []store.Claim // the live claims with volume_mounts, as read first
	listed bool
	byDest map[string][]int // claims' indices by their volume_mounts' destinations (cleaned)
	// relist: a command's view (withCommandPlaces), which admits and frees claims between its
	// binds: the claims are listed again for each claim's binds and unbinds (fresh).
	relist bool
	// The claims' destinations (cleaned) by place, and each one's place, computed once per read
	// of the table (indexed): a claim's check looks its own place up, not every other's.
	byPlace map[devRoot][]string
	placed  map[string]place
}

// madeBind is a bind made since the table was read: its mount point, and the mount that was
// topmost at it or held it.
type madeBind struct {
	at    string
	under int
}

// devRoot is a mount's file system (device) and root in it.
type devRoot struct {
	major, minor int
	root         string
}

// place is where a destination lies: a directory (or file) of a file system, and the mount
// that holds it (nil: not placed, the path missing or not found in the table).
type place struct {
	devRoot
	holder *mountinfo.Info
}

type placesKey struct{}

// withPlaces gives ctx one placeView, shared by every bind and check made with it (a pass, a
// claim's binds), unless it has one.
func (e *Engine) withPlaces(ctx context.Context) context.Context {
	if _, ok := ctx.Value(placesKey{}).(*placeView); ok {
		return ctx
	}
	return context.WithValue(ctx, placesKey{}, e.newPlaces())
}

// withCommandPlaces gives ctx one placeView for a command that claims and releases many allocs
// (group run, group stop), unless it has one: the mount table is read once for the command, not
// once per claim, and the claims with volume_mounts listed again for each claim's binds and
// unbinds (fresh), as the command admits and frees them. A bind made with it is noted in it
// (noteBound), an unbind too (noteUnbound): the kernel reuses a mount ID freed by an unmount,
// which the table as read would name otherwise.
func (e *Engine) withCommandPlaces(ctx context.Context) context.Context {
	if _, ok := ctx.Value(placesKey{}).(*placeView); ok {
		return ctx
	}
	v := e.newPlaces()
	v.relist = true
	return context.WithValue(ctx, placesKey{}, v)
}

// fresh readies a command's view for one claim's binds or unbinds: the claims with
// volume_mounts are listed again (admitted or freed since), and their destinations placed
// again from the table as read. A pass's view keeps its list.
func (v *placeView) fresh() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.relist {
		v.claims, v.listed, v.byPlace, v.placed, v.byDest = nil, false, nil, nil, nil
	}
}

// noteUnbound records the unmount of mount id (a bind at a destination, unbind's): gone from
// the view, an ID the kernel gives a mount made later is looked up in the table again.
func (v *placeView) noteUnbound(id uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.byID, int(id))
	delete(v.made, int(id))
	v.byPlace, v.placed = nil, nil
}

// newPlaces is a placeView not read yet.
func (e *Engine) newPlaces() *placeView {
	return &placeView{stateDir: e.cfg.StateDir, reads: &e.placeReads}
}

// placesOf is ctx's placeView, or a new one for a single operation.
func (e *Engine) placesOf(ctx context.Context) *placeView {
	if v, ok := ctx.Value(placesKey{}).(*placeView); ok {
		return v
	}
	return e.newPlaces()
}

// load reads the mount table.
func (v *placeView) load() error {
	v.reads.Add(1)
	table, err := mountinfo.GetMounts(nil)
	if err != nil {
		return store.MountTableUnreadable(err)
	}
	v.byID = make(map[int]*mountinfo.Info, len(table))
	v.masterOf = mastersOf(table)
	v.volumes = map[devRoot]bool{}
	for _, m := range table {
		v.byID[m.ID] = m
		// Below the state dir: a state dir that is its own mount point (a disk of its own, or
		// bound on itself) is no volume, and a destination on it is placed as any other.
		if under(m.Mountpoint, v.stateDir) {
			v.volumes[devRoot{m.Major, m.Minor, m.Root}] = true
		}
	}
	v.read, v.byPlace, v.placed, v.made = true, nil, nil, nil // the table lists what was made
	return nil
}

// mastersOf maps each shared peer group of table that is a slave too to its master's group.
func mastersOf(table []*mountinfo.Info) map[int]int {
	masterOf := map[int]int{}
	for _, m := range table {
		if g, ok := optionalGroup(m, "shared:"); ok {
			if k, ok := optionalGroup(m, "master:"); ok {
				masterOf[g] = k
			}
		}
	}
	return masterOf
}

// optionalGroup is the number of m's optional field named prefix ("shared:", "master:").
func optionalGroup(m *mountinfo.Info, prefix string) (int, bool) {
	for f := range strings.FieldsSeq(m.Optional) {
		if s, ok := strings.CutPrefix(f, prefix); ok {
			n, err := strconv.Atoi(s)
			return n, err == nil
		}
	}
	return 0, false
}

// placeOf places path, open as p: the mount p is on is looked up in the table, which is read
// again once when it does not list it (a mount made since, not by a bind of this view).
func (v *placeView) placeOf(path string, p *pathFD) (place, error) {
	id, err := mountID(p.fd)
	if err != nil {
		return place{}, nil
	}
	if !v.read || !v.lists(path, p.fd, int(id), false) {
		if err := v.load(); err != nil {
			return place{}, err
		}
		v.lists(path, p.fd, int(id), true)
	}
	pl, ok := v.placeIn(path, int(id))
	if !ok { // below a bind made since the read: the table says what is there
		if err := v.load(); err != nil {
			return place{}, err
		}
		pl, _ = v.placeIn(path, int(id))
	}
	return pl, nil
}

// lists reports whether the table as read names the mount path, open as fd, is on (id): a
// bind this view saw made (noteBound), or the table's mount id, whose mount point is path or a
// directory above it and whose device is the file's. Not so: a mount made since the read by
// another process (a volctl, an admin), or one the kernel gave the ID an unmount freed since
// (it reuses them: a bind of the state dir made during a group run may bear the ID of a mount
// the table lists elsewhere). justRead: the table was read just now, and a device other than
// its mount's is the file's own (a btrfs subvolume), remembered for the next look-up.
func (v *placeView) lists(path string, fd, id int, justRead bool) bool {
	if _, made := v.made[id]; made {
		return true
	}
	m := v.byID[id]
	if m == nil || !underOrAt(path, m.Mountpoint) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return true // placeIn places it as the table says
	}
	if (int(unix.Major(st.Dev)) == m.Major && int(unix.Minor(st.Dev)) == m.Minor) || v.devs[id] == st.Dev {
		return true
	}
	if justRead {
		if v.devs == nil {
			v.devs = map[int]uint64{}
		}
		v.devs[id] = st.Dev
	}
	return justRead
}

// placeIn places path, id being the topmost mount at it or the mount holding it. Binds of a
// volume at path are looked through (those this view saw made, noteBound, too): a place is the
// directory they are mounted on, which is the root of a mount at path that is not a volume's
// (an admin's bind of a directory elsewhere), or else a directory of the mount holding path,
// its root joined with the rest of the path below its mount point. Not ok: path is below a
// bind made since the table was read (a nested volume_mount), which the view cannot place: a
// directory of the volume that bind shows, on a mount the table does not list yet.
func (v *placeView) placeIn(path string, id int) (pl place, ok bool) {
	var m *mountinfo.Info
	for range len(v.byID) + len(v.made) + 1 { // a loop in the table ends it
		if b, ok := v.made[id]; ok {
			if b.at != path {
				return place{}, false
			}
			id = b.under
			continue
		}
		if m = v.byID[id]; m == nil || m.Mountpoint != path || !v.volumes[devRoot{m.Major, m.Minor, m.Root}] {
			break
		}
		id = m.Parent
	}
	switch {
	case m == nil:
		return place{}, true
	case m.Mountpoint == path:
		if v.volumes[devRoot{m.Major, m.Minor, m.Root}] {
			return place{}, true // the table's root mount, or a loop
		}
		return place{devRoot{m.Major, m.Minor, m.Root}, m}, true
	case !underOrAt(path, m.Mountpoint):
		return place{}, true // reached otherwise than by its path: not placed
	}
	rel, err := filepath.Rel(m.Mountpoint, path)
	if err != nil {
		return place{}, true
	}
	return place{devRoot{m.Major, m.Minor, filepath.Join(m.Root, rel)}, m}, true
}

// noteBound records a bind made at path, over the mount that was topmost at it or held it (the
// destination as opened before the bind, dst): the view places path through it without
// reading the table again. A pass binding many claims again (a reboot) reads it once.
func (v *placeView) noteBound(path string, dst *pathFD) {
	under, err := mountID(dst.fd)
	if err != nil {
		return
	}
	p, err := openNoFollow("/", path, createNothing)
	if err != nil {
		return
	}
	defer p.close()
	id, err := mountID(p.fd)
	if err != nil || id == under {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.made == nil {
		v.made = map[int]madeBind{}
	}
	path = filepath.Clean(path)
	v.made[int(id)] = madeBind{at: path, under: int(under)}
	if v.placed != nil && v.placed[path].holder == nil { // a destination missing when indexed
		if pl, ok := v.placeIn(path, int(id)); ok {
			v.addPlace(path, pl)
		} else {
			v.read = false // bound below a bind made since the read: the next check reads the table
		}
	}
}

// indexed places every listed claim's destination (opened as bind opens it), once per read of
// the table; one below a bind made since the read, or on a mount the table does not list (lists:
// made since by another process, another volctl's volume_mount among them), has the table read
// again first, once. A destination missing, or on a mount the table read again does not list
// either, has no place.
func (v *placeView) indexed() error { return v.index(false) }

// index is indexed; justRead: the table was read just now, not to be read again.
func (v *placeView) index(justRead bool) error {
	if v.placed != nil {
		return nil
	}
	v.byPlace, v.placed = map[devRoot][]string{}, map[string]place{}
	for _, c := range v.claims {
		for _, b := range c.Binds {
			path := filepath.Clean(b.Destination)
			if _, done := v.placed[path]; done {
				continue
			}
			var pl place
			stale := false
			if p, err := openNoFollow("/", path, createNothing); err == nil {
				if id, err := mountID(p.fd); err == nil {
					if v.lists(path, p.fd, int(id), justRead) {
						var ok bool
						pl, ok = v.placeIn(path, int(id))
						stale = !ok
					} else {
						stale = !justRead
					}
				}
				p.close()
			}
			if stale { // read again (no bind made since then), and place them all from the start
				if err := v.load(); err != nil {
					return err
				}
				return v.index(true)
			}
			v.addPlace(path, pl)
		}
	}
	return nil
}

// addPlace records destination path at pl.
func (v *placeView) addPlace(path string, pl place) {
	v.placed[path] = pl
	if pl.holder != nil {
		v.byPlace[pl.devRoot] = append(v.byPlace[pl.devRoot], path)
	}
}

// joined reports whether propagation joins mounts a and b: a mount made on either (below it)
// is made on the other too, or one way at least (a slave receives its master's).
func (v *placeView) joined(a, b *mountinfo.Info) bool {
	return a.ID == b.ID || v.receives(a, b) || v.receives(b, a)
}

// reachedBy reports whether an unmount made below from is made below m too: the same mount,
// or m receives from's (an unmount at a slave is not made at its master).
func (v *placeView) reachedBy(m, from *mountinfo.Info) bool {
	return m.ID == from.ID || v.receives(m, from)
}

// receives reports whether m receives the mounts made on from: from is shared, and m is its
// peer, or a slave of its group (through any chain of masters).
func (v *placeView) receives(m, from *mountinfo.Info) bool {
	g, ok := optionalGroup(from, "shared:")
	if !ok {
		return false
	}
	if own, ok := optionalGroup(m, "shared:"); ok && own == g {
		return true
	}
	seen := map[int]bool{}
	for _, field := range []string{"master:", "propagate_from:"} {
		k, ok := optionalGroup(m, field)
		for ok && !seen[k] {
			if k == g {
				return true
			}
			seen[k] = true
			k, ok = v.masterOf[k]
		}
	}
	return false
}

// joinedDestination finds a volume_mount of a live claim that counts (the claim and the
// index of the volume_mount in its list), at another path than dest (cl's, open as dst) but
// at its place, on a mount propagation joins with the one holding dest as join tells (join
// is given the mount holding that destination, then dest's): at is that destination. The
// table is read only when such a claim has a volume_mount elsewhere.
func (e *Engine) joinedDestination(ctx context.Context, v *placeView, cl *store.Claim, dest string, dst *pathFD,
	counts func(c store.Claim, i int) bool, join func(v *placeView, theirs, mine *mountinfo.Info) bool) (other *store.Claim, at string, err error) {
	dest = filepath.Clean(dest)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := e.listClaims(ctx, v); err != nil {
		return nil, "", err
	}
	if !v.elsewhere(dest, counts) {
		return nil, "", nil
	}
	mine, err := v.placeOf(dest, dst)
	if err != nil || mine.holder == nil {
		return nil, "", err
	}
	if err := v.indexed(); err != nil {
		return nil, "", err
	}
	for _, path := range v.byPlace[mine.devRoot] {
		theirs := v.placed[path]
		if path == dest || !join(v, theirs.holder, mine.holder) {
			continue
		}
		for _, listed := range v.claims {
			if !bindsAt(listed.Binds, path) {
				continue
			}
			// Listed earlier in the pass: the claim must still be live, bound there.
			c, ok, err := e.relisted(ctx, listed.ID)
			if err != nil {
				return nil, "", err
			}
			if !ok {
				continue
			}
			for j, b := range c.Binds {
				if filepath.Clean(b.Destination) == path && counts(c, j) {
					return &c, b.Destination, nil
				}
			}
		}
	}
	return nil, "", nil
}

// listClaims lists v's live claims with volume_mounts unless it has; v.mu held.
func (e *Engine) listClaims(ctx context.Context, v *placeView) error {
	if v.listed {
		return nil
	}
	if err := e.store.View(ctx, func(tx *store.Tx) (err error) { v.claims, err = tx.Claims().WithBinds(); return err }); err != nil {
		return err
	}
	v.listed = true
	v.byDest = map[string][]int{}
	for k, c := range v.claims {
		for _, b := range c.Binds {
			d := filepath.Clean(b.Destination)
			if at := v.byDest[d]; len(at) == 0 || at[len(at)-1] != k {
				v.byDest[d] = append(at, k)
			}
		}
	}
	return nil
}

// unboundAbove finds a volume_mount of another live claim (not releasing) whose destination
// encloses dest (cl's) and is not mounted: a claim not restored yet after a reboot, its restore
// failed, or its bind not made yet. A bind at dest now would be made on that destination's bare
// directory, and hidden by that claim's bind, which is then refused every time (it would hide
// this one). at is that destination. Each directory above dest is looked up, not every claim.
func (e *Engine) unboundAbove(ctx context.Context, cl *store.Claim, dest string) (other *store.Claim, at string, err error) {
	v := e.placesOf(ctx)
	dest = filepath.Clean(dest)
	v.mu.Lock()
	if err := e.listClaims(ctx, v); err != nil {
		v.mu.Unlock()
		return nil, "", err
	}
	type cand struct {
		id   int64
		path string
	}
	var cands []cand
	for dir := filepath.Dir(dest); ; dir = filepath.Dir(dir) {
		for _, k := range v.byDest[dir] {
			if c := v.claims[k]; c.ID != cl.ID && !c.Releasing {
				cands = append(cands, cand{c.ID, dir})
			}
		}
		if dir == "/" || dir == "." {
			break
		}
	}
	v.mu.Unlock()
	for _, c := range cands {
		d, err := openNoFollow("/", c.path, createNothing)
		if errors.Is(err, os.ErrNotExist) {
			d = nil
		} else if err != nil {
			continue // not a directory volctl binds at (a symlink in it): that claim's bind fails on its own
		}
		mounted := false
		if d != nil {
			mounted, err = d.mounted()
			d.close()
			if err != nil {
				return nil, "", fmt.Errorf("checking whether %s is mounted: %w", c.path, err)
			}
		}
		if mounted {
			continue
		}
		// Listed earlier in the pass: the claim must still be live.
		got, ok, err := e.relisted(ctx, c.id)
		if err != nil {
			return nil, "", err
		}
		if ok && !got.Releasing && bindsAt(got.Binds, c.path) {
			return &got, c.path, nil
		}
	}
	return nil, "", nil
}

// relisted is claim id as it is now, ok false when it is gone (freed since it was listed).
func (e *Engine) relisted(ctx context.Context, id int64) (c store.Claim, ok bool, err error) {
	c, err = viewOne(ctx, e.store, func(tx *store.Tx) (store.Claim, error) { return tx.Claims().Get(id) })
	if errors.Is(err, store.ErrNotFound) {
		return c, false, nil
	}
	return c, err == nil, err
}

// bindsAt reports whether one of binds has its destination at path (clean).
func bindsAt(binds []spec.VolumeMount, path string) bool {
	return slices.ContainsFunc(binds, func(b spec.VolumeMount) bool { return filepath.Clean(b.Destination) == path })
}

// elsewhere reports whether a listed claim that counts has a volume_mount at another path
// than dest; the oldest are listed first, which olderBind counts.
func (v *placeView) elsewhere(dest string, counts func(c store.Claim, i int) bool) bool {
	for _, c := range v.claims {
		for j, b := range c.Binds {
			if counts(c, j) && filepath.Clean(b.Destination) != dest {
				return true
			}
		}
	}
	return false
}

// joinedConflict is the refusal of cl's volume_mount at dest, whose directory other's
// volume_mount at reaches by another path joined by propagation.
func joinedConflict(dest string, other store.Claim, at string) error {
	return conflictf("volume_mount %s is the directory alloc %q's volume_mount %s is on (its %s claim of volume %q, %s), by another path: "+
		"a bind mount joins the two paths and mount propagation carries a mount at one to the other, so one bind would serve both, "+
		"with that claim's read-only or read-write flag, and either release would unbind both; give this volume_mount a destination "+
		"of its own, outside that bind mount, or release that claim first%s",
		dest, other.Alloc, at, other.Mode, other.VolumeID, bindWhat(other), boundWayOut(other))
}

// olderBind counts, for cl's volume_mount number i, the volume_mounts bound before it: another
// claim's admitted before cl (a lower ID), or cl's own listed before it.
func olderBind(cl *store.Claim, i int) func(store.Claim, int) bool {
	return func(c store.Claim, j int) bool {
		return c.ID < cl.ID || (c.ID == cl.ID && j < i)
	}
}

// checkJoined refuses cl's volume_mount number i, at dst, when an older volume_mount is
// joined with it (joinedDestination).
func (e *Engine) checkJoined(ctx context.Context, cl *store.Claim, i int, dst *pathFD) error {
	dest := cl.Binds[i].Destination
	other, at, err := e.joinedDestination(ctx, e.placesOf(ctx), cl, dest, dst, olderBind(cl, i), (*placeView).joined)
	if err != nil {
		return fmt.Errorf("volume_mount %s: %w", dest, err)
	}
	if other != nil {
		return joinedConflict(dest, *other, at)
	}
	return nil
}
