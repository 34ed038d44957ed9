// Package engine is volctl's orchestration: admission, the claim state machine, staging
// reference counts, reconcile and restore, claim GC and plugin health. It drives CSI plugins
// through internal/csi and keeps its state in internal/store, and returns plain values (not
// store rows, not protobufs) to the command line and the dashboard.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/backoff"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Config builds an Engine. Zero fields take the defaults filled in by withDefaults.
type Config struct {
	// StateDir holds the database, the lock files and the staging and publish mounts.
	StateDir string
	// Store is the open state database; when nil, Open opens the one in StateDir and Close
	// closes it.
	Store *store.Store
	// Logger gets warnings and, at debug level, RPC traces with secrets redacted.
	Logger *slog.Logger
	// Reading says the engine is for a command that reads and seldom or never writes (a list,
	// a status): the database it opens is opened store.ForReading.
	Reading bool
	// BeforeLock, when set, is called before each lock the engine takes (a volume's, a
	// plugin's, a group's, the state dir's directories'), that is before any operation of
	// several steps, RPCs and commits, that a kill between two would leave half-way: the CLI
	// takes SIGPIPE from its first call on (outliveReaderForGood), so that a reader gone does
	// not kill the command in the middle, while a command that only reads keeps SIGPIPE's quiet
	// end. It must be cheap and safe to call often.
	BeforeLock func()
	// Mounts answers which paths are mounted; the kernel's table by default.
	Mounts MountTable
	// Retry bounds how a retryable RPC failure is retried before the claim is left for reconcile.
	Retry RetryPolicy
	// Timeouts are the default per-RPC timeouts; a plugin's own `timeout` overrides the long one.
	Timeouts csi.Timeouts
	// Now is the clock.
	Now func() time.Time
	// ListCheck bounds the time of the listing that checks a teardown answered OK or
	// NOT_FOUND (teardownChecked); DefaultListCheck when zero.
	ListCheck time.Duration
	// ListTime bounds the time of a listing shown to the user, paging through a plugin's
	// ListSnapshots (listPluginSnapshots); DefaultListTime when zero.
	ListTime time.Duration
	// ListMemory bounds what a listing shown to the user holds of a plugin's answers (the
	// snapshots of its ListSnapshots pages, in bytes: listedSize); DefaultListMemory when zero.
	ListMemory int
	// PassLockWait, when set, bounds how long a reconcile pass or a claim GC waits for one
	// lock another process holds: past it, what needs that lock is a problem of the pass, left
	// for the next one, rather than every other volume waiting behind a process stopped (^Z)
	// or hung while holding it. The agent sets it; a command waits while it lasts, saying so.
	PassLockWait time.Duration
	// ObserveRPC, when set, is called after every RPC the engine's plugin clients send, with the
	// plugin's ID, the RPC's name, its gRPC code and its duration (csi.Config.Observe): the
	// agent's metrics.
	ObserveRPC func(plugin, rpc, code string, d time.Duration)
}

// RetryPolicy is jittered exponential backoff with a bounded number of attempts.
type RetryPolicy struct {
	Attempts int           // total tries of one RPC, first one included
	Base     time.Duration // first wait
	Max      time.Duration // cap on one wait
}

// DefaultRetry is what a command uses: a few tries within seconds, then the claim is left for
// reconcile (docs/architecture.md, Timeouts).
var DefaultRetry = RetryPolicy{Attempts: 4, Base: 250 * time.Millisecond, Max: 2 * time.Second}

// backoff returns the waits between tries: Base, doubling, up to Max.
func (r RetryPolicy) backoff() *backoff.Backoff {
	base := r.Base
	if base <= 0 || base > r.Max {
		base = r.Max
	}
	return backoff.New(base, r.Max)
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Mounts == nil {
		c.Mounts = kernelMounts{}
	}
	if c.Retry.Attempts <= 0 {
		c.Retry = DefaultRetry
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ListCheck <= 0 {
		c.ListCheck = DefaultListCheck
	}
	if c.ListTime <= 0 {
		c.ListTime = DefaultListTime
	}
	if c.ListMemory <= 0 {
		c.ListMemory = DefaultListMemory
	}
	return c
}

// Engine runs volctl's operations. It is safe for concurrent use, and several processes may
// run engines on one state dir at once: they coordinate through flocks and SQLite.
type Engine struct {
	// looks are the views' looks at mounts under way (boundedLooks): one per key at a time.
	looks     lookFlights
	cfg       Config
	store     *store.Store
	ownsStore bool
	locks     *locker
	log       *slog.Logger
	// linkDir is the state dir as given when it differs from the resolved cfg.StateDir (a
	// symlink): paths recorded under it by an older volctl are read as under the real dir.
	linkDir string

	mu      sync.Mutex
	conns   map[string]*conn // by plugin ID
	retired map[*conn]bool   // replaced connections still in use, closed by their last user

	scrubbers scrubberCache // Redactor's last scrubber, for the same values

	// publishWalkPaths: the publish tree of at most this many paths is walked, a larger one
	// looked up in the mount table (publishTreeEntry); publishWalks counts the walks.
	publishWalkPaths int
	publishWalks     atomic.Int64
	// sharedViews holds the plugin node sockets (by their identity: a plugin started again
	// makes its socket anew) whose server checkMountView found sharing this process's mounts,
	// so an engine that claims and releases many times (the agent) asks each server once;
	// peerDials counts the servers asked.
	sharedViews sync.Map
	peerDials   atomic.Int64
	// placeReads counts the reads of the mount table that place volume_mount destinations
	// (placeView.load): one per reconcile pass, not one per claim.
	placeReads atomic.Int64
	// failpointHook, when set (by tests only: nil in every binary), runs at each failpoint
	// this engine passes (failpoint.go).
	failpointHook func(name string)
}

// Open builds an engine on a state dir, opening its database unless cfg.Store is given.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if cfg.StateDir == "" {
		return nil, errors.New("engine: no state dir")
	}
	st, owns := cfg.Store, false
	if st == nil {
		var err error
		opts := []store.Option{store.WithLogger(cfg.Logger), store.WithClock(cfg.Now), store.WithForget(csi.Scrubber)}
		if cfg.Reading {
			opts = append(opts, store.ForReading())
		}
		st, err = store.Open(ctx, cfg.StateDir, opts...)
		if err != nil {
			return nil, err
		}
		owns = true
	}
	// The kernel reports mount points at their real paths. Resolve the state dir once, here, so
	// every staging and target path built under it compares equal with the mount table's (a
	// state dir reached through a symlink would otherwise look unmounted on every pass).
	var linkDir string
	given := cfg.StateDir
	if real, err := realDir(cfg.StateDir); err == nil {
		if abs, _ := filepath.Abs(cfg.StateDir); abs != real {
			linkDir = filepath.Clean(abs)
		}
		cfg.StateDir = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		if owns {
			st.Close()
		}
		return nil, &store.DirError{Dir: cfg.StateDir, Err: err}
	}
	locks, err := newLocker(cfg.StateDir)
	if err != nil && st.CheckWritable() != nil && errors.Is(err, syscall.EROFS) {
		// A read-only state dir without its lock dir can still be read; what would take a lock
		// writes, and the store refuses that first.
		locks, err = &locker{dir: filepath.Join(cfg.StateDir, lockDir)}, nil
	}
	if err != nil {
		if owns {
			st.Close()
		}
		// The lock dir's path is under the resolved dir: it names the dir as given unless
		// resolving changed it (a symlink).
		return nil, &store.DirError{Dir: given, Err: err, Named: cfg.StateDir == given}
	}
	locks.before = cfg.BeforeLock
	locks.readOnly = st.CheckWritable
	e := &Engine{cfg: cfg, store: st, ownsStore: owns, locks: locks, log: cfg.Logger, linkDir: linkDir, conns: map[string]*conn{}, retired: map[*conn]bool{},
		publishWalkPaths: publishWalkPaths}
	e.log = e.RedactLogger(cfg.Logger) // what the engine words from plugin data may hold an echoed secret
	locks.scrub = e.scrubShown
	return e, nil
}

// scrubShown is s scrubbed of the state's secrets, for a line shown as it happens (a lock
// wait's progress); withheld when they cannot be read.
func (e *Engine) scrubShown(ctx context.Context, s string) string {
	redact, err := e.Redactor(context.WithoutCancel(ctx))
	if err != nil {
		return "(withheld: reading the state's secrets to scrub it failed)"
	}
	return redact(s)
}

// realDir is dir made absolute with every symlink in it resolved.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// realPath is a staging or target path as the mount table reports it: one recorded under the
// state dir's symlink (by a volctl that did not resolve it) is moved under the real dir. Such
// paths are compared, made and removed as real paths (the walks below the state dir refuse
// anything not under it, and tidying must stop at the real dir, not remove the symlink); the
// plugin is still sent the path it was given before.
func (e *Engine) realPath(p string) string {
	if e.linkDir == "" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, e.linkDir+string(filepath.Separator)); ok {
		return filepath.Join(e.cfg.StateDir, rest)
	}
	return p
}

// Close closes plugin connections and, if the engine opened it, the store.
func (e *Engine) Close() error {
	if e.closePlugins() {
		return e.store.Close()
	}
	return nil
}

// CloseAtExit is Close for a process about to exit: the store, if the engine opened it, is left
// for the exit to close (store.CloseAtExit), which spares the process SQLite's checkpoint of the
// WAL and its fsyncs. Any process that goes on must Close.
func (e *Engine) CloseAtExit() error {
	if e.closePlugins() {
		return e.store.CloseAtExit()
	}
	return nil
}

// closePlugins closes the plugin connections and says whether the engine owns its store.
func (e *Engine) closePlugins() (ownsStore bool) {
	e.mu.Lock()
	for id, c := range e.conns {
		_ = c.client.Close()
		delete(e.conns, id)
	}
	for c := range e.retired {
		_ = c.client.Close()
		delete(e.retired, c)
	}
	e.mu.Unlock()
	return e.ownsStore
}

// StateDir is the state directory the engine works in.
func (e *Engine) StateDir() string { return e.cfg.StateDir }

// CheckStateFile is an error saying to restart, matching store.ErrReplaced, once the state
// database at the state dir's path is no longer the file this engine opened (a backup restored
// over it, the state dir moved): for a command that reads for as long as it runs (events
// --follow), as the dashboard and each reconcile pass check before they read. On a read-only
// state, whose reads follow a file put at the path, the file compared is the first opened
// (store.CheckFirstFile): a follow goes on from what it read there.
func (e *Engine) CheckStateFile() error { return e.store.CheckFirstFile() }

// Plugin is what the engine needs of a CSI plugin connection; *csi.Client is the real one.
type Plugin interface {
	Fingerprint(ctx context.Context) (*csi.Fingerprint, error)
	GetPluginInfo(ctx context.Context) (csi.PluginInfo, error)
	DriverNames(ctx context.Context) ([]csi.SocketDriver, error)
	Probe(ctx context.Context) (bool, error)
	CreateVolume(ctx context.Context, r csi.CreateVolumeRequest) (csi.Volume, error)
	DeleteVolume(ctx context.Context, r csi.DeleteVolumeRequest) error
	ValidateVolumeCapabilities(ctx context.Context, r csi.ValidateVolumeCapabilitiesRequest) error
	ControllerPublishVolume(ctx context.Context, r csi.ControllerPublishVolumeRequest) (map[string]string, error)
	ControllerUnpublishVolume(ctx context.Context, r csi.ControllerUnpublishVolumeRequest) error
	ControllerExpandVolume(ctx context.Context, r csi.ControllerExpandVolumeRequest) (csi.ControllerExpandVolumeResponse, error)
	CreateSnapshot(ctx context.Context, r csi.CreateSnapshotRequest) (csi.Snapshot, error)
	DeleteSnapshot(ctx context.Context, r csi.DeleteSnapshotRequest) error
	ListSnapshots(ctx context.Context, r csi.ListSnapshotsRequest) (csi.ListSnapshotsResponse, error)
	ListVolumes(ctx context.Context, r csi.ListVolumesRequest) (csi.ListVolumesResponse, error)
	GetSnapshot(ctx context.Context, r csi.GetSnapshotRequest) (csi.Snapshot, error)
	ControllerGetVolume(ctx context.Context, r csi.ControllerGetVolumeRequest) (csi.ControllerGetVolumeResponse, error)
	NodeStageVolume(ctx context.Context, r csi.NodeStageVolumeRequest) error
	NodeUnstageVolume(ctx context.Context, r csi.NodeUnstageVolumeRequest) error
	NodePublishVolume(ctx context.Context, r csi.NodePublishVolumeRequest) error
	NodeUnpublishVolume(ctx context.Context, r csi.NodeUnpublishVolumeRequest) error
	NodeExpandVolume(ctx context.Context, r csi.NodeExpandVolumeRequest) (int64, error)
	Close() error
}

