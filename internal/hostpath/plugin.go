// Package hostpath is volctl's own CSI plugin: a monolith (controller and node) whose volumes are
// directories under one root. Snapshots and clones are copies, expansion records the new size,
// NodeStageVolume bind-mounts the volume into the staging path and NodePublishVolume bind-mounts
// the staging path into the target. It exists so the whole lifecycle runs with nothing else
// installed, and so tests have a real plugin to talk to.
//
// It is the one package besides internal/csi that imports the CSI stubs, because it IS a plugin.
package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/pathtrust"
)

const (
	// PluginName is what GetPluginInfo reports.
	PluginName = "hostpath.csi.volctl.dev"

	// TopologyKey is the topology segment every volume and NodeGetInfo report: the node ID.
	TopologyKey = "topology.hostpath.volctl.dev/node"

	// PublishContextNode is the publish_context key ControllerPublishVolume sets (with
	// --enable-attach) and NodeStageVolume then requires, so an orchestrator that drops the
	// publish context is caught instead of silently working.
	PublishContextNode = "hostpath.volctl.dev/node"

	// PublishContextAttachment carries the attachment token ControllerPublishVolume handed out.
	PublishContextAttachment = "hostpath.volctl.dev/attachment"
)

// gracePeriod bounds how long a stopping server waits for RPCs in flight before cutting them off.
const gracePeriod = 5 * time.Second

// Config configures a Plugin. Root and NodeID are required.
type Config struct {
	// Root holds the volume and snapshot directories and the metadata file. Created if missing.
	Root string
	// NodeID is the node ID NodeGetInfo reports and ControllerPublishVolume accepts.
	NodeID string
	// EnableAttach turns on PUBLISH_UNPUBLISH_VOLUME: ControllerPublishVolume hands out a
	// publish_context and NodeStageVolume requires it.
	EnableAttach bool
	// MaxVolumes is NodeGetInfo's max_volumes_per_node (0 = unset). With EnableAttach,
	// ControllerPublishVolume refuses to publish more than this many volumes to the node.
	MaxVolumes int64
	// Logger receives startup notes and, at debug level, one line per RPC with secrets
	// redacted. Nil discards everything.
	Logger *slog.Logger
	// ServerOptions are added to the grpc.Server that Serve builds, e.g. a fault-injecting
	// grpc.ChainUnaryInterceptor in tests.
	ServerOptions []grpc.ServerOption
	// Mounter performs the bind mounts. Nil means the kernel (golang.org/x/sys/unix); tests
	// inject a fake to simulate a host without mount privileges.
	Mounter Mounter
	// Euid is the effective user ID a refused mount's error names (root lacking CAP_SYS_ADMIN,
	// or a user who is not root: the remedies differ). Nil means os.Geteuid; tests pretend.
	Euid func() int
}

// Plugin is a running hostpath plugin: its state, loaded from Root, and the three CSI services.
// Its methods are safe for concurrent use.
type Plugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg     Config
	log     *slog.Logger
	mounter Mounter

	// mu serializes every operation on state and on the volume directories. A single lock is
	// plenty for a one-host plugin and makes idempotency checks and mounts trivially atomic.
	// Held through lock, which adds the lock the processes serving one root share.
	mu    sync.Mutex
	state *state

	// creating holds, by "volume/NAME" or "snapshot/NAME", a channel closed when a create of
	// that name that copies (a clone, a volume from a snapshot, a snapshot) finishes: the copy
	// runs without mu, so that every other RPC is answered meanwhile, and a second create of
	// the same name waits for the first (waitCreating) rather than copy again. Under mu.
	creating map[string]chan struct{}

	// rootGoneSaid: Probe logged that the root is gone (checkRoot), this spell.
	rootGoneSaid atomic.Bool
}

