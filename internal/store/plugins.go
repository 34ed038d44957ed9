package store

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// Plugin is a registered CSI plugin: its declaration, its last fingerprint and its last probe.
type Plugin struct {
	ID               string
	Type             spec.PluginType
	Socket           string // monolith on one socket
	ControllerSocket string
	NodeSocket       string
	Timeout          time.Duration // long-RPC timeout; 0 means the engine's default
	Exec             *spec.Exec    // nil unless volctl starts the plugin itself
	Fingerprint      Fingerprint
	Health           Health
	// CapabilityChange is the plugin's last change of capabilities (it came back from a
	// restart with others), kept with the plugin rather than read back from its
	// plugin-capabilities event, which the event log drops once DefaultEventLimit events
	// follow it (SetCapabilityChange); nil when it never changed.
	CapabilityChange *CapabilityChange
	// Supervision is what the agent last recorded it does with the plugin's process
	// (SetSupervision); nil when no agent has recorded anything.
	Supervision *Supervision
	CreatedAt   time.Time
	UpdatedAt   time.Time // when the declaration was last written (a registration, changed or not); probes have their own times
}

// Fingerprint is what the plugin said about itself on its last (re)connect.
type Fingerprint struct {
	Provider       string
	Version        string
	PluginCaps     []string
	ControllerCaps []string
	NodeCaps       []string
	NodeID         string
	MaxVolumes     int64
	Topology       map[string]string // the node's accessible topology segments
	At             time.Time         // zero: never fingerprinted
	// Sockets identify the socket files the fingerprint was taken through (nil: unknown).
	Sockets []SocketIdentity
}

// SocketIdentity identifies one socket file: a plugin that restarts makes a new file, with
// another inode or change time, even on the same path.
type SocketIdentity struct {
	Path    string `json:"path"`
	Dev     uint64 `json:"dev"`
	Inode   uint64 `json:"inode"`
	CtimeNs int64  `json:"ctime_ns"`
	// ServerUID is the user whose process served the socket when the plugin was fingerprinted
	// through it, when ServerKnown (not recorded by volctl before round 26, nor where nothing
	// answered the look); a file identity forgotten (a stale fingerprint) keeps it.
	ServerUID   uint32 `json:"server_uid,omitempty"`
	ServerKnown bool   `json:"server_known,omitempty"`
	// Listener is what the process listening on the socket ran when the plugin was fingerprinted
	// through it (engine's listenerImage: its pid, start time, program file and where exec placed
	// its stack; "pid N gone, not compared" for a listener gone then, which is never compared);
	// "" when not recorded (volctl before round 28, nothing answering). A process that
	// exec()s another program keeping its listening socket leaves the file as it was.
	Listener string `json:"listener,omitempty"`
	// Accepts says which process held the other end of the connection the plugin was
	// fingerprinted through (engine's acceptedBy): "listener" (the process Listener names),
	// "another process" (a supervisor or systemd listens, and the plugin it started accepts;
	// or the listener is gone), "unknown" (it could not be told); "" when not recorded (volctl
	// before round 29, nothing answering).
	Accepts string `json:"accepts,omitempty"`
	// Entry is where the socket's name was when the plugin was fingerprinted through it: the
	// path with its directory's symlinks resolved, and that directory's device and inode
	// (through a bind mount, the mounted one's). A socket that is another registered plugin's
	// in one directory now (a symlink or a bind mount of a directory made since) is refused
	// unless it was so then (engine's anotherPluginsSocket). "" when not recorded (volctl
	// before round 30, a registration anew); a file identity forgotten keeps it.
	Entry    string `json:"entry,omitempty"`
	DirDev   uint64 `json:"dir_dev,omitempty"`
	DirInode uint64 `json:"dir_inode,omitempty"`
	// Boot is the kernel's boot ID (/proc/sys/kernel/random/boot_id) when the plugin was
	// fingerprinted through the socket: a file's device, inode and change time, and its
	// listener's pid and start time, are the boot's own, and may come back alike after a
	// reboot (a tmpfs numbers its inodes from boot; a clock with no battery starts where it
	// started), so they identify the instance only within Boot. "" when not recorded (volctl
	// before round 33, or no boot ID to read).
	Boot string `json:"boot,omitempty"`
}

// CapabilityChange is what a plugin lost and gained, by capability name, when it came back with
// other capabilities, and when (its plugin-capabilities event's time).
type CapabilityChange struct {
	At     time.Time
	Lost   []string
	Gained []string
}

// capabilityChangeRow is CapabilityChange as its column holds it: the time in unix ns.
type capabilityChangeRow struct {
	At     int64    `json:"at"`
	Lost   []string `json:"lost"`
	Gained []string `json:"gained"`
}