func dialCSI(p store.Plugin, srv *servers, timeouts csi.Timeouts, log *slog.Logger, redact func(context.Context) ([]string, error),
	observe func(plugin, rpc, code string, d time.Duration)) (Plugin, error) {
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	cfg.Timeouts = pluginTimeouts(p, timeouts)
	if _, err := spec.ClampPluginTimeout(p.Timeout); err != nil {
		how := fmt.Sprintf("with `%s` (another duration for %s), or its plugin block's timeout", registerAgainCommand(p, cfg.Timeouts.Long), cfg.Timeouts.Long)
		if p.Exec != nil { // registered again by flags, it would lose its exec block
			how = "in its plugin block's timeout, then " + registerFileAgain
		}
		log.Warn(fmt.Sprintf("plugin %q: its timeout %s, stored by an older volctl, %v: %s is used; set one within 1s to 24h %s",
			p.ID, p.Timeout, strings.TrimPrefix(err.Error(), p.Timeout.String()+" "), cfg.Timeouts.Long, how))
	}
	cfg.Logger = log.With("plugin", p.ID) // the RPC trace names the plugin beside the rpc
	cfg.Name = p.ID                       // and so do its errors' hints
	long := cfg.Timeouts.Long
	cfg.LongTimeoutAdvice = func() string { return longTimeoutAdvice(p, long) }
	cfg.Redact = redact
	cfg.CheckPeer = srv.checkPeer // every connection, gRPC's reconnects too, not only checkServers' own
	cfg.CheckAccepted = srv.checkAccepted
	if observe != nil {
		id := p.ID
		cfg.Observe = func(rpc, code string, d time.Duration) { observe(id, rpc, code, d) }
	}
	return csi.New(cfg)
}

// secretValues is every secret value and mount flag in the state, which the plugin clients
// scrub from whatever a plugin says, whichever RPC it says it in: a plugin may echo in a
// NodeUnstageVolume error the secret it was sent in NodeStageVolume, or another volume's.
// Scrubbing them all, not only the volume's at hand, needs no knowledge of which volume a
// call is about, and over-redacting is harmless. It is read when a plugin message is to be
// shown, which is rare enough that nothing is cached.
//
// It reads as ViewShort does: on the write connection, open already, in a command that has
// opened no read connection (a claim, a release), rather than opening one for it. A command
// that failed for want of file descriptors had none left for that connection either, and its
// error, redacted through this read, was replaced by "the error is withheld: reading the state
// to redact secrets from it: ... too many open files" (TestRedactingAFailedClaimWithoutFileDescriptors).
//
// Those this process took out of the state are scrubbed too (store.Store.ForgottenHere): what
// it prints may have been worded while the state still held them.
func (e *Engine) secretValues(ctx context.Context) ([]string, error) {
	var values []string
	read := func() error {
		return e.store.ViewShort(ctx, func(tx *store.Tx) (err error) {
			values, err = tx.SecretValues()
			return err
		})
	}
	err := read()
	for try := 0; try < 3 && errors.Is(err, store.ErrChangedWhileRead); try++ {
		// Read through a read-only path while another volctl wrote: read again, the file as it
		// is now. The error it was to redact was withheld for it
		// (TestEventsFollowOnAReadOnlyBindOutlivesAnotherVolctlsWrite).
		err = read()
	}
	if err != nil {
		return values, err
	}
	return e.andForgotten(values), nil
}

// andForgotten is values, the state's secret values as a read found them, with those this
// process let go since (store.Store.ForgottenHere), which what it read before may still hold.
func (e *Engine) andForgotten(values []string) []string {
	return append(values, e.store.ForgottenHere()...)
}

// SecretValues is every secret value and mount flag in the state (store.Tx.SecretValues), for
// a csi.Config.Redact of a client the engine does not make (plugin probe's).
func (e *Engine) SecretValues(ctx context.Context) ([]string, error) { return e.secretValues(ctx) }

// Redactor returns a function that scrubs every secret value and mount flag the state holds
// (as secretValues) from text about to be printed. Plugin messages are scrubbed as they
// arrive, but data a plugin returns is kept raw, because it is sent back to the plugin or to
// Nomad as it came (a volume_context, a publish_context, a volume or snapshot ID), and
// printed too (with its identity and node ID): a plugin that echoes a secret there must not
// get it printed. Commands pass their whole output through it.
// extra are values to scrub beside them (secrets given on the command line).
func (e *Engine) Redactor(ctx context.Context, extra ...string) (func(string) string, error) {
	values, err := e.secretValues(ctx)
	if err != nil {
		return nil, err
	}
	return e.scrubbers.get(append(values, extra...)), nil
}

// scrubberCache keeps the last scrubber Redactor built, with the values it was built for:
// building one works out every encoded form of every value (2.2 ms for 1,000 values on the
// development machine, against 3.5 µs to find it again: BenchmarkRedactorScrubber), and the
// engine's log asks for one per record, almost always for the same values. A different list
// of values builds a new one.
type scrubberCache struct {
	mu     sync.Mutex
	values []string // what scrub was built for
	scrub  func(string) string
	builds int // for tests
}

func (c *scrubberCache) get(values []string) func(string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scrub == nil || !slices.Equal(values, c.values) {
		c.values, c.scrub = slices.Clone(values), csi.Scrubber(values)
		c.builds++
	}
	return c.scrub
}

// pluginTimeouts are the per-RPC timeouts a plugin's client runs with: the engine's, with the
// plugin's own timeout, when it has one, for the long RPCs. retry needs them too, to tell an
// attempt cut off by its timeout from a plugin that answered DEADLINE_EXCEEDED itself.
//
// A timeout an older volctl stored outside its bounds (it took 1ns) is clamped to them
// (spec.ClampPluginTimeout; dialCSI warns of it).
func pluginTimeouts(p store.Plugin, defaults csi.Timeouts) csi.Timeouts {
	sp := p.Spec()
	t := csi.ConfigFromSpec(&sp).Timeouts
	t.Long, _ = spec.ClampPluginTimeout(t.Long)
	if t.Long == 0 {
		t.Long = defaults.Long
	}
	t.Short = defaults.Short
	return t
}

// longTimeoutAdvice says, for the hint of a long RPC that ran into it, that long is plugin p's
// own timeout and how to raise it: a plugin slower than it (a cloud disk that takes minutes to
// attach), not hung, fails so on every try, and "did not answer within 2m0s" named neither
// (TestTimedOutRPCSaysHowToRaiseTheTimeout). It proposes twice long, within the bounds a
// plugin's timeout is held to. A plugin the agent starts (an exec block) is declared in a
// file, which is where its timeout is changed: registered again by flags, it would lose its
// exec block. Any other is registered again with its own sockets, the command ready to paste;
// one the agent's config declares takes the file's timeout back at the agent's next start,
// which the words say too.
func longTimeoutAdvice(p store.Plugin, long time.Duration) string {
	next, _ := spec.ClampPluginTimeout(2 * long)
	if next <= long {
		return fmt.Sprintf("its timeout, %s, is the most a plugin's timeout can be", long)
	}
	if p.Exec != nil {
		return fmt.Sprintf("if it needs longer, raise the timeout (%s) in its plugin block, to %s say, and %s", long, next, registerFileAgain)
	}
	return fmt.Sprintf("if it needs longer, raise its timeout (%s): `%s` (or the timeout of its plugin block, where a file declares it)",
		long, registerAgainCommand(p, next))
}

// registerFileAgain is how a plugin the agent starts (an exec block, declared in a file) takes
// a changed timeout: registered again by flags (registerAgainCommand), it would lose its exec
// block (TestStoredTimeoutOfAPluginTheAgentStartsIsRaisedInItsBlock).
const registerFileAgain = "register that file again (`volctl plugin register FILE`, or restart the agent whose config declares it)"

// registerAgainCommand is the command that registers plugin p again as it is registered (its
// ID, type and sockets) with the long-RPC timeout timeout, its words quoted for a shell.
func registerAgainCommand(p store.Plugin, timeout time.Duration) string {
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	var flags []string
	switch {
	case p.Type == spec.PluginController:
		flags = []string{"--type controller", shellquote.Flag("--socket", cfg.ControllerSocket)}
	case p.Type == spec.PluginNode:
		flags = []string{"--type node", shellquote.Flag("--socket", cfg.NodeSocket)}
	case p.Socket == "":
		flags = []string{shellquote.Flag("--controller-socket", cfg.ControllerSocket), shellquote.Flag("--node-socket", cfg.NodeSocket)}
	default:
		flags = []string{shellquote.Flag("--socket", cfg.ControllerSocket)}
	}
	flags = append(append([]string{shellquote.Flag("--id", p.ID)}, flags...), shellquote.Flag("--timeout", timeout.String()))
	return shellquote.CommandFlags("volctl plugin register", nil, flags...)
}

// conn is a connected, fingerprinted plugin. Its fingerprint is only trusted while the
// plugin's sockets are the same files: a restarted plugin recreates its socket, and then the
// engine reconnects and fingerprints again, so capabilities never outlive a restart. The
// socket files' identity is stored with the fingerprint, so a new process connecting to the
// same plugin instance reuses it without an RPC (reusableFingerprint).
type conn struct {
	// plugin is the row the connection was made for. It is never written after the conn is
	// made: operations on other goroutines read it without a lock (its ID, its sockets).
	plugin  store.Plugin
	client  Plugin
	fp      *csi.Fingerprint
	sockets []socketID
	// entries are where the sockets' names were when the plugin was fingerprinted (entryOf;
	// from the stored fingerprint when it is reused), recorded with it: anotherPluginsSocket
	// tells by them a directory made another plugin's since.
	entries []socketEntry
	// servers is who served the sockets when the plugin was fingerprinted (its client's
	// CheckPeer holds every connection to them).
	servers *servers
	// timeouts are the client's per-RPC timeouts (pluginTimeouts), which retry reads.
	timeouts csi.Timeouts
	// fpRecorded says fp is in the store: connectPlugin with record wrote it, or checkHealth
	// did with its health reading.
	fpRecorded atomic.Bool

	// users counts the operations using the connection (connectPlugin hands it out, done
	// gives it back); retired says it is no longer the engine's connection to the plugin (the
	// plugin restarted, or stopped answering). A retired connection is closed when its last
	// user is done, not under an RPC another goroutine has in flight on it. Both under e.mu.
	users   int
	retired bool
	// rowAt is the UpdatedAt of the plugin row the connection serves, under e.mu: the row it
	// was made for, or the one a registration through it stored since (registerPlugin). A
	// row changed otherwise (another process registered the plugin anew) gets a new conn, and
	// so does a declaration not stored yet (zero: a registration dials afresh).
	rowAt time.Time
}

// done gives back a connection connectPlugin handed out: the operation is finished with it.
// A connection retired meanwhile is closed by its last user.
func (e *Engine) done(c *conn) {
	if c == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c.users--
	if c.retired && c.users <= 0 {
		_ = c.client.Close()
		delete(e.retired, c)
	}
}