// lock takes the plugin's lock for an RPC that changes a volume's record: the lock on meta/
// that every process serving the root takes for one, so that one process changes a volume's
// record at a time, having read it as the last one left it (volume), then mu, among this
// process's RPCs. Two processes serve one root after a handover to Nomad (volctl's own, and
// the job `volctl export nomad` writes), and both use one volume at once when it was handed
// over with --force while local claims were live: each rewrote the record from its own
// copy, and the staging and targets the other had recorded went from it. An RPC that only
// reads records, or writes a new one under an ID it generated (a create, whose copy may take
// long), takes mu alone. The shared lock comes first, and is waited for only as long as ctx
// allows: taken while holding mu, an RPC waiting for another process (stopped, frozen, slow)
// held up every RPC of this one, the reading ones too, past any deadline. The error is
// ctx's, or INTERNAL.
func (p *Plugin) lock(ctx context.Context) (unlock func(), err error) {
	fail := func(err error) error {
		return internal("locking the records under %s, which every plugin process serving it shares: %v", p.cfg.Root, err)
	}
	f, err := os.Open(p.metaDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, p.rootMoved()
	}
	if err != nil {
		return nil, fail(err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fail(err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(5 * time.Millisecond): // another process's RPC holds it
		}
	}
	p.mu.Lock()
	return func() { p.mu.Unlock(); f.Close() }, nil // closing the descriptor releases the lock
}

// New checks cfg, creates the directories under Root and loads the metadata a previous run left.
func New(cfg Config) (*Plugin, error) {
	if cfg.Root == "" {
		return nil, errors.New("hostpath: root directory is required")
	}
	if cfg.NodeID == "" {
		return nil, errors.New("hostpath: node ID is required")
	}
	if cfg.MaxVolumes < 0 {
		return nil, fmt.Errorf("hostpath: max volumes must not be negative, got %d", cfg.MaxVolumes)
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("hostpath: root %q: %w", cfg.Root, err)
	}
	cfg.Root = root
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := cfg.Mounter
	if m == nil {
		m = SystemMounter{}
	}
	if cfg.Euid == nil {
		cfg.Euid = os.Geteuid
	}
	p := &Plugin{cfg: cfg, log: log, mounter: m, creating: map[string]chan struct{}{}}
	if err := p.prepareRoot(); err != nil {
		return nil, err
	}
	st, err := loadState(p.cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("hostpath: %w", err)
	}
	p.state = st
	p.sweepUnrecorded()
	p.keepReserve()
	return p, nil
}

// keepReserve keeps room for teardowns' records (state.go, reserveFile), at start and before
// each create; a root with no room for it is logged, and the next create tries again.
func (p *Plugin) keepReserve() {
	if err := keepReserve(p.cfg.Root); err != nil {
		p.log.Warn("hostpath: "+err.Error(), "root", p.cfg.Root)
	}
}

// sweepUnrecorded removes the volume and snapshot directories no record names: a create puts
// the directory in place (a snapshot's or clone's copy renamed from partial/) before it saves
// the record, and answers only after, so a plugin killed in between leaves a directory nobody
// was ever given the ID of, which nothing would remove (a create sent again makes another).
// loadState fails on any record it cannot read, so here every record is known: only a name of
// the form this plugin generates and no record is removed, never one with something mounted in
// it; anything else is left as it is.
func (p *Plugin) sweepUnrecorded() {
	sweep := func(dir string, isID func(string) bool, recorded func(string) bool) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			p.log.Warn("hostpath: looking for directories of interrupted creates", "dir", dir, "err", err)
			return
		}
		for _, e := range entries {
			id := e.Name()
			if !e.IsDir() || !isID(id) || recorded(id) {
				continue
			}
			path := filepath.Join(dir, id)
			// Another process serving this root may be creating it (holdNew), or have saved
			// its record since this one loaded the state: neither is an interrupted create.
			unlock, err := lockDir(path, unix.LOCK_NB)
			if errors.Is(err, unix.EWOULDBLOCK) {
				p.log.Info("hostpath: a directory another process is creating left in place", "path", path)
				continue
			}
			if err != nil {
				p.log.Warn("hostpath: directory of an interrupted create left in place", "path", path, "err", err)
				continue
			}
			err = p.removeUnrecorded(dir, id, path)
			unlock()
			if err != nil {
				p.log.Warn("hostpath: directory of an interrupted create left in place", "path", path, "err", err)
			}
		}
	}
	sweep(p.volumesDir(), isVolumeID, func(id string) bool { _, ok := p.state.Volumes[id]; return ok })
	sweep(p.snapshotsDir(), isSnapshotID, func(id string) bool { _, ok := p.state.Snapshots[id]; return ok })
}