// What an agent does with a plugin's process (Supervision.Mode).
const (
	// SupervisionRuns: the agent started the process, or adopted one an agent started; it
	// stops it at its own stop (when the plugin has no mounts) and restarts it when it exits
	// or stays unhealthy past the health timeout.
	SupervisionRuns = "runs"
	// SupervisionDaemon: the process the agent started exited, leaving a daemon serving the
	// plugin's socket, which the agent follows as the plugin: it stops it (its process group)
	// and restarts the plugin by running its command again.
	SupervisionDaemon = "daemon"
	// SupervisionProbed: the agent probes the plugin only and never signals what serves its
	// socket: a process it did not start (another agent's, one started by hand, a daemon it
	// could not tell for the plugin's), or another plugin ID's process on the same socket.
	SupervisionProbed = "probed"
	// SupervisionStopped: the agent stopped the process at its own stop; nothing runs it now.
	SupervisionStopped = "stopped"
	// SupervisionLeft: the agent stopped, leaving the process running (it has mounts, or could
	// not be stopped) for the next agent to adopt; nothing supervises it meanwhile.
	SupervisionLeft = "left"
	// SupervisionStartFailed: the agent could not start the process (its command not found,
	// refused, the socket's directory not made); it tries again after a backoff. Pid is 0.
	SupervisionStartFailed = "start-failed"
	// SupervisionExited: the process the agent ran exited (Pid, the note its status); the
	// agent starts it again after a backoff.
	SupervisionExited = "exited"
)

// Supervision is what an agent recorded it does with a plugin's process, and when.
type Supervision struct {
	Mode     string    // one of the Supervision* constants
	Pid      int       // the process the agent runs, follows, probes or left; 0 when not known
	Note     string    // why, in the agent's words: what serves the socket of a plugin probed only
	AgentPid int       // the agent that recorded it
	At       time.Time // when
}

// supervisionRow is Supervision as its column holds it: the time in unix ns.
type supervisionRow struct {
	Mode     string `json:"mode"`
	Pid      int    `json:"pid,omitempty"`
	Note     string `json:"note,omitempty"`
	AgentPid int    `json:"agent_pid,omitempty"`
	At       int64  `json:"at"`
}

// Health is the result of the last Probe.
type Health struct {
	Healthy      bool
	Ready        bool
	ProbeLatency time.Duration
	LastError    string
	ProbedAt     time.Time // zero: never probed
}

// PluginFromSpec is the declaration part of a Plugin, from a plugin spec.
func PluginFromSpec(p spec.Plugin) Plugin {
	return Plugin{
		ID: p.ID, Type: p.Type, Socket: p.Socket, ControllerSocket: p.ControllerSocket,
		NodeSocket: p.NodeSocket, Timeout: p.Timeout, Exec: p.Exec,
	}
}

// Spec is the plugin's declaration as a plugin spec.
func (p Plugin) Spec() spec.Plugin {
	return spec.Plugin{
		ID: p.ID, Type: p.Type, Socket: p.Socket, ControllerSocket: p.ControllerSocket,
		NodeSocket: p.NodeSocket, Timeout: p.Timeout, Exec: p.Exec,
	}
}

// PluginStore reads and writes plugins.
type PluginStore interface {
	// Get returns one plugin, or an error matching ErrNotFound.
	Get(id string) (Plugin, error)
	// List returns every plugin, ordered by ID.
	List() ([]Plugin, error)
	// Put inserts or replaces a plugin's declaration, keeping its fingerprint and health; it sets
	// p.CreatedAt and p.UpdatedAt.
	Put(p *Plugin) error
	// Delete removes a plugin (its volumes stay); ErrNotFound if there is none.
	Delete(id string) error
	// SetFingerprint records a fingerprint; a zero fp.At is stamped with the current time.
	SetFingerprint(id string, fp Fingerprint) error
	// PinProvider records the driver name a plugin never fingerprinted under its registration
	// must answer with (Fingerprint.Provider), touching nothing else: its fingerprint stays
	// never taken (At zero) until its first connection records one.
	PinProvider(id, provider string) error
	// SetHealth records a probe result; a zero h.ProbedAt is stamped with the current time.
	SetHealth(id string, h Health) error
	// SetCapabilityChange records the plugin's last change of capabilities, in place of the one
	// before; a zero ch.At is stamped with the current time.
	SetCapabilityChange(id string, ch CapabilityChange) error
	// SetSupervision records what the agent does with the plugin's process, in place of what
	// was recorded before; a zero s.At is stamped with the current time.
	SetSupervision(id string, s Supervision) error

	// PutLeft records how plugin p, deregistered with --force while volumes still name it, was
	// reached (LeftPlugin), in place of what an earlier one of its ID recorded.
	PutLeft(p Plugin) error
	// ListLeft returns what PutLeft recorded of the plugin IDs not registered again, by ID.
	ListLeft() ([]LeftPlugin, error)
	// TidyLeft removes what PutLeft recorded of plugin IDs registered again or that no volume
	// names any more, and returns how many it removed.
	TidyLeft() (int64, error)

	// HoldsEnvBeyond reports whether values of the plugin's earlier exec envs, which Put and
	// Delete keep while a process started with them may run, are kept that running (the env
	// of the one process of it that may run now, nil for none) does not hold.
	HoldsEnvBeyond(id string, running map[string]string) (bool, error)
	// LetGoEnv lets go of those values, and returns how many went.
	LetGoEnv(id string, running map[string]string) (int64, error)
	// EnvKeptOfGone returns the plugin IDs not registered of which such values are kept.
	EnvKeptOfGone() ([]string, error)
	// MoveKeptEnv keeps plugin from's such values as plugin to's.
	MoveKeptEnv(from, to string) error
}