// retire takes c out of use for new operations, closing it now when nobody uses it, else when
// its last user is done. The caller holds e.mu.
func (e *Engine) retire(c *conn) {
	if e.conns[c.plugin.ID] == c {
		delete(e.conns, c.plugin.ID)
	}
	if c.retired {
		return
	}
	c.retired = true
	if c.users <= 0 {
		_ = c.client.Close()
		return
	}
	e.retired[c] = true
}

type socketID struct {
	path       string
	dev, inode uint64
	ctime      int64
	// notSocket: the path holds another kind of file (a directory, a regular file), which
	// connectPlugin refuses, naming it (notASocket); never so of a socket recorded.
	notSocket bool
}

func identify(paths ...string) []socketID {
	var out []socketID
	for _, p := range paths {
		if p == "" {
			continue
		}
		id := socketID{path: p}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err == nil {
			id.dev, id.inode, id.ctime = st.Dev, st.Ino, st.Ctim.Nano()
			id.notSocket = st.Mode&syscall.S_IFMT != syscall.S_IFSOCK
		}
		out = append(out, id)
	}
	return out
}

func sameSockets(a, b []socketID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] || a[i].inode == 0 {
			return false
		}
	}
	return true
}

func pluginSockets(p store.Plugin) []string {
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	if cfg.ControllerSocket == cfg.NodeSocket {
		return []string{cfg.ControllerSocket}
	}
	return []string{cfg.ControllerSocket, cfg.NodeSocket}
}

// connect returns a fingerprinted connection to a registered plugin, reusing the cached one
// while the plugin has not restarted. The new fingerprint is recorded in the store.
func (e *Engine) connect(ctx context.Context, pluginID string) (*conn, error) {
	p, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(pluginID) })
	return e.connectRead(ctx, pluginID, p, err)
}

// connectRead is connect for a caller that read the plugin's row itself, in a transaction of
// its own (p, and err from reading it).
func (e *Engine) connectRead(ctx context.Context, pluginID string, p store.Plugin, err error) (*conn, error) {
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFoundf("plugin %q is not registered (volctl plugin register)", pluginID)
		}
		return nil, err
	}
	c, err := e.connectPlugin(ctx, p, true)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", pluginID, err)
	}
	return c, nil
}

// errNoSocket is a plugin's socket file missing at connect (connectPlugin).
var errNoSocket = errors.New("does not exist")

// unreachableSocket says why identify found no socket at path: none there (errNoSocket: the
// plugin may be starting), or one this user cannot reach (a directory it may not search, as
// root's private state dir to any other user), which no wait for the plugin changes.
func unreachableSocket(path string) error {
	_, err := os.Stat(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("socket %s %w (is the plugin running?)", spec.QuoteName(path), errNoSocket)
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // the path is named already
	}
	return fmt.Errorf("socket %s: %w (volctl runs as uid %d: run it as the plugin's user or root, or check the socket's path and the permissions of its directories)",
		spec.QuoteName(path), err, os.Geteuid())
}

// socketWritable refuses a socket this process may not connect to: connect(2) needs write
// permission on the socket file, which a plugin that made it 0600 as another user (volctl's own
// does, whatever the umask) does not give. Taken for a plugin not answering yet (UNAVAILABLE),
// `plugin register` waited its whole --wait for a plugin serving all along, then said
// "connect: permission denied", without the uid or what to do
// (TestRegisterOfRootsHostpathSocketByAnotherUserFailsAtOnceNamingTheUser). One faccessat(2),
// by the effective IDs, as connect judges; root may connect to any.
func socketWritable(path string) error {
	err := unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS)
	if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
		return nil // reachable, or gone since: the dial says what
	}
	return fmt.Errorf("socket %s: %w (volctl runs as uid %d, and connecting needs write permission on the socket, which its plugin gave only to its own user: "+
		"run volctl as the plugin's user or root)", spec.QuoteName(path), err, os.Geteuid())
}

// notASocket refuses a socket path that holds another kind of file (a directory, a regular
// file, a named pipe), naming it: no plugin that starts will listen there while it is (volctl's
// own refuses to replace it, as most do), so it is no plugin starting, and `plugin register`'s
// --wait for one to answer does not wait on it (PluginNotAnswering: before, it waited its 5 s and
// then said "is not a socket"; TestRegisterOfAPathThatIsNotASocketFailsAtOnce).
// identify found it so (socketID.notSocket), and this looks again only to name what it is.
func notASocket(path string) error {
	kind := "not a socket"
	if fi, err := os.Stat(path); err == nil && fi.Mode().Type() != fs.ModeSocket {
		kind = csi.FileKind(fi) + ", not a socket"
	}
	return fmt.Errorf("socket %s is %s: check the plugin's socket path (the plugin listens on a socket file it makes there)", spec.QuoteName(path), kind)
}

// PluginNotAnswering says err is a plugin that did not answer at all: its socket missing, or
// nothing listening on it (UNAVAILABLE, csi.IsUnreachable). So reads a plugin starting or
// restarting, which may answer in a moment; not one that answered (an UNAVAILABLE of its own
// included), nor one that hung (DEADLINE_EXCEEDED).
func PluginNotAnswering(err error) bool { return errors.Is(err, errNoSocket) || csi.IsUnreachable(err) }

// connectPlugin is connect for a plugin row already read. Its errors do not name the plugin:
// callers say which plugin and what they were doing. The caller gives the connection back with
// done when it is finished with it.
func (e *Engine) connectPlugin(ctx context.Context, p store.Plugin, record bool) (*conn, error) {
	ids := identify(pluginSockets(p)...)
	e.mu.Lock()
	c := e.conns[p.ID]
	// One whose listener exec()ed since (servers.checkPeer) is fingerprinted again: its stored
	// fingerprint names the image before (sameListeners).
	if c != nil && !p.UpdatedAt.IsZero() && sameSockets(c.sockets, ids) && c.rowAt.Equal(p.UpdatedAt) && !c.servers.execdSince() {
		c.users++
		e.mu.Unlock()
		return c, nil
	}
	if c != nil {
		e.retire(c) // another goroutine may have an RPC in flight on it
	}
	e.mu.Unlock()
	if c != nil && e.noteAcceptedElsewhere(ctx, c.plugin.ID, c.servers) {
		// A refusal on c found its socket accepted by another process (servers.checkAccepted),
		// recorded now: the row read before says otherwise.
		if p, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(p.ID) }); err == nil {
			return e.connectPlugin(ctx, p, record)
		}
	}

	for _, s := range ids {
		if s.inode == 0 {
			return nil, unreachableSocket(s.path)
		}
		if s.notSocket {
			return nil, notASocket(s.path)
		}
		if err := socketWritable(s.path); err != nil {
			return nil, err
		}
	}
	srv := serversOf(p)
	client, err := dialCSI(p, srv, e.cfg.Timeouts, e.log, e.secretValues, e.cfg.ObserveRPC)
	if err != nil {
		return nil, err
	}
	var fp *csi.Fingerprint
	entries := storedEntries(p)
	fresh := false // fingerprinted through new socket files: the other plugins on them are checked
	if stored := reusableFingerprint(p, ids); stored != nil && sameListeners(p.Fingerprint.Sockets, ids) && acceptsRecorded(p.Fingerprint.Sockets) {
		// The plugin instance this process (or an earlier one) fingerprinted is still the one
		// on the sockets: its fingerprint stands, passed checkIdentity when it was taken, and
		// is in the store already. Dialling sent nothing: no RPC, no commit.
		//
		// Unless another process than the listener accepted the connection it was fingerprinted
		// through (systemd's socket activation, a supervisor that listens and starts the plugin
		// on the descriptor, a launcher that handed the socket on and exited): the plugin may
		// have been started anew behind the same listener, with other flags, or exec'd another
		// driver, and nothing the socket or its listener shows tells it. This process's first
		// connection fingerprints it then (five short RPCs), and reuses the stored fingerprint
		// only when it reads the same; otherwise what changed is recorded below, with its event,
		// and another driver refused (checkIdentity).
		if acceptedElsewhere(p.Fingerprint.Sockets) {
			if fp, err = e.fingerprintNow(ctx, p, client); err != nil {
				_ = client.Close()
				e.noteAcceptedElsewhere(ctx, p.ID, srv)
				return nil, err
			}
		}
		if fp == nil || sameFingerprint(p.Fingerprint, fp) {
			c = &conn{plugin: p, client: client, fp: stored, sockets: ids, entries: entries, servers: srv, timeouts: pluginTimeouts(p, e.cfg.Timeouts), rowAt: p.UpdatedAt}
			c.fpRecorded.Store(true)
			return e.cache(c), nil
		}
	} else {
		entries, fresh = entriesOf(ids), true
		if err := e.anotherPluginsSocket(ctx, p, ids); err != nil {
			_ = client.Close()
			return nil, err
		}
		if err := checkServers(ids, srv); err != nil {
			_ = client.Close()
			return nil, err
		}
		if fp, err = e.fingerprintNow(ctx, p, client); err != nil {
			_ = client.Close()
			e.noteAcceptedElsewhere(ctx, p.ID, srv)
			return nil, err
		}
	}
	if err := checkIdentity(p, fp, ids); err != nil {
		_ = client.Close()
		return nil, err
	}
	c = &conn{plugin: p, client: client, fp: fp, sockets: ids, entries: entries, servers: srv, timeouts: pluginTimeouts(p, e.cfg.Timeouts), rowAt: p.UpdatedAt}
	if record {
		// The stored fingerprint is what status and the dashboard show, and what the next
		// process reuses while the socket files are the ones recorded with it. It is committed
		// as progress: a power loss that undoes it leaves the previous record, whose socket
		// identity (from before the loss: the plugin's socket is made anew after a reboot)
		// makes the next connection fingerprint again; and every command that connects to a
		// plugin is spared a wait for the disk.
		// Only over the row this connection was made from: one registered again meanwhile by
		// another process, for another driver or on other sockets, keeps its own fingerprint
		// (which pins its driver), and this connection, to a driver the ID no longer names, is
		// refused (pluginStillRegistered; TestVolumeCreateOvertakenByPluginReregisteredForAnotherDriver).
		exposed := exposedSockets(c) // a restart may have left its sockets open to other users
		// A plugin reached anew whose row records it other than healthy (its socket was gone
		// when it was last probed: it restarted since) is probed once, and what the probe finds
		// is recorded with the fingerprint. Otherwise a command that went through the plugin
		// left `volume ls` and `volume status` saying its volumes cannot take claims, the
		// plugin's socket missing, until something else probed it
		// (TestPluginReachedAnewIsProbedWhenItsRecordSaysUnhealthy). A plugin recorded healthy
		// is not probed here: this path is every process's first connection after a restart.
		probed := e.probeReached(ctx, c)
		var all, aliases []store.Plugin
		if err := e.store.UpdateProgress(ctx, func(tx *store.Tx) error {
			if err := pluginStillRegistered(tx, c); err != nil {
				return err
			}
			if probed != nil {
				cur, err := tx.Plugins().Get(p.ID)
				if err != nil {
					return err
				}
				if err := tx.Plugins().SetHealth(p.ID, *probed); err != nil {
					return err
				}
				if err := recordHealth(tx, p.ID, cur.Health, *probed, e.cfg.Now()); err != nil {
					return err
				}
			}
			if fresh {
				var err error
				if all, err = tx.Plugins().List(); err != nil {
					return err
				}
				aliases = aliasesOf(p, ids, all)
				if err := moveTogether(tx, p, all); err != nil {
					return err
				}
			}
			if err := e.noteCapabilityChange(tx, p.ID, fp); err != nil {
				return err
			}
			for _, msg := range exposed {
				if err := tx.Events().Append(&store.Event{Kind: "plugin-exposed", PluginID: p.ID, Message: msg}); err != nil {
					return err
				}
			}
			return tx.Plugins().SetFingerprint(p.ID, c.storedFingerprint(e.cfg.Now()))
		}); err != nil {
			_ = client.Close()
			return nil, err
		}
		for _, msg := range exposed {
			e.log.Warn(msg)
		}
		c.fpRecorded.Store(true)
		e.forgetAliases(ctx, p, aliases, all, true)
	} else if fresh {
		e.checkAliases(ctx, p, ids, false) // a probe: it does not wait for another process's write lock
	}
	return e.cache(c), nil
}