// removeUnrecorded removes the directory path of the interrupted create of id (under dir, the
// volumes' or the snapshots'), whose lock the caller holds, unless a record of it is on disk
// now or something is mounted in it.
func (p *Plugin) removeUnrecorded(dir, id, path string) error {
	kind := "volumes"
	if dir == p.snapshotsDir() {
		kind = "snapshots"
	}
	if _, err := os.Stat(filepath.Join(p.cfg.Root, metaDir, kind, id+".json")); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("its record is there now, saved by another process serving this root, or cannot be read (%v)", err)
	}
	if err := checkNothingMountedIn(path); err != nil {
		return err
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	p.log.Info("hostpath: removed the directory of an interrupted create (no record names it)", "path", path)
	return nil
}

// Register adds the Identity, Controller and Node services to srv, for callers that build their
// own grpc.Server.
func (p *Plugin) Register(srv *grpc.Server) {
	csi.RegisterIdentityServer(srv, p)
	csi.RegisterControllerServer(srv, p)
	csi.RegisterNodeServer(srv, p)
}

// NewServer returns a grpc.Server with the plugin registered, its interceptors installed
// (crashRPC outermost, then the RPC log), and Config.ServerOptions applied.
func (p *Plugin) NewServer() *grpc.Server {
	opts := append([]grpc.ServerOption{grpc.ChainUnaryInterceptor(crashRPC, p.logRPC)}, p.cfg.ServerOptions...)
	srv := grpc.NewServer(opts...)
	p.Register(srv)
	return srv
}

// crashRPC ends the process as a volctl crash (crash.Recover: exit status crash.ExitCode, the
// panic and its stack on stderr) when a handler panics: gRPC runs handlers on goroutines of its
// own, where a panic would end the process with Go's status 2, volctl's usage error. It does
// not answer INTERNAL and serve on: the panic may have left the plugin's state half-changed in
// memory, or its lock held (two handlers unlock without defer), and INTERNAL is a final error
// that makes the CO roll back as if the plugin had decided. A plugin that exits is what CSI is
// built for: the CO's call fails UNAVAILABLE and is retried, the agent starts the plugin again,
// it reloads its state from Root, and its bind mounts, the kernel's, outlive the process.
func crashRPC(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	defer crash.Recover()
	return handler(ctx, req)
}

// prepareRoot creates Root and its subdirectories and throws away copies a crash interrupted.
func (p *Plugin) prepareRoot() error {
	// The root is private: the metadata names every volume. Volumes reach their consumers
	// through bind mounts, which do not need the parent directories to be traversable.
	if err := p.checkRootDir(p.cfg.Root); err != nil {
		return err
	}
	if err := os.MkdirAll(p.cfg.Root, 0o700); err != nil {
		return fmt.Errorf("hostpath: root %q: %w", p.cfg.Root, err)
	}
	if err := p.checkRootDir(p.cfg.Root); err != nil {
		return err
	}
	for _, dir := range []string{p.volumesDir(), p.snapshotsDir(), p.partialDir(), p.metaDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("hostpath: %w", err)
		}
		if err := p.checkRootDir(dir); err != nil {
			return err
		}
		if err := p.makePrivate(dir); err != nil {
			return err
		}
	}
	return p.clearInterruptedCopies()
}