// Plugins is the plugin API inside this transaction.
func (tx *Tx) Plugins() PluginStore { return plugins{tx} }

type plugins struct{ tx *Tx }

const pluginColumns = `id, type, socket, controller_socket, node_socket, timeout_ns, exec,
	provider, version, plugin_caps, controller_caps, node_caps, node_id, max_volumes, topology, fingerprinted_at,
	fingerprint_sockets, healthy, ready, probe_latency_ns, last_error, probed_at, created_at, updated_at, capability_change, supervision`

func scanPlugin(sc scanner) (Plugin, error) {
	var (
		p                                    Plugin
		exec, pcaps, ccaps, ncaps, topo, fs  sql.NullString
		change, supervision                  sql.NullString
		timeout, fpAt, latency, probed, c, u int64
	)
	err := sc.Scan(&p.ID, &p.Type, &p.Socket, &p.ControllerSocket, &p.NodeSocket, &timeout, &exec,
		&p.Fingerprint.Provider, &p.Fingerprint.Version, &pcaps, &ccaps, &ncaps, &p.Fingerprint.NodeID,
		&p.Fingerprint.MaxVolumes, &topo, &fpAt, &fs,
		&p.Health.Healthy, &p.Health.Ready, &latency, &p.Health.LastError, &probed, &c, &u, &change, &supervision)
	if err != nil {
		return Plugin{}, err
	}
	var er *execRow
	var chRow *capabilityChangeRow
	var supRow *supervisionRow
	if err := decJSONs(jsonCol{supervision, &supRow}, jsonCol{exec, &er}, jsonCol{pcaps, &p.Fingerprint.PluginCaps},
		jsonCol{ccaps, &p.Fingerprint.ControllerCaps}, jsonCol{ncaps, &p.Fingerprint.NodeCaps},
		jsonCol{topo, &p.Fingerprint.Topology}, jsonCol{fs, &p.Fingerprint.Sockets},
		jsonCol{change, &chRow}); err != nil {
		return Plugin{}, fmt.Errorf("plugin %q: decode: %w", p.ID, err)
	}
	if chRow != nil {
		p.CapabilityChange = &CapabilityChange{At: decTime(chRow.At), Lost: chRow.Lost, Gained: chRow.Gained}
		ch := p.CapabilityChange
		// Never null in JSON: [] for none.
		if ch.Lost == nil {
			ch.Lost = []string{}
		}
		if ch.Gained == nil {
			ch.Gained = []string{}
		}
	}
	if supRow != nil {
		p.Supervision = &Supervision{Mode: supRow.Mode, Pid: supRow.Pid, Note: supRow.Note, AgentPid: supRow.AgentPid, At: decTime(supRow.At)}
	}
	p.Exec = er.spec()
	p.Timeout = time.Duration(timeout)
	p.Fingerprint.At = decTime(fpAt)
	p.Health.ProbeLatency = time.Duration(latency)
	p.Health.ProbedAt = decTime(probed)
	p.CreatedAt, p.UpdatedAt = decTime(c), decTime(u)
	return p, nil
}

func pluginWhat(id string) string { return fmt.Sprintf("plugin %q", id) }

func (ps plugins) Get(id string) (Plugin, error) {
	return getOne(ps.tx, pluginWhat(id), scanPlugin, `SELECT `+pluginColumns+` FROM plugins WHERE id = ?`, id)
}

func (ps plugins) List() ([]Plugin, error) {
	return listAll(ps.tx, "list plugins", scanPlugin, `SELECT `+pluginColumns+` FROM plugins ORDER BY id`)
}