// probeReached probes a plugin connectPlugin has just fingerprinted on c when the row it was
// read from records it other than healthy; nil when that row says healthy, when the caller
// probes it next anyway (probeFollows: a claim's probe, which records what it finds), or
// when ctx ended during the probe (an interruption is no reading of the plugin).
func (e *Engine) probeReached(ctx context.Context, c *conn) *store.Health {
	if p := c.plugin.Health; probeFollows(ctx) || recordedHealth(p.Healthy, p.Ready, p.ProbedAt) == PluginHealthy {
		return nil
	}
	h, _ := e.probeErr(ctx, c)
	if ctx.Err() != nil {
		return nil
	}
	return &h
}

// probeFollowsKey marks a context whose connectPlugin is followed by a Probe of the caller's.
type probeFollowsKey struct{}

// withProbeFollowing is ctx for a connectPlugin whose caller probes the plugin next.
func withProbeFollowing(ctx context.Context) context.Context {
	return context.WithValue(ctx, probeFollowsKey{}, true)
}

// probeFollows says the caller of connectPlugin probes the plugin next (withProbeFollowing).
func probeFollows(ctx context.Context) bool { return ctx.Value(probeFollowsKey{}) != nil }

// fingerprintNow asks the plugin on client its fingerprint (identity first); in a pass, not of
// a plugin that did not answer earlier in it (hungPlugins).
func (e *Engine) fingerprintNow(ctx context.Context, p store.Plugin, client Plugin) (*csi.Fingerprint, error) {
	hung := hungPluginsOf(ctx)
	if err := hung.refuse(p, csi.RPCGetPluginInfo, ""); err != nil {
		return nil, err
	}
	fp, err := client.Fingerprint(ctx)
	if err != nil {
		var ce *csi.Error
		if errors.As(err, &ce) {
			hung.note(p, ce.RPC, "", err) // an identity's hang is the plugin's, whatever the volume
		}
		// A split plugin's half answered by another driver is refused as a monolith's socket
		// is (checkIdentity): before, found at the connection rather than mid-operation
		// (otherInstanceOn), it was a bare failure naming neither the registered driver nor
		// the way out (TestSplitNodeHalfReplacedBeforeTheClaimIsAConflictWithAdvice).
		var halves *csi.HalvesDiffer
		if errors.As(err, &halves) && p.Fingerprint.Provider != "" {
			socket, now := halves.NodeSocket, halves.Node
			if halves.Controller != p.Fingerprint.Provider {
				socket, now = halves.ControllerSocket, halves.Controller
			}
			return nil, servedByAnother(p, socket, now)
		}
		return nil, lostNodeService(p, err)
	}
	return fp, nil
}

// lostNodeService words a fingerprint that failed because the plugin, fingerprinted before with
// a node service (a node ID recorded), answers the node service's identity calls with
// UNIMPLEMENTED. NodeGetCapabilities UNIMPLEMENTED: it came back from a restart without the
// service (started as a controller only, or another build). NodeGetInfo UNIMPLEMENTED, asked
// only once NodeGetCapabilities answered: the node service is there, but not the call the CSI
// spec requires of it, which alone gives the node ID (a proxy, a broken build); saying it lost
// its node service would send the user looking for the wrong thing. Nothing is sent to it, as
// for any failed fingerprint; the error says what changed and what to do, where it said only
// "the plugin does not implement NodeGetCapabilities; check its capabilities", and the claims
// it holds wait (TestPluginBackWithoutItsNodeServiceIsToldSo,
// TestPluginWhoseNodeGetInfoIsUnimplementedIsNotToldItLostItsNodeService).
func lostNodeService(p store.Plugin, err error) error {
	var ce *csi.Error
	if p.Fingerprint.NodeID == "" || !errors.As(err, &ce) || !csi.IsUnimplemented(err) {
		return err
	}
	had := fmt.Sprintf("it served one as node %q, with node capabilities [%s], when fingerprinted at %s, and is registered as %s",
		p.Fingerprint.NodeID, strings.Join(p.Fingerprint.NodeCaps, " "), p.Fingerprint.At.UTC().Format(time.RFC3339), p.Type)
	const stuck = "no node RPC can be sent, so claims of its volumes on this host can be neither published nor released"
	switch ce.RPC {
	case csi.RPCNodeGetCapabilities:
		return fmt.Errorf("%w: plugin %q came back without its node service (%s); %s: start the plugin with its node service again, then run `volctl reconcile`",
			err, p.ID, had, stuck)
	case csi.RPCNodeGetInfo:
		return fmt.Errorf("%w: plugin %q's node service answers (NodeGetCapabilities did) but NodeGetInfo, which the CSI spec requires of every node service, does not, "+
			"so volctl cannot learn its node ID (%s); %s: fix the plugin (its build, or whatever proxies its socket) so that NodeGetInfo answers, then run `volctl reconcile`",
			err, p.ID, had, stuck)
	}
	return err
}

// sameFingerprint says whether fp, a plugin's fingerprint taken now, is the one stored: the
// same driver, version, capabilities, node ID and node limits.
func sameFingerprint(stored store.Fingerprint, fp *csi.Fingerprint) bool {
	now := fingerprintToStore(fp, time.Time{})
	return stored.Provider == now.Provider && stored.Version == now.Version && stored.NodeID == now.NodeID &&
		stored.MaxVolumes == now.MaxVolumes && maps.Equal(stored.Topology, now.Topology) &&
		slices.Equal(stored.PluginCaps, now.PluginCaps) && slices.Equal(stored.ControllerCaps, now.ControllerCaps) &&
		slices.Equal(stored.NodeCaps, now.NodeCaps)
}

// cache keeps c as the plugin's connection and returns the one to use, counted as used (done):
// another goroutine's, made meanwhile to the same plugin instance and maybe in use already
// (reconcile restores volumes in parallel), wins, and c is closed instead of it.
func (e *Engine) cache(c *conn) *conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.conns[c.plugin.ID]; old != nil {
		if !c.rowAt.IsZero() && sameSockets(old.sockets, c.sockets) && old.rowAt.Equal(c.rowAt) {
			_ = c.client.Close() // nobody has used it
			old.users++
			return old
		}
		e.retire(old)
	}
	e.conns[c.plugin.ID] = c
	c.users++
	return c
}

// storedFingerprint is c's fingerprint as the store keeps it, with the identity of the
// socket files it was taken through.
func (c *conn) storedFingerprint(now time.Time) store.Fingerprint {
	fp := fingerprintToStore(c.fp, now)
	for i, s := range c.sockets {
		id := store.SocketIdentity{Path: s.path, Dev: s.dev, Inode: s.inode, CtimeNs: s.ctime}
		if i < len(c.entries) {
			id.Entry, id.DirDev, id.DirInode = c.entries[i].resolved, c.entries[i].dev, c.entries[i].inode
		}
		id.Boot = bootID()
		id.ServerUID, id.ServerKnown = c.servers.uidOf(s.path)
		id.Listener = c.servers.listenerOf(s.path)
		id.Accepts = c.servers.acceptsOf(s.path)
		fp.Sockets = append(fp.Sockets, id)
	}
	return fp
}

// reusableFingerprint returns the plugin's stored fingerprint when it was taken through the
// very socket files on its paths now (same device, inode and change time: a plugin that
// restarts makes a new file, which a stat tells apart without an RPC), else nil and the
// caller fingerprints the plugin again — and checks its driver against the registered one.
// Every socket must match, so split sockets cannot pair a new instance with an old one.
func reusableFingerprint(p store.Plugin, ids []socketID) *csi.Fingerprint {
	sf := p.Fingerprint
	if sf.At.IsZero() || sf.Provider == "" || len(sf.Sockets) != len(ids) || sf.MaxVolumes < 0 ||
		csi.CheckNodeTopology(sf.Provider, sf.Topology) != nil {
		return nil // (a negative limit, a topology past its bounds, recorded by an older volctl: fingerprinting refuses them)
	}
	for i, s := range sf.Sockets {
		if ids[i].inode == 0 || (socketID{path: s.Path, dev: s.Dev, inode: s.Inode, ctime: s.CtimeNs}) != ids[i] {
			return nil
		}
		// Taken in another boot (or by a volctl that did not record it): the file's identity
		// and its listener's pid and start time may read the same for another instance
		// (TestFingerprintOfAnotherBootIsNotReused).
		if s.Boot != bootID() {
			return nil
		}
	}
	return recordedFingerprint(p)
}

// recordedFingerprint is plugin p's stored fingerprint as a connection has it (which services
// it fingerprinted, their capabilities), as of the last time it was taken: what reusableFingerprint
// hands a connection, and what status reads to say what a plugin's state means (nil: never
// fingerprinted).
func recordedFingerprint(p store.Plugin) *csi.Fingerprint {
	sf := p.Fingerprint
	if sf.At.IsZero() {
		return nil
	}
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	fp := &csi.Fingerprint{Provider: sf.Provider, Version: sf.Version, NodeID: sf.NodeID, MaxVolumes: sf.MaxVolumes}
	fp.Capabilities.Plugin = csi.ParsePluginCapabilities(sf.PluginCaps)
	// As csi.Client.Fingerprint decides which services it fingerprinted.
	if fp.Capabilities.Plugin.ControllerService && cfg.ControllerSocket != "" {
		fp.Capabilities.Controller, fp.Controller = csi.ParseControllerCapabilities(sf.ControllerCaps), true
	}
	if cfg.NodeSocket != "" {
		fp.Capabilities.Node, fp.Node = csi.ParseNodeCapabilities(sf.NodeCaps), true
		if sf.Topology != nil {
			fp.AccessibleTopology = &spec.Topology{Segments: sf.Topology}
		}
	}
	return fp
}

// bootID is the kernel's boot ID, read once per process (/proc/sys/kernel/random/boot_id), ""
// where it cannot be read. What identifies a plugin instance on a socket (the file's device,
// inode and change time; its listener's pid, start time and program file) is the boot's own: a
// socket made again at its path after a reboot may have the same inode (a tmpfs numbers its
// inodes from boot), and its change time too where the clock starts where it started (no
// battery), its listener the same pid and start time (ticks since boot) in a boot that runs as
// the last did. A fingerprint is reused only within the boot it was taken in
// (reusableFingerprint).
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// checkIdentity refuses a plugin that is not the driver registered under p's ID: another
// driver now answering on its socket would take the volume RPCs meant for the registered one
// and answer them about other storage (a NOT_FOUND from it would "delete" a volume whose
// storage is left untracked). The driver's name from GetPluginInfo is pinned by the stored
// fingerprint: recorded at registration, or at the first connection for a plugin registered
// before it ran, and never overwritten by a connection whose name differs (only a new
// registration changes it, see RegisterPlugin). Its advice for a driver changed on purpose was
// to deregister the plugin and register it anew, which neither works while volumes use it
// (checkReregistration): the volumes are deregistered first (TestNowServedByAdviceWorks).
func checkIdentity(p store.Plugin, fp *csi.Fingerprint, sockets []socketID) error {
	if p.Fingerprint.Provider == "" || fp.Provider == p.Fingerprint.Provider {
		return nil
	}
	return servedByAnother(p, sockets[0].path, fp.Provider)
}

// anotherDriverOn is the first of names (each socket's driver) that is not driver, the one
// registered: its socket and name.
func anotherDriverOn(driver string, names []csi.SocketDriver) (socket, name string, ok bool) {
	for _, n := range names {
		if n.Name != driver {
			return n.Socket, n.Name, true
		}
	}
	return "", "", false
}