// makePrivate takes from dir, one of the root's own directories (this user's: checkRootDir),
// what lets other users reach into it: one made before with other permissions (a root restored
// with cp -r, or made by hand) at 0755 let every local user traverse volumes/ into the volumes'
// directories, 0777 for their consumers, and read and write any volume's data, and read the
// snapshots and the records. A volume's consumers reach it through bind mounts, which need no
// way through these.
func (p *Plugin) makePrivate(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("hostpath: %w", err)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, fi.Mode().Perm()&0o700); err != nil {
		return fmt.Errorf("hostpath: root %s: making %s private (it is mode %#o, which lets other users into the volumes' data): %w", p.cfg.Root, dir, fi.Mode().Perm(), err)
	}
	p.log.Warn("hostpath: a directory of the root was open to other users: made private", "dir", dir, "was", fmt.Sprintf("%#o", fi.Mode().Perm()))
	return nil
}

// checkRootDir refuses the root, or one of its directories (dir), when another user controls
// it: owns it, may write it, or may replace it (pathtrust.Ancestors: a directory on the way
// that they own or may write). The plugin, as root, bind-mounts what volumes/<id> holds on the
// staging path it is given, copies snapshots as root, and trusts the records in meta/ to say
// where it mounted: whoever could put a symlink at volumes/<id> (to /etc) would have /etc
// handed to the volume's consumer. A dir that does not exist yet passes (MkdirAll makes it,
// private, and it is checked again then).
func (p *Plugin) checkRootDir(dir string) error {
	refuse := func(what, why, fix string) error {
		in := ""
		if dir != p.cfg.Root {
			in = fmt.Sprintf(", its directory %s", dir)
		}
		return fmt.Errorf("hostpath: root %s%s %s %s: another user could put a symlink where a volume's directory is, "+
			"and have the plugin, as root, mount what it points to for the volume's consumer; %s, or serve another --root",
			p.cfg.Root, in, what, why, fix)
	}
	if pr := pathtrust.Ancestors(dir); pr != nil {
		return refuse("is reached through "+pr.Path+", which", pr.Why, "chown or chmod go-w "+pr.Dir())
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hostpath: root %q: %w", p.cfg.Root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("hostpath: root %s: %s is not a directory", p.cfg.Root, dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return nil // no owner to check: volctl only runs on Linux
	case int(st.Uid) != os.Geteuid():
		return refuse("is", fmt.Sprintf("owned by uid %d, not by this user (uid %d)", st.Uid, os.Geteuid()), "chown it to this user")
	case pathtrust.OthersMayWrite(st.Mode, st.Gid):
		mode := st.Mode & 0o7777
		return refuse("is", fmt.Sprintf("writable by other users (mode %#o)", mode), "chmod 700 it once you know what they put there")
	}
	if who := pathtrust.ACLWriter(dir, st.Mode); who != "" {
		return refuse("is", fmt.Sprintf("writable by %s through its ACL (getfacl shows it)", who), "chmod 700 it (or setfacl -b) once you know what they put there")
	}
	return nil
}