func (ps plugins) Put(p *Plugin) error {
	what := pluginWhat(p.ID)
	exec, err := encJSON(toExecRow(p.Exec))
	if err != nil {
		return fmt.Errorf("%s: encode exec: %w", what, err)
	}
	if err := ps.tx.noteSecretsUnlessSame(`SELECT exec IS ? FROM plugins WHERE id = ?`, exec, p.ID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := ps.keepEnvGoing(p.ID, exec); err != nil {
		return err
	}
	now := encTime(ps.tx.now())
	var created int64
	err = ps.tx.queryRow(`
		INSERT INTO plugins (id, type, socket, controller_socket, node_socket, timeout_ns, exec, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
			type = excluded.type, socket = excluded.socket, controller_socket = excluded.controller_socket,
			node_socket = excluded.node_socket, timeout_ns = excluded.timeout_ns, exec = excluded.exec,
			updated_at = excluded.updated_at
		RETURNING created_at`,
		p.ID, p.Type, p.Socket, p.ControllerSocket, p.NodeSocket, int64(p.Timeout), exec, now, now,
	).Scan(&created)
	if err != nil {
		return wrap(err, what, "")
	}
	// Registered again: what a forced deregistration of the ID kept of it no longer stands
	// for it (LeftPlugin).
	if _, err := ps.tx.exec(`DELETE FROM plugins_left WHERE id = ?`, p.ID); err != nil {
		return wrap(err, what, "")
	}
	p.CreatedAt, p.UpdatedAt = decTime(created), decTime(now)
	return nil
}

func (ps plugins) Delete(id string) error {
	if err := ps.tx.noteSecrets(); err != nil {
		return fmt.Errorf("%s: %w", pluginWhat(id), err)
	}
	if err := ps.keepEnvGoing(id, nil); err != nil {
		return err
	}
	res, err := ps.tx.exec(`DELETE FROM plugins WHERE id = ?`, id)
	return affected(res, err, pluginWhat(id), "")
}

func (ps plugins) SetFingerprint(id string, fp Fingerprint) error {
	what := pluginWhat(id)
	if fp.At.IsZero() {
		fp.At = ps.tx.now()
	}
	var cols [5]any
	for i, v := range []any{fp.PluginCaps, fp.ControllerCaps, fp.NodeCaps, fp.Topology, fp.Sockets} {
		var err error
		if cols[i], err = encJSON(v); err != nil {
			return fmt.Errorf("%s: encode fingerprint: %w", what, err)
		}
	}
	res, err := ps.tx.exec(`
		UPDATE plugins SET provider = ?, version = ?, plugin_caps = ?, controller_caps = ?, node_caps = ?,
			node_id = ?, max_volumes = ?, topology = ?, fingerprinted_at = ?, fingerprint_sockets = ?
		WHERE id = ?`,
		fp.Provider, fp.Version, cols[0], cols[1], cols[2], fp.NodeID, fp.MaxVolumes, cols[3],
		encTime(fp.At), cols[4], id)
	return affected(res, err, what, "")
}

func (ps plugins) PinProvider(id, provider string) error {
	res, err := ps.tx.exec(`UPDATE plugins SET provider = ? WHERE id = ?`, provider, id)
	return affected(res, err, pluginWhat(id), "")
}

func (ps plugins) SetHealth(id string, h Health) error {
	if h.ProbedAt.IsZero() {
		h.ProbedAt = ps.tx.now()
	}
	res, err := ps.tx.exec(`
		UPDATE plugins SET healthy = ?, ready = ?, probe_latency_ns = ?, last_error = ?, probed_at = ?
		WHERE id = ?`,
		encBool(h.Healthy), encBool(h.Ready), int64(h.ProbeLatency), spec.Cut(h.LastError, MaxStoredMessage), encTime(h.ProbedAt), id)
	return affected(res, err, pluginWhat(id), "")
}

func (ps plugins) SetCapabilityChange(id string, ch CapabilityChange) error {
	what := pluginWhat(id)
	if ch.At.IsZero() {
		ch.At = ps.tx.now()
	}
	col, err := encJSON(capabilityChangeRow{At: encTime(ch.At), Lost: ch.Lost, Gained: ch.Gained})
	if err != nil {
		return fmt.Errorf("%s: encode capability change: %w", what, err)
	}
	res, err := ps.tx.exec(`UPDATE plugins SET capability_change = ? WHERE id = ?`, col, id)
	return affected(res, err, what, "")
}

func (ps plugins) SetSupervision(id string, s Supervision) error {
	what := pluginWhat(id)
	if s.At.IsZero() {
		s.At = ps.tx.now()
	}
	col, err := encJSON(supervisionRow{Mode: s.Mode, Pid: s.Pid, Note: spec.Cut(s.Note, MaxStoredMessage), AgentPid: s.AgentPid, At: encTime(s.At)})
	if err != nil {
		return fmt.Errorf("%s: encode supervision: %w", what, err)
	}
	res, err := ps.tx.exec(`UPDATE plugins SET supervision = ? WHERE id = ?`, col, id)
	return affected(res, err, what, "")
}