// servedByAnother is checkIdentity's refusal of plugin p, whose socket is now served by driver
// now.
func servedByAnother(p store.Plugin, socket, now string) error {
	return conflictf("socket %s now served by %q, registered as %q: no volume RPC goes to it "+
		"(start %q on that socket again; if the driver changed on purpose, the storage of the volumes that use plugin %q is the old driver's: "+
		"`volctl volume deregister` each of them, then `volctl plugin register` it again)",
		spec.QuoteName(socket), now, p.Fingerprint.Provider, p.Fingerprint.Provider, p.ID)
}

// declaresController and declaresNode say whether a plugin of type t is declared with that half.
func declaresController(t spec.PluginType) bool {
	return t == spec.PluginController || t == spec.PluginMonolith
}
func declaresNode(t spec.PluginType) bool { return t == spec.PluginNode || t == spec.PluginMonolith }

// tookController says a fingerprint was taken with the plugin's controller half: it has its
// capabilities, or the plugin then served no controller (none to take). A plugin advertising
// CONTROLLER_SERVICE fingerprinted without any was reached through its node half alone (or
// its controller has none: nothing to compare either way).
func tookController(fp store.Fingerprint) bool {
	return len(fp.ControllerCaps) > 0 || !slices.Contains(fp.PluginCaps, "CONTROLLER_SERVICE")
}

// tookNode says a fingerprint was taken with the plugin's node half: it has a node ID (which
// NodeGetInfo gives every node) or node capabilities.
func tookNode(fp store.Fingerprint) bool { return fp.NodeID != "" || len(fp.NodeCaps) > 0 }

// capsChange returns the capabilities (plugin, controller and node ones) was has and now has
// not, and those now has and was has not.
func capsChange(was, now store.Fingerprint) (lost, gained []string) {
	for _, set := range [][2][]string{
		{was.PluginCaps, now.PluginCaps},
		{was.ControllerCaps, now.ControllerCaps},
		{was.NodeCaps, now.NodeCaps},
	} {
		lost = append(lost, missingFrom(set[0], set[1])...)
		gained = append(gained, missingFrom(set[1], set[0])...)
	}
	return lost, gained
}

// declaredCapsChange is capsChange of the halves a plugin declared as typ has and the recorded
// fingerprint was taken with (noteCapabilityChange says why); nodeCompared says the node's
// half was compared.
func declaredCapsChange(typ spec.PluginType, was, now store.Fingerprint) (lost, gained []string, nodeCompared bool) {
	if !declaresController(typ) || !tookController(was) {
		was.ControllerCaps, now.ControllerCaps = nil, nil
	}
	nodeCompared = declaresNode(typ) && tookNode(was)
	if !nodeCompared {
		was.NodeCaps, now.NodeCaps = nil, nil
	}
	lost, gained = capsChange(was, now)
	return lost, gained, nodeCompared
}

// noteCapabilityChange appends an event when a plugin comes back (a restart: a new socket
// file) with other capabilities than it was last fingerprinted with, naming what it lost and
// gained. When it lost STAGE_UNSTAGE_VOLUME or PUBLISH_UNPUBLISH_VOLUME while volumes are
// staged or attached through it, those volumes are named too: their stagings and attachments
// cannot be undone through it any more, which their releases check against the mount table
// (checkUnstageable) and report. A plugin that comes back with another node ID gets the event
// too, naming the volumes attached to the old node: its claims' releases detach that node, and
// no claim or restore stages them here with its attachment (attachedElsewhere). So does one
// that comes back with other node limits (nodeLimitsNews): another accessible topology or
// max_volumes_per_node, naming the volumes on the node they rule out; and one that comes back
// as another version of its driver (GetPluginInfo's vendor_version), naming both.
func (e *Engine) noteCapabilityChange(tx *store.Tx, pluginID string, fp *csi.Fingerprint) error {
	cur, err := tx.Plugins().Get(pluginID)
	if err != nil || cur.Fingerprint.At.IsZero() {
		return err
	}
	now := fingerprintToStore(fp, time.Time{})
	nowWhole := now
	// A half of the plugin that the declaration (cur's, as registered now) leaves out, or that
	// the recorded fingerprint was taken without, is not compared: a monolith registered again
	// as its node half alone lost none of its controller's capabilities, the process still
	// has them, and registered again as the monolith it gained none. Both were said, the first
	// naming the volumes attached through it as no longer detachable
	// (TestNodeHalfRegistrationIsNotACapabilityLoss,
	// TestMonolithDeclaredAgainAfterItsNodeHalfIsNoCapabilityGain). A declared half the plugin
	// stopped serving (CONTROLLER_SERVICE dropped) is compared: that loss is real
	// (TestControllerServiceDroppedStillNamesTheAttachedVolumes).
	lost, gained, nodeCompared := declaredCapsChange(cur.Type, cur.Fingerprint, now)
	oldNode := cur.Fingerprint.NodeID
	movedNode := oldNode != "" && now.NodeID != "" && now.NodeID != oldNode
	// The node's limits likewise: a registration of the controller half alone, or back from
	// it, said the node's topology and max_volumes_per_node changed
	// (TestHalfRegistrationsAreNoNodeLimitChange).
	var limits string
	if nodeCompared {
		var err error
		if limits, err = nodeLimitsNews(tx, pluginID, cur.Fingerprint, now); err != nil {
			return err
		}
	}
	// Another version of the driver (an upgrade, a downgrade, another build): the plugin's
	// word, quoted and cut as the fingerprint cuts it (a version recorded before that bound may
	// be longer).
	// Compared only between fingerprints of the same halves: a split plugin's version names
	// the node half's too where it differs (csi.Fingerprint.Version), which a registration of
	// one half alone does not read.
	var version string
	if cur.Fingerprint.Version != now.Version && tookController(cur.Fingerprint) == tookController(nowWhole) && tookNode(cur.Fingerprint) == tookNode(nowWhole) {
		version = fmt.Sprintf("; its vendor_version is now %q, was %q",
			spec.Cut(now.Version, csi.MaxVendorVersion), spec.Cut(cur.Fingerprint.Version, csi.MaxVendorVersion))
	}
	if len(lost) == 0 && len(gained) == 0 && !movedNode && limits == "" && version == "" {
		return nil
	}
	msg := fmt.Sprintf("plugin %q", pluginID) + store.CapabilityChangeWords
	if len(lost) == 0 && len(gained) == 0 {
		msg = fmt.Sprintf("plugin %q came back", pluginID)
	}
	if len(lost) > 0 {
		msg += capsLostMark + strings.Join(lost, ", ")
	}
	if len(gained) > 0 {
		msg += capsGainedMark + strings.Join(gained, ", ")
	}
	msg += version
	if movedNode {
		msg += fmt.Sprintf("; its node ID is now node %q, was node %q", now.NodeID, oldNode)
	}
	lostStage, lostAttach := slices.Contains(lost, "STAGE_UNSTAGE_VOLUME"), slices.Contains(lost, "PUBLISH_UNPUBLISH_VOLUME")
	if lostStage || lostAttach || movedNode {
		stagings, err := tx.Stagings().List()
		if err != nil {
			return err
		}
		var affected []string
		// The volumes recorded attached to a node other than the one the plugin is now, by
		// node: an attachment to a node it was two restarts ago too. Only those of the node it
		// was just before were named, and the event of a second change said nothing of a
		// volume still attached to the first (TestSecondNodeIDChangeStillNamesTheVolumeAttachedElsewhere).
		elsewhere := map[string][]string{}
		for _, st := range stagings {
			if st.PluginID != pluginID {
				continue
			}
			if (lostStage && st.StagingPath != "") || (lostAttach && st.ControllerPublished) {
				affected = append(affected, fmt.Sprintf("%q", st.VolumeID))
			}
			if node := cmp.Or(st.NodeID, oldNode); movedNode && !lostAttach && st.ControllerPublished && node != now.NodeID {
				elsewhere[node] = append(elsewhere[node], fmt.Sprintf("%q", st.VolumeID))
			}
		}
		if len(affected) > 0 {
			msg += fmt.Sprintf("; %d volume(s) staged or attached through it cannot be unstaged or detached through it now: %s "+
				"(their releases check the mount table; `volctl reconcile` reports a staging still mounted)", len(affected), strings.Join(affected, ", "))
		}
		for _, node := range slices.Sorted(maps.Keys(elsewhere)) {
			vols := elsewhere[node]
			msg += fmt.Sprintf("; %d volume(s) attached to node %q: %s (the last release of each detaches that node; a claim or restore "+
				"that would stage one with that node's attachment here is refused: release its claims, then claim it again to attach node %q)",
				len(vols), node, strings.Join(vols, ", "), now.NodeID)
		}
	}
	msg += limits
	e.log.Warn(msg)
	ev := &store.Event{Kind: "plugin-capabilities", PluginID: pluginID, Message: msg}
	if err := tx.Events().Append(ev); err != nil {
		return err
	}
	if len(lost) == 0 && len(gained) == 0 {
		return nil
	}
	// Kept with the plugin for `plugin status`, which read it back from this event: the log
	// drops it once store.DefaultEventLimit events follow, while the plugin still has what it
	// has now (TestCapabilityChangeOutlivesTheEventLog).
	return tx.Plugins().SetCapabilityChange(pluginID, store.CapabilityChange{At: ev.At, Lost: nonNil(lost), Gained: nonNil(gained)})
}

// What a plugin-capabilities event says the plugin lost and gained (noteCapabilityChange),
// which migration 0019 reads back (store.CapabilityChangeOf) for the plugin's record.
const (
	capsLostMark   = store.CapabilitiesLostMark
	capsGainedMark = store.CapabilitiesGainedMark
)

// capabilityEventsRead is how many plugin-capabilities events of each plugin `plugin status`
// read for its last change of capabilities before the plugin's record kept it (migration 0019
// reads them once so): a plugin restarted often with another version alone records one each time.
const capabilityEventsRead = store.CapabilityEventsRead

// nodeLimitsNews words, for the plugin-capabilities event, the node limits NodeGetInfo states
// otherwise than it did before the restart (was, now): another accessible topology, naming the
// plugin's volumes on the node it rules out, and another max_volumes_per_node, naming the
// volumes on the node (counted as admission counts them: volumesOnNode) when they reach it.
// Their claims stand, mounted as they are; admission applies the new limits to what comes next
// (checkNode), so the user learns here, not from a later refusal, that a volume released here
// cannot be claimed here again. "" when neither changed.
func nodeLimitsNews(tx *store.Tx, pluginID string, was, now store.Fingerprint) (string, error) {
	var msg string
	if !maps.Equal(was.Topology, now.Topology) {
		msg += fmt.Sprintf("; its node's accessible topology is now %s, was %s", segmentsOrNone(now.Topology), segmentsOrNone(was.Topology))
		ids, err := tx.Volumes().OnNode(pluginID)
		if err != nil {
			return "", err
		}
		var off []string
		for _, id := range ids {
			v, err := tx.Volumes().Get(id)
			if err != nil {
				return "", err
			}
			if topos := volumeTopologies(v); len(topos) > 0 && !topologyMatch(now.Topology, topos) {
				off = append(off, id)
			}
		}
		if len(off) > 0 {
			msg += fmt.Sprintf("; %d volume(s) on the node are accessible only from other topologies: %s (their claims stand, mounted as they are; "+
				"no other claim of one is admitted here, nor a restore of one mounts it anew, while the plugin states this topology)", len(off), describeIDs(off))
		}
	}
	if was.MaxVolumes != now.MaxVolumes {
		msg += fmt.Sprintf("; its max_volumes_per_node is now %s, was %s", maxVolumesWords(now.MaxVolumes), maxVolumesWords(was.MaxVolumes))
		if now.MaxVolumes > 0 {
			on, err := volumesOnNode(tx, pluginID)
			if err != nil {
				return "", err
			}
			if int64(len(on)) >= now.MaxVolumes {
				msg += fmt.Sprintf("; node %q has %d volume(s), at or past it: %s (their claims stand; no other volume is claimed here "+
					"until releases bring them under it)", now.NodeID, len(on), describeIDs(on))
			}
		}
	}
	return msg, nil
}