// clearInterruptedCopies removes the copies in partial/ that no process is making, and the
// directories of deleted volumes (delete-<id>-..., DeleteVolume) that no process is removing:
// another process may serve the same root (volctl's own plugin and the one Nomad runs), and a
// copy holds a lock on its directory while it runs (startCopy), as a delete does on the
// directory it removes, so only those a start can lock are a crash's.
func (p *Plugin) clearInterruptedCopies() error {
	entries, err := os.ReadDir(p.partialDir())
	if err != nil {
		return fmt.Errorf("hostpath: clearing interrupted copies: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(p.partialDir(), e.Name())
		if lockOf, ok := strings.CutSuffix(path, trashLockSuffix); ok {
			// A deleted directory's lock file: taken with its directory, or, the directory gone
			// (a kill between the two removals, or before the rename), removed once free.
			if _, err := os.Lstat(lockOf); errors.Is(err, fs.ErrNotExist) {
				if lk, err := lockTrash(lockOf); err == nil {
					_ = os.Remove(path)
					lk.Close()
				}
			}
			continue
		}
		var err error
		if strings.HasPrefix(e.Name(), deletedPrefix) {
			var d *deletedDir
			if d, err = takeTrash(path); err == nil {
				err = d.remove()
			}
		} else {
			var unlock func()
			if unlock, err = lockDir(path, unix.LOCK_NB); err == nil {
				err = os.RemoveAll(path)
				unlock()
			}
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			p.log.Info("hostpath: a copy another process is making, or a deleted volume's directory it is removing, left in place", "path", path)
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Logged, not the start's failure: a file that cannot be unlinked (made immutable
			// by a consumer) in a deleted volume's leftover kept the plugin from starting again
			// on the root, every volume still on it out of reach
			// (TestStartServesThoughADeletedVolumesLeftoverCannotBeRemoved), where the sweeps of
			// the same kind of leftover log it and go on.
			p.log.Warn("hostpath: what an interrupted copy or delete left in partial/ could not be removed; it is left in place, and the next start tries again"+unremovable(path, err),
				"path", path, "err", err)
		}
	}
	return nil
}

// unremovable says, of a removal of path that failed with err, what in it may not be unlinked:
// a file made immutable or append-only, which `lsattr -R` shows and chattr clears. "" for other
// failures.
func unremovable(path string, err error) string {
	if !errors.Is(err, unix.EPERM) {
		return ""
	}
	return fmt.Sprintf(" (a file in it cannot be unlinked: an immutable or append-only one, which `lsattr -R %s` shows and `chattr -i`/`chattr -a` clears)", path)
}

// holdNew locks the directory a create just put in place until its record is saved (the
// caller calls unlock then), so that another process starting on this root does not sweep it
// as an interrupted create's (sweepUnrecorded); one that swept it before the lock was taken
// is an error, and the create fails.
func holdNew(dir string) (unlock func(), err error) {
	f, err := openLocked(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (removed meanwhile by another plugin process starting on this root?)", err)
	}
	held, herr := f.Stat()
	now, nerr := os.Stat(dir)
	if herr != nil || nerr != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, fmt.Errorf("%s was removed meanwhile by another plugin process starting on this root, which took it for an interrupted create's", dir)
	}
	return func() { f.Close() }, nil
}

func (p *Plugin) volumesDir() string   { return filepath.Join(p.cfg.Root, "volumes") }
func (p *Plugin) snapshotsDir() string { return filepath.Join(p.cfg.Root, "snapshots") }

// partialDir holds copies in progress, so a snapshot or clone appears under its final name
// only once it is complete (rename is atomic within one filesystem), and deleted volumes'
// directories being removed (deletedPrefix), so that none is removed under the plugin's lock.
func (p *Plugin) partialDir() string { return filepath.Join(p.cfg.Root, "partial") }

// metaDir holds the records; lock locks it.
func (p *Plugin) metaDir() string { return filepath.Join(p.cfg.Root, metaDir) }

// volumePath and snapshotPath take IDs that came from this plugin's own state, which holds only
// IDs it generated (and validated again at load), never a caller's raw string.
func (p *Plugin) volumePath(id string) string   { return filepath.Join(p.volumesDir(), id) }
func (p *Plugin) snapshotPath(id string) string { return filepath.Join(p.snapshotsDir(), id) }

// save writes the state; callers hold mu.
// saveVolume persists one volume's record (or its removal).
func (p *Plugin) saveVolume(id string) error { return p.state.saveVolume(p.cfg.Root, id) }

// saveSnapshot persists one snapshot's record (or its removal).
func (p *Plugin) saveSnapshot(id string) error { return p.state.saveSnapshot(p.cfg.Root, id) }

// topology is the accessible topology of this node and of every volume on it.
func (p *Plugin) topology() *csi.Topology {
	return &csi.Topology{Segments: map[string]string{TopologyKey: p.cfg.NodeID}}
}