func segmentsOrNone(s map[string]string) string {
	if len(s) == 0 {
		return "none"
	}
	return formatSegments(s)
}

func maxVolumesWords(n int64) string {
	if n == 0 {
		return "0 (no limit)"
	}
	return strconv.FormatInt(n, 10)
}

// missingFrom returns the names in a that b lacks, in a's order.
func missingFrom(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// forget drops a cached connection, e.g. after the plugin stopped answering; it is closed once
// the operations using it are done.
func (e *Engine) forget(pluginID string) {
	e.mu.Lock()
	if c := e.conns[pluginID]; c != nil {
		e.retire(c)
	}
	e.mu.Unlock()
}

func fingerprintToStore(fp *csi.Fingerprint, now time.Time) store.Fingerprint {
	out := store.Fingerprint{
		Provider:       fp.Provider,
		Version:        fp.Version,
		PluginCaps:     fp.Capabilities.Plugin.Names(),
		ControllerCaps: fp.Capabilities.Controller.Names(),
		NodeCaps:       fp.Capabilities.Node.Names(),
		NodeID:         fp.NodeID,
		MaxVolumes:     fp.MaxVolumes,
		At:             now,
	}
	if fp.AccessibleTopology != nil {
		out.Topology = fp.AccessibleTopology.Segments
	}
	return out
}

// controllerPublishes reports whether the plugin wants ControllerPublishVolume.
func (c *conn) controllerPublishes() bool {
	return c.fp.Controller && c.fp.Capabilities.Controller.PublishUnpublishVolume
}

// stages reports whether the plugin wants NodeStageVolume.
func (c *conn) stages() bool {
	return c.fp.Node && c.fp.Capabilities.Node.StageUnstageVolume
}

// retry runs an RPC of c's plugin with the engine's retry policy: retryable failures are
// retried with jittered backoff; anything else, or the last failure, is returned.
//
// An attempt that ran into our own per-RPC timeout is not retried either, though the csi
// client classes it as a retryable DEADLINE_EXCEEDED like any other. A plugin that did not answer
// within the whole timeout is hung or slow beyond what a command should wait for, and may still
// be working on the request: another attempt would only make the command wait the timeout over
// again, and send the plugin the same request on top of the one it may still be running. The
// failure goes back at once, and the caller leaves the operation for reconcile as it does when
// the retries run out. A DEADLINE_EXCEEDED the plugin returned itself, before our timeout (its
// backend timed out), is retried like any other retryable code.
//
// So is one that fails slowly, but only while the time the attempts took, and one more as long
// as the last, fit within the RPC's timeout (the waits between them aside, the policy's own): a
// plugin answering a retryable code just before the timeout (its backend given the deadline
// gRPC passed on, which runs out a moment before volctl's) would otherwise cost a timeout per
// attempt, minutes per RPC where a command retries within seconds and the agent's pass waits
// for every volume behind it. Its failure goes back saying why it was not tried again
// (slowFailure), the operation left for reconcile; a plugin failing at once is retried as before.
func (e *Engine) retry(ctx context.Context, c *conn, rpc string, call func(context.Context) error) error {
	return e.retryLooking(ctx, c, rpc, nil, call)
}

// retryLooking is retry for an RPC whose failure may follow the plugin's act (UNAVAILABLE: a
// connection reset once the plugin mounted): before each attempt after the first, look (when
// given) looks at what the last one may have left. done means the last attempt did what was
// asked (it is not sent again: retry answers OK); an error stops the retries and is returned as
// it is. A plugin that mounts without looking first, asked again, stacks a second mount, which
// its undo (unmounting once) leaves behind, and the release fails on it at every try
// (TestClaimWhosePublishMountedThenAnsweredUnavailableStacksNoSecondMount).
func (e *Engine) retryLooking(ctx context.Context, c *conn, rpc string, look func(context.Context) (done bool, err error), call func(context.Context) error) error {
	timeout := c.timeouts.For(rpc)
	var err error
	var spent time.Duration
	waits := e.cfg.Retry.backoff()
	// The first attempt's failure, and whether every attempt's was the same: its code, and its
	// words but for the IDs and times in them (failureWords: a request ID, a timestamp).
	var first string
	var same bool
	for attempt := 1; ; attempt++ {
		// The engine's clock (monotonic, as time.Now's is: a step of the wall clock changes
		// nothing), which a test can drive: the decision is then the time it measured, not the
		// machine's load.
		if attempt > 1 && look != nil {
			done, lerr := look(ctx)
			if lerr != nil {
				return lerr
			}
			if done {
				return nil
			}
		}
		began := e.cfg.Now()
		err = e.attempt(ctx, c, rpc, call)
		last := e.cfg.Now().Sub(began)
		spent += last
		if err == nil || !csi.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		if moved := (*movedPlugin)(nil); errors.As(err, &moved) {
			return err
		}
		if csi.IsTimeout(err) {
			e.log.Debug("not retrying an RPC that ran into its timeout", "plugin", c.plugin.ID, "rpc", rpc, "attempt", attempt, "timeout", timeout, "err", err)
			return err
		}
		if words := csi.CodeOf(err).String() + ": " + failureWords(err.Error()); attempt == 1 {
			first, same = words, true
		} else if words != first {
			same = false
		}
		if attempt >= e.cfg.Retry.Attempts {
			if attempt == 1 {
				return err
			}
			return &retriedOut{err: err, attempts: attempt, same: same}
		}
		if spent+last > timeout {
			e.log.Debug("not retrying an RPC failing slowly", "plugin", c.plugin.ID, "rpc", rpc, "attempt", attempt, "last", last, "spent", spent, "timeout", timeout, "err", err)
			slow := &slowFailure{err: err, plugin: c.plugin.ID, last: last, spent: spent, timeout: timeout}
			hungPluginsOf(ctx).note(c.plugin, rpc, passVolume(ctx), slow) // as long as a timeout, to a pass
			return slow
		}
		wait := backoff.Jitter(waits.Next())
		csi.ReportProgress(ctx, fmt.Sprintf("%s failed with %s, retrying (attempt %d of %d)", rpc, csi.CodeOf(err), attempt+1, e.cfg.Retry.Attempts))
		e.log.Debug("retrying after a retryable failure", "plugin", c.plugin.ID, "rpc", rpc, "attempt", attempt, "wait", wait, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// slowFailure is a retryable failure retry did not try again: the plugin took so long to answer
// that another attempt as long would run past the RPC's timeout. It is err (its class, code and
// RPC) saying so.
type slowFailure struct {
	err                  error
	plugin               string
	last, spent, timeout time.Duration
}

func (s *slowFailure) Error() string {
	took := s.last.Round(time.Millisecond).String()
	if s.spent > s.last {
		took += fmt.Sprintf(" (its attempts %s in all)", s.spent.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v (not tried again: plugin %q took %s to answer it, and another attempt as long would run past the RPC's %s timeout)",
		s.err, s.plugin, took, s.timeout)
}

func (s *slowFailure) Unwrap() error { return s.err }

// retriedOut is a retryable failure retry tried again until its attempts ran out, the last one's
// err saying so: the plugin's code's hint ("retry shortly", "is the plugin running?") read as if
// nobody had, where volctl had tried it that many times, waiting between them. It names no
// time: a failure repeated pass after pass is one event, its words the same each time
// (TestRepeatedFailureIsOneEvent).
type retriedOut struct {
	err      error
	attempts int
	same     bool // every attempt failed with err's code and words (but for IDs and times)
}

func (r *retriedOut) Error() string {
	if !r.same {
		return fmt.Sprintf("%v (the last of volctl's %d attempts, the earlier ones failing otherwise)", r.err, r.attempts)
	}
	return fmt.Sprintf("%v (the same at each of volctl's %d attempts)", r.err, r.attempts)
}

func (r *retriedOut) Unwrap() error { return r.err }

// attempt sends one attempt of rpc through c: checkSockets before it and, when the plugin
// answers that it does not know the volume or the call, or that the call does not suit its
// state (FAILED_PRECONDITION: what a plugin that gained STAGE_UNSTAGE_VOLUME answers a
// NodePublishVolume without a staging path, the CSI spec says), checkAnswerer after it. Every
// RPC of an operation is sent so (retry, and the few sent once).
//
// In a background pass (withHungPlugins), an RPC to a socket that did not answer an earlier
// RPC of the pass within volctl's own timeout is not sent (hungPlugins).
func (e *Engine) attempt(ctx context.Context, c *conn, rpc string, call func(context.Context) error) error {
	hung, volume := hungPluginsOf(ctx), passVolume(ctx)
	if err := hung.refuse(c.plugin, rpc, volume); err != nil {
		return &unsentRPC{err: err}
	}
	if err := e.checkSockets(ctx, c, rpc); err != nil {
		hung.note(c.plugin, rpc, volume, err)
		e.noteAcceptedElsewhere(ctx, c.plugin.ID, c.servers)
		return &unsentRPC{err: err}
	}
	err := call(ctx)
	hung.note(c.plugin, rpc, volume, err)
	if err != nil {
		e.noteAcceptedElsewhere(ctx, c.plugin.ID, c.servers)
	}
	if csi.IsUnreachable(err) && socketGone(c.plugin) {
		if moved := e.registeredElsewhere(ctx, c.plugin); moved != "" {
			return &movedPlugin{err: err, moved: moved}
		}
	}
	if csi.IsNotFound(err) || csi.IsUnimplemented(err) || csi.IsFailedPrecondition(err) {
		return e.checkAnswerer(ctx, c, rpc, err)
	}
	return err
}

// hungPlugins is a background pass's record (reconcile, claim GC: withHungPlugins), or a
// command's that acts on many volumes (group run and stop), of the plugin sockets that did not
// answer its RPCs within volctl's own timeout (or failed as slowly: slowFailure), with that
// timeout's error. A socket that timed out for two of the pass's volumes (onVolume), or for an
// RPC of none (a connection's fingerprint), is hung: the pass sends it nothing more, its other
// work a problem of the pass, left for the next one (for a command, to reconcile), as the RPC
// that timed out left its own. One that timed out for one volume is sent nothing more for that
// volume: a volume whose backend is dead (an NFS server gone, its unmount hanging) does not
// make its plugin's other volumes wait for the next pass, every pass. A pass drives its claims,
// creates and deletes one after another (restores a few at once), and a plugin hung on a dead
// backend cost it a timeout (2 min) for each of that plugin's volumes before any other
// plugin's was reached: the agent's pass, every minute, stuck n timeouts behind one plugin
// (`TestReconcilePassLeavesAHungPluginsOtherWorkForTheNextPass`), and a group run or stop one
// timeout per alloc (`TestGroupCommandsLeaveAHungPluginsOtherWorkToReconcile`). Now a hung
// plugin costs two (more only for restore workers already waiting on it), and a restarted
// plugin hung from its first RPC one short timeout, not one per volume (connectPlugin). Keyed
// by the socket the RPC goes to: a split plugin's controller is not taken for hung with its
// node, and plugin IDs registered on one socket, one process, are hung together however their
// sockets are spelled (oneSocket: a symlinked directory, a "//", a bind mount;
// `TestPassTakesEverySpellingOfAHungSocketForHung`).
type hungPlugins struct {
	of, left string // "this pass", and what does the rest: "the next pass" (withHungPlugins)
	mu       sync.Mutex
	socket   map[string]*hungSocket // by the spelling first noted (sockets)
}

// hungSocket is what a pass saw of one socket: the volumes whose RPCs timed out, and the
// timeout that makes it hung (nil while it is not).
type hungSocket struct {
	volumes map[string]error
	hung    error
}

type hungPluginsKey struct{}

// withHungPlugins returns ctx under which attempt records the sockets that time out
// (hungPlugins) and sends them nothing more; of names what ctx is for ("this pass", "this
// group run") and left what does what it leaves ("the next pass", "`volctl reconcile`").
func withHungPlugins(ctx context.Context, of, left string) context.Context {
	return context.WithValue(ctx, hungPluginsKey{}, &hungPlugins{of: of, left: left, socket: map[string]*hungSocket{}})
}

// hungPluginsOf is the record withHungPlugins put on ctx, or nil (a command's RPCs, each
// sent once when it times out: retry).
func hungPluginsOf(ctx context.Context) *hungPlugins {
	h, _ := ctx.Value(hungPluginsKey{}).(*hungPlugins)
	return h
}

type passVolumeKey struct{}

// onVolume returns ctx for a pass's work on volume id (hungPlugins counts its timeouts by
// volume); ctx itself outside a pass.
func onVolume(ctx context.Context, id string) context.Context {
	if hungPluginsOf(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, passVolumeKey{}, id)
}

// passVolume is the volume onVolume put on ctx, "" for none.
func passVolume(ctx context.Context) string {
	v, _ := ctx.Value(passVolumeKey{}).(string)
	return v
}

// rpcSockets are the sockets of plugin p that rpc goes to: its service's, both for identity.
func rpcSockets(p store.Plugin, rpc string) []string {
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	switch csi.ServiceOf(rpc) {
	case csi.ServiceController:
		return []string{cfg.ControllerSocket}
	case csi.ServiceNode:
		return []string{cfg.NodeSocket}
	}
	return pluginSockets(p)
}

// note records err, when it is volctl's own timeout or a failure as slow, against the sockets
// of plugin p that rpc goes to, for volume (onVolume; "" for an RPC of no volume, which makes
// them hung at once).
func (h *hungPlugins) note(p store.Plugin, rpc, volume string, err error) {
	if h == nil || !csi.IsTimeout(err) && !errors.As(err, new(*slowFailure)) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range rpcSockets(p, rpc) {
		hs := h.sockets(s)
		if hs == nil {
			hs = &hungSocket{volumes: map[string]error{}}
			h.socket[s] = hs
		}
		if _, ok := hs.volumes[volume]; !ok && volume != "" {
			hs.volumes[volume] = err
		}
		if hs.hung == nil && (volume == "" || len(hs.volumes) >= 2) {
			hs.hung = err
		}
	}
}

// sockets is what the pass saw of socket however spelled (oneSocket), nil for nothing. The
// caller holds h.mu.
func (h *hungPlugins) sockets(socket string) *hungSocket {
	if hs := h.socket[socket]; hs != nil {
		return hs
	}
	for s, hs := range h.socket {
		if oneSocket(s, socket) {
			return hs
		}
	}
	return nil
}

// refuse is rpc's failure, not sent, when a socket it goes to is hung, or timed out for
// volume: of that timeout's code and class (retryable, cut off by volctl's timeout, which its
// caller leaves for reconcile as it does the timeout itself), naming the plugin and the
// earlier RPC; nil otherwise.
func (h *hungPlugins) refuse(p store.Plugin, rpc, volume string) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.socket) == 0 {
		return nil // the common case: no plugin has hung
	}
	for _, s := range rpcSockets(p, rpc) {
		hs := h.sockets(s)
		switch {
		case hs == nil:
		case hs.hung != nil:
			return notSent(rpc, fmt.Sprintf("plugin %q ran into an RPC's timeout earlier in %s, for more than one volume, which leaves the rest of its work on socket %s to %s",
				p.ID, h.of, spec.QuoteName(s), h.left), hs.hung)
		case volume != "" && hs.volumes[volume] != nil:
			return notSent(rpc, fmt.Sprintf("plugin %q ran into an RPC's timeout for volume %q earlier in %s, which leaves the rest of that volume's work to %s",
				p.ID, volume, h.of, h.left), hs.volumes[volume])
		}
	}
	return nil
}

// bindsStorage reports whether rpc, answered OK by whatever driver is on the socket, ties an
// ID volctl records to that driver's data: a delete destroys the driver's volume or snapshot
// under the ID it is given, and a create's answer is an ID volctl records as the registered
// driver's storage, to claim, restore from and delete later. Another driver holding a volume or
// snapshot of the same ID (the sequential IDs many drivers give) would delete its own, and
// volctl would forget the one the registered driver still holds; or it answers a create with
// an ID of its own, which the registered driver, once back, may use for a volume or snapshot
// that is not volctl's (another state dir's, Nomad's): recorded, its delete deleted that one
// and a claim handed its data to the alloc
// (`TestCreateThroughAHeldSocketServedByAnotherDriverRecordsNothing`).
func bindsStorage(rpc string) bool {
	switch rpc {
	case csi.RPCDeleteVolume, csi.RPCDeleteSnapshot, csi.RPCCreateVolume, csi.RPCCreateSnapshot:
		return true
	}
	return false
}

// checkSockets runs before each attempt of an RPC: when a socket of c's plugin is no longer
// the file it was when c was fingerprinted (the plugin restarted mid-operation, or another
// process took its place), gRPC would send the RPC to whatever listens there now. It goes on
// only if that is the same driver with the same capabilities and node: another driver's
// NOT_FOUND to a teardown RPC would count as done while the real one still holds the volume,
// and the operation's steps were chosen by the capabilities c was fingerprinted with. A
// refusal sends nothing; the operation is left for reconcile, whose connection fingerprints
// the plugin afresh. A socket missing (the plugin restarting) reads as the plugin unavailable.
//
// The same file does not prove the same plugin: one behind a socket something else holds
// (systemd socket activation) is replaced without the file changing. Before an RPC that ties
// a recorded ID to the driver's data (bindsStorage: a delete, a create), the driver on the
// socket is asked its name (GetPluginInfo, one short RPC) whatever the file: DeleteVolume is
// not sent to another driver, nor CreateVolume, whose answer would be recorded as the
// registered driver's storage.
func (e *Engine) checkSockets(ctx context.Context, c *conn, rpc string) error {
	ids := identify(pluginSockets(c.plugin)...)
	if sameSockets(c.sockets, ids) {
		if !bindsStorage(rpc) {
			return nil
		}
		replaced, err := e.otherInstance(ctx, c, false)
		if err != nil {
			return notSent(rpc, "asking which driver serves the socket failed", err)
		}
		if replaced != nil {
			e.staleFingerprint(ctx, c)
			return fmt.Errorf("%s not sent: %w (the plugin was replaced behind its socket; %s)", rpc, replaced, remedy(c, replaced))
		}
		return nil
	}
	for _, id := range ids {
		if id.inode == 0 {
			// Nothing there to answer: the RPC fails as unavailable, sent to no one (and
			// says why when the plugin was registered elsewhere meanwhile: attempt).
			return nil
		}
	}
	// Who serves the new files is recorded first, held to the uid rule, as a fresh connection
	// does (connectPlugin): every connection c's client makes is checked against that record
	// (servers.checkPeer), and the one that fingerprints the new process would otherwise be
	// compared with the image of the process that is gone, and refused.
	if err := e.anotherPluginsSocket(ctx, c.plugin, ids); err != nil {
		return fmt.Errorf("%s not sent: %w", rpc, err)
	}
	if err := checkServers(ids, c.servers); err != nil {
		return fmt.Errorf("%s not sent: %w (the plugin restarted mid-operation)", rpc, err)
	}
	// Asked over a connection of its own, made now to the files at the paths, not over c's
	// client: that may still hold a connection to the process that had the old file (it runs on,
	// its socket's name taken by another: a second instance started before the first exits, a
	// listener that binds a temporary name and renames it into place), which would answer for the
	// process on the new file; once it exits, gRPC's reconnect reaches the new process, which
	// checkServers has just recorded as the socket's listener, unasked: another driver was sent
	// the RPC (TestAnotherDriverOnTheSocketWhileTheOldConnectionLivesIsAskedNotTheOld). c's
	// client goes on over either: the old process, fingerprinted before, or the new one, asked
	// now; a third one since is another listener than checkServers recorded (servers.checkPeer).
	fresh, err := dialCSI(c.plugin, c.servers, e.cfg.Timeouts, e.log, e.secretValues, e.cfg.ObserveRPC)
	if err != nil {
		return notSent(rpc, "the plugin restarted mid-operation and connecting to it again failed", err)
	}
	fp, replaced, err := e.otherInstanceOn(ctx, c, fresh, true)
	_ = fresh.Close()
	if err != nil {
		return notSent(rpc, "the plugin restarted mid-operation and checking it again failed", err)
	}
	if replaced != nil {
		return fmt.Errorf("%s not sent: %w (the plugin was replaced mid-operation; %s)", rpc, replaced, remedy(c, replaced))
	}
	if putsOnNode(rpc) && nodeLimitsTightened(fingerprintToStore(c.fp, time.Time{}), fp) && !e.admitsAll(ctx, c, fp) {
		// The claim was admitted (and rechecked, recheckAdmission) against the limits c was
		// fingerprinted with: a node the volume is not accessible from now, or one full, is not
		// sent the volume (TestClaimThatWaitedForTheControllerLockIsHeldToLimitsStatedMeanwhile).
		// A limit raised or taken away admits what the one before did, and is no refusal
		// (TestClaimIsNotRefusedForLimitsRaisedMeanwhile; before, any change refused the claim).
		// A refusal, as admission's would be: the claim is rolled back (a restore's, degraded,
		// is held for reconcile, whose connection fingerprints the plugin afresh).
		was, now := fingerprintToStore(c.fp, time.Time{}), fingerprintToStore(fp, time.Time{})
		var what []string
		if now.MaxVolumes != was.MaxVolumes {
			what = append(what, fmt.Sprintf("max_volumes_per_node %d, was %d", now.MaxVolumes, was.MaxVolumes))
		}
		if !maps.Equal(now.Topology, was.Topology) {
			what = append(what, fmt.Sprintf("accessible topology %s, was %s", formatSegments(now.Topology), formatSegments(was.Topology)))
		}
		return conflictf("%s not sent: plugin %q restarted mid-operation stating other node limits (%s): "+
			"the claim was admitted against the ones before; claim the volume again to have it admitted against the ones now",
			rpc, c.plugin.ID, strings.Join(what, "; "))
	}
	e.checkAliases(ctx, c.plugin, ids, true)
	return nil
}

// admitsAll reports whether live's node limits admit the volume a publish sends (publishingKey)
// as admission (checkNode) would: the volumes recorded on plugin c's node, that one among them
// (its claim or staging is recorded before any RPC), within its max_volumes_per_node, and that
// volume's accessible topology matching its node's (another volume standing there outside it
// refuses only a claim of its own: TestClaimIsNotRefusedForAnotherStandingVolumesTopology);
// every volume on the node, when no publish names one. Then the change refuses nothing. Before, any lower
// limit rolled the claim back, advising a claim again that admission then took
// (TestClaimIsNotRefusedForALimitLoweredButNotReached), and so did any other topology, one the
// plugin states for the first time after an upgrade too, where the volume has none
// (TestClaimIsNotRefusedForATopologyThatStillAdmitsTheVolume). Read only on a change that may
// tighten (nodeLimitsTightened).
func (e *Engine) admitsAll(ctx context.Context, c *conn, live *csi.Fingerprint) bool {
	now := fingerprintToStore(live, time.Time{})
	ok, err := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) {
		on, err := volumesOnNode(tx, c.plugin.ID)
		if err != nil || now.MaxVolumes > 0 && int64(len(on)) > now.MaxVolumes {
			return false, err
		}
		if v, ok := ctx.Value(publishingKey{}).(store.Volume); ok {
			on = []string{v.ID}
		}
		for _, id := range on {
			v, err := tx.Volumes().Get(id)
			if err != nil {
				return false, err
			}
			if topos := volumeTopologies(v); len(topos) > 0 && !topologyMatch(now.Topology, topos) {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil && ok
}

// registeredElsewhere says, when plugin p (the row a connection or an operation read) is
// registered now at other sockets than p's (another volctl's `plugin register` moved it
// meanwhile), what happened and what to do; "" when it is not, or the row cannot be read. Asked
// only once p's socket is found gone: an operation goes on through the plugin it connected to,
// or stops there for reconcile, which connects to the plugin as registered; it never sends the
// rest of its steps to another process than the one it began with. Before, the claim said
// "is the plugin running?" of the old socket while the plugin ran at the new one
// (TestPausedPairClaimPluginMoved).
func (e *Engine) registeredElsewhere(ctx context.Context, p store.Plugin) string {
	now, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(p.ID) })
	if err != nil || slices.Equal(pluginSockets(now), pluginSockets(p)) {
		return ""
	}
	return fmt.Sprintf("plugin %q was registered again at %s by another volctl while this operation used %s, which is gone; `volctl reconcile` finishes what it leaves through the plugin as registered",
		p.ID, strings.Join(quoteNames(pluginSockets(now)), " and "), strings.Join(quoteNames(pluginSockets(p)), " and "))
}

// socketGone says whether a socket of plugin p is missing at its path.
func socketGone(p store.Plugin) bool {
	for _, id := range identify(pluginSockets(p)...) {
		if id.inode == 0 {
			return true
		}
	}
	return false
}

// quoteNames is spec.QuoteName of each path.
func quoteNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = spec.QuoteName(p)
	}
	return out
}

// unsentRPC is an RPC's failure before it was sent (attempt's checks: a socket another driver
// or instance answers on, a plugin the pass found hung): the plugin was asked nothing of the
// volume, so the failure says nothing of what it holds. Its code and class are err's (notSent
// gives a question's failure the question's), which a caller reading them as the plugin's
// answer to the RPC took for one: a delete finishing an interrupted create forgot the volume
// the lost create made when its CreateVolume was never sent
// (TestDeleteOfAnInterruptedCreateThroughAnotherDriverKeepsTheRecord).
type unsentRPC struct{ err error }

func (u *unsentRPC) Error() string { return u.err.Error() }
func (u *unsentRPC) Unwrap() error { return u.err }

// wasNotSent says err is an RPC's failure before it was sent (unsentRPC).
func wasNotSent(err error) bool {
	var u *unsentRPC
	return errors.As(err, &u)
}

// movedPlugin is an RPC that found its socket gone, its plugin registered at other sockets
// meanwhile (registeredElsewhere): still the UNAVAILABLE it was, so that the operation is left
// for reconcile rather than undone, saying why, and not retried, that socket gone for good.
type movedPlugin struct {
	err   error // the RPC's own failure: UNAVAILABLE, its socket gone
	moved string
}

func (m *movedPlugin) Error() string { return fmt.Sprintf("%v (%s)", m.err, m.moved) }
func (m *movedPlugin) Unwrap() error { return m.err }

// notSent is rpc's own failure when asking the plugin who it is before it failed with err
// (why says what was asked), so that its caller records what it was doing: of err's code and
// class, cut off by volctl's timeout when that question was, which retry does not repeat, and
// answered by the plugin itself when that question was (csi.IsUnreachable); with no code of
// its own where that question's failure was volctl's (csi.Error.Own), recorded as none.
func notSent(rpc, why string, err error) error {
	out := &csi.Error{RPC: rpc, Code: csi.CodeOf(err), Class: csi.ClassOf(err), Message: fmt.Sprintf("not sent: %s: %v", why, err),
		Own: csi.EventCode(err) == ""}
	if ce := (*csi.Error)(nil); errors.As(err, &ce) {
		out.TimedOut, out.Answered = ce.TimedOut, ce.Answered
	}
	return out
}

// remedy is what to do about a plugin found replaced (otherInstance): start the registered
// driver again, or, for the same driver with other capabilities or node, nothing but reconcile.
func remedy(c *conn, replaced error) string {
	if errors.Is(replaced, ErrConflict) {
		return fmt.Sprintf("start %q on that socket again", c.fp.Provider)
	}
	return "`volctl reconcile` goes on with what it has now"
}

// checkAnswerer runs after the plugin answered rpc with err, NOT_FOUND, UNIMPLEMENTED or
// FAILED_PRECONDITION: what another driver, or the plugin restarted without a capability or
// with one more, answers (attempt). Behind a socket
// something else holds, the socket file says nothing of a replaced plugin, and such an answer
// taken as it is would have volctl forget what the registered plugin still holds (NOT_FOUND to
// a teardown RPC counts as done). So the plugin is fingerprinted again (only on this path:
// five short RPCs) and, when it is not the instance c was fingerprinted as, the answer is
// refused, not taken, and the stored fingerprint marked stale so that the next connection
// fingerprints the plugin afresh (refusing another driver, recording other capabilities).
// Asking failing keeps the plugin's answer.
func (e *Engine) checkAnswerer(ctx context.Context, c *conn, rpc string, err error) error {
	replaced, ferr := e.otherInstance(ctx, c, true)
	if ferr != nil || replaced == nil {
		return err
	}
	e.staleFingerprint(ctx, c)
	return fmt.Errorf("%s answered %s, which is not taken: %w (the plugin was replaced behind its socket since it was fingerprinted; %s)",
		rpc, csi.CodeOf(err), replaced, remedy(c, replaced))
}

// otherInstance asks the plugin on c's sockets who it is, its driver name only or, with full,
// its whole fingerprint, and says how it is not the instance c was fingerprinted as (nil when it
// is): another driver (a conflict), or other capabilities or another node ID.
func (e *Engine) otherInstance(ctx context.Context, c *conn, full bool) (replaced, err error) {
	_, replaced, err = e.otherInstanceOn(ctx, c, c.client, full)
	return replaced, err
}

// otherInstanceOn is otherInstance asking over client, a connection to c's plugin's sockets,
// with what the plugin answered (its driver name alone without full).
func (e *Engine) otherInstanceOn(ctx context.Context, c *conn, client Plugin, full bool) (fp *csi.Fingerprint, replaced, err error) {
	if full {
		if fp, err = client.Fingerprint(ctx); err != nil {
			// A split plugin's half answered by another driver is that half replaced, as a
			// monolith's socket is: before, a plain failure ("checking it again failed",
			// Unknown), not the conflict naming the socket and the driver to start again
			// (TestSplitNodeHalfReplacedByAnotherDriverMidClaim).
			var halves *csi.HalvesDiffer
			if errors.As(err, &halves) {
				socket, now := halves.NodeSocket, halves.Node
				if halves.Controller != c.fp.Provider {
					socket, now = halves.ControllerSocket, halves.Controller
				}
				return nil, conflictf("socket %s now served by %q, registered as %q", spec.QuoteName(socket), now, c.fp.Provider), nil
			}
			return nil, nil, err
		}
	} else {
		info, err := client.GetPluginInfo(ctx)
		if err != nil {
			return nil, nil, err
		}
		fp = &csi.Fingerprint{Provider: info.Name}
	}
	if fp.Provider != c.fp.Provider {
		return fp, conflictf("socket %s now served by %q, registered as %q", spec.QuoteName(c.sockets[0].path), fp.Provider, c.fp.Provider), nil
	}
	if !full {
		return fp, nil, nil
	}
	was, now := fingerprintToStore(c.fp, time.Time{}), fingerprintToStore(fp, time.Time{})
	if !slices.Equal(was.PluginCaps, now.PluginCaps) || !slices.Equal(was.ControllerCaps, now.ControllerCaps) ||
		!slices.Equal(was.NodeCaps, now.NodeCaps) || was.NodeID != now.NodeID {
		// What changed, named: "other capabilities or another node ID" alone left the reader to
		// find which in `volctl plugin status`, and whether it was the plugin's doing or volctl's.
		var what []string
		lost, gained := capsChange(was, now)
		if len(lost) > 0 {
			what = append(what, "lost "+strings.Join(lost, ", "))
		}
		if len(gained) > 0 {
			what = append(what, "gained "+strings.Join(gained, ", "))
		}
		if was.NodeID != now.NodeID {
			what = append(what, fmt.Sprintf("its node ID is now %q, was %q", now.NodeID, was.NodeID))
		}
		return fp, fmt.Errorf("plugin %q now has other capabilities or another node ID (%s)", c.plugin.ID, strings.Join(what, "; ")), nil
	}
	return fp, nil, nil
}

// putsOnNode reports whether rpc puts a volume on the node (attaches, stages or publishes it),
// which the node's limits (checkNode) are to allow.
func putsOnNode(rpc string) bool {
	switch rpc {
	case csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume:
		return true
	}
	return false
}

// staleFingerprint takes c, found to reach another plugin instance than it was fingerprinted
// as through the same socket files, out of use, and forgets the socket identity stored with its
// fingerprint (forgetFingerprintSockets), so that no connection reuses that fingerprint: the
// next one fingerprints the plugin again (reusableFingerprint).
func (e *Engine) staleFingerprint(ctx context.Context, c *conn) {
	e.mu.Lock()
	e.retire(c)
	e.mu.Unlock()
	if err := e.store.UpdateProgress(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		return forgetFingerprintSockets(tx, c)
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		e.log.Warn("forgetting a stale fingerprint", "plugin", c.plugin.ID, "err", err)
	}
}

// forgetFingerprintSockets forgets, in tx, the socket identity stored with the fingerprint of
// c's plugin when it is still the one c was made with.
func forgetFingerprintSockets(tx *store.Tx, c *conn) error {
	p, err := tx.Plugins().Get(c.plugin.ID)
	if err != nil || !slices.Equal(p.Fingerprint.Sockets, c.storedFingerprint(time.Time{}).Sockets) {
		return err
	}
	// The files' identity goes, so that no connection reuses the fingerprint; where their names
	// were stays (anotherPluginsSocket holds the next fingerprint to it), and who served them
	// stays, so that the next fingerprint's server is held to it (serversOf), and so does a
	// socket seen accepted by another process than its listener (servers.seenElsewhereOn).
	for i, s := range p.Fingerprint.Sockets {
		id := store.SocketIdentity{Path: s.Path, ServerUID: s.ServerUID, ServerKnown: s.ServerKnown, Entry: s.Entry, DirDev: s.DirDev, DirInode: s.DirInode}
		if s.Accepts == acceptsOther {
			id.Accepts = s.Accepts
		}
		p.Fingerprint.Sockets[i] = id
	}
	return tx.Plugins().SetFingerprint(p.ID, p.Fingerprint)
}

// noteAcceptedElsewhere records on the plugin's row what refusals by the client srv holds found
// since (servers.checkAccepted: a connection accepted by another process than the listener
// that accepted the one the plugin was fingerprinted through), and says whether it recorded
// any. Left in the client's memory, the row's `listener` had every operation after reuse the
// stored fingerprint and be refused the same way, in this process and every other, for good.
func (e *Engine) noteAcceptedElsewhere(ctx context.Context, pluginID string, srv *servers) bool {
	seen := srv.takeElsewhere()
	if seen == nil {
		return false
	}
	if err := e.store.UpdateProgress(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		return recordAcceptedElsewhere(tx, pluginID, seen)
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		e.log.Warn("recording a plugin socket accepted by another process than its listener", "plugin", pluginID, "err", err)
		return false
	}
	return true
}

// recordAcceptedElsewhere records, in tx, each socket of seen (servers.takeElsewhere) as
// accepted by another process on the plugin's row, when the row's socket is still the file the
// refusal was on (or its identity was forgotten): so the next connection fingerprints the
// plugin (acceptedElsewhere), and a fingerprint taken through the listener records the socket
// as accepted elsewhere still (servers.seenElsewhereOn). A row recorded since through another
// file has its own record.
func recordAcceptedElsewhere(tx *store.Tx, pluginID string, seen map[string]socketID) error {
	p, err := tx.Plugins().Get(pluginID)
	if err != nil {
		return err
	}
	changed := false
	for i, s := range p.Fingerprint.Sockets {
		f, ok := seen[serverKey(s.Path)]
		if !ok || s.Accepts == acceptsOther || s.Inode != 0 && (s.Dev != f.dev || s.Inode != f.inode || s.CtimeNs != f.ctime) {
			continue
		}
		p.Fingerprint.Sockets[i].Accepts = acceptsOther
		changed = true
	}
	if !changed {
		return nil
	}
	return tx.Plugins().SetFingerprint(p.ID, p.Fingerprint)
}