// snapshot returns snapshot id as its record on disk has it (state.currentSnapshot). The
// caller holds p.mu.
func (p *Plugin) snapshot(id string) (*snapshot, bool) {
	return p.state.currentSnapshot(p.cfg.Root, id)
}

// has reports whether snapshot id, one p has read, is still on disk (p.snapshot). The caller
// holds p.mu.
func (p *Plugin) has(id string) bool {
	_, ok := p.snapshot(id)
	return ok
}

// learnSnapshots reads the records of the snapshots another process serving the root made
// since this one last read them (the names in meta/snapshots it holds no copy of), so that a
// lookup by name and a listing see them: before, only a request naming one by its ID read it,
// so a CreateSnapshot of a name the other process had made (again) made a second copy under
// that name, and ListSnapshots left it out (TestSnapshotRemadeByTheOtherProcessIsNotMadeTwice,
// TestListSnapshotsListsOneTheOtherProcessMade). One directory read; only the records new to
// this process are read. The caller holds p.mu.
func (p *Plugin) learnSnapshots() {
	p.learnRecords("snapshots", isSnapshotID, func(id string) bool { return p.state.Snapshots[id] != nil }, func(id string) { p.snapshot(id) })
}

// learnVolumes is learnSnapshots for volumes: a CreateVolume whose name this process does not
// find (or finds deleted) reads the records of the volumes the other process made, and answers
// with the other's volume of that name. Before, a name the other had deleted and made again
// was made a third time here, the root then holding two volumes of the name
// (TestVolumeRemadeByTheOtherProcessIsNotMadeTwice). The caller holds p.mu.
func (p *Plugin) learnVolumes() {
	p.learnRecords("volumes", isVolumeID, func(id string) bool { return p.state.Volumes[id] != nil }, func(id string) { p.volume(id) })
}

// learnRecords reads, of the records in meta/<kind> (one directory read), those whose IDs
// (valid by isID) this process holds no copy of (known).
func (p *Plugin) learnRecords(kind string, isID, known func(string) bool, read func(string)) {
	entries, err := os.ReadDir(filepath.Join(p.metaDir(), kind))
	if err != nil {
		return // no records yet, or a root moved: the request's own checks say so
	}
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && isID(id) && !known(id) {
			read(id)
		}
	}
}

// rootMoved is the error of a request to a plugin whose root moved or was removed while it
// served it (no meta/ there): its records, and the volumes' directories its mounts come from,
// are elsewhere or gone (TestRootMovedUnderThePluginSaysSo).
func (p *Plugin) rootMoved() error {
	return failedPrecondition("the plugin's root %s has no %s directory: it was moved or removed while the plugin served it; "+
		"put it back where it was, or restart the plugin with --root where it is now, then send the request again", p.cfg.Root, metaDir)
}

// checkRoot is rootMoved's error when the root has no meta/, for a request that does not take
// lock (a create of an empty volume, under mu alone), else nil: it would otherwise fail
// INTERNAL on the directory it could not make.
func (p *Plugin) checkRoot() error {
	if _, err := os.Lstat(p.metaDir()); errors.Is(err, fs.ErrNotExist) {
		return p.rootMoved()
	}
	return nil
}

// VolumePath returns the directory holding volume id's data, for tests and tools that want to
// look behind the mounts, and false for an unknown volume.
func (p *Plugin) VolumePath(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.volume(id); !ok {
		return "", false
	}
	return p.volumePath(id), true
}

// volume returns volume id as its record on disk has it, or false when there is none: another
// plugin process serving the same root (volctl's own and the one Nomad runs after a handover,
// whose --root is volctl's) may have created, changed or deleted it since this one last read
// or wrote it. The copy in memory is used when the record's bytes are those this process last
// wrote or read. The caller holds p.mu, and lock's lock to change the record.
func (p *Plugin) volume(id string) (*volume, bool) {
	return p.state.current(p.cfg.Root, id)
}
