// Package spec is volctl's shared vocabulary: access and attachment modes, capabilities, mount
// options, secrets, and the typed volume, plugin and group specs parsed from HCL or JSON.
// It is pure (bytes in, values out) and imports nothing else of the project.
package spec

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// AccessMode is a CSI access mode in Nomad's spelling.
type AccessMode string

// The access modes volctl knows, in Nomad's spelling.
const (
	SingleNodeReaderOnly  AccessMode = "single-node-reader-only"
	SingleNodeWriter      AccessMode = "single-node-writer"
	MultiNodeReaderOnly   AccessMode = "multi-node-reader-only"
	MultiNodeSingleWriter AccessMode = "multi-node-single-writer"
	MultiNodeMultiWriter  AccessMode = "multi-node-multi-writer"
)

// AccessModes lists every valid access mode, in the order help text shows them.
var AccessModes = []AccessMode{
	SingleNodeReaderOnly, SingleNodeWriter, MultiNodeReaderOnly, MultiNodeSingleWriter, MultiNodeMultiWriter,
}

// Valid reports whether m is one of AccessModes.
func (m AccessMode) Valid() bool {
	return slices.Contains(AccessModes, m)
}

// SingleNode reports whether the mode allows the volume on one node only.
func (m AccessMode) SingleNode() bool {
	return m == SingleNodeReaderOnly || m == SingleNodeWriter
}

// ReaderOnly reports whether the mode allows no writer at all.
func (m AccessMode) ReaderOnly() bool {
	return m == SingleNodeReaderOnly || m == MultiNodeReaderOnly
}

// AttachmentMode is how a volume is presented: a mounted filesystem or a raw block device.
type AttachmentMode string

// The attachment modes.
const (
	FileSystem  AttachmentMode = "file-system"
	BlockDevice AttachmentMode = "block-device"
)

// AttachmentModes lists every valid attachment mode.
var AttachmentModes = []AttachmentMode{FileSystem, BlockDevice}

// Valid reports whether m is one of AttachmentModes.
func (m AttachmentMode) Valid() bool { return m == FileSystem || m == BlockDevice }

// Capability is one (access mode, attachment mode) pair a volume supports.
type Capability struct {
	AccessMode     AccessMode     `json:"access_mode"`
	AttachmentMode AttachmentMode `json:"attachment_mode"`
}

// MountOptions are the filesystem type and mount flags used when a volume is staged and published.
type MountOptions struct {
	FSType     string     `json:"fs_type,omitempty"`
	MountFlags MountFlags `json:"mount_flags,omitempty"`
}

// Merge applies Nomad's rule for a claim's mount options over the volume's: the request's fs_type
// wins when set, and the request's mount flags replace the volume's when any are given.
func (m *MountOptions) Merge(req *MountOptions) *MountOptions {
	out := &MountOptions{}
	if m != nil {
		out.FSType = m.FSType
		out.MountFlags = append(MountFlags(nil), m.MountFlags...)
	}
	if req != nil {
		if req.FSType != "" {
			out.FSType = req.FSType
		}
		if len(req.MountFlags) > 0 {
			out.MountFlags = append(MountFlags(nil), req.MountFlags...)
		}
	}
	return out
}

// Problem says why a claim's own mount options (volume claim's --fs-type and --mount-flag)
// cannot be sent, by the limits a spec's mount_options block is held to: fs_type at most the
// CSI spec's 128 bytes and no control character, the mount flags at most 4 KiB in all. ""
// when they can. The flags themselves are never quoted: they may carry credentials. Before,
// a claim's were sent as given, past the limits docs/specs.md says volctl keeps
// (TestClaimMountOptionsKeepTheCSILimits).
func (m *MountOptions) Problem() string {
	if m == nil {
		return ""
	}
	if len(m.FSType) > MaxCSIString {
		return fmt.Sprintf("fs_type is %d bytes long; the CSI spec limits string fields to %d bytes", len(m.FSType), MaxCSIString)
	}
	if r, ok := ControlIn(m.FSType); ok {
		return fmt.Sprintf("fs_type contains the control character %U, which the CSI spec does not allow", r)
	}
	// Bytes that are not UTF-8 (a shell's $'\xff') cannot be sent: CSI's strings are UTF-8,
	// and a claim given them was admitted, its RPCs unsendable, its rollback undoing a staging
	// and attachment it never made, the error blaming a path or ID
	// (TestClaimMountOptionsThatAreNotUTF8AreRefusedBeforeAnythingIsSent). A flag is named by
	// its place only: it may hold a credential.
	if !utf8.ValidString(m.FSType) {
		return "fs_type is not valid UTF-8, as the CSI spec's strings must be"
	}
	total := 0
	for i, f := range m.MountFlags {
		total += len(f)
		if !utf8.ValidString(f) {
			return fmt.Sprintf("mount flag %d of %d is not valid UTF-8, as the CSI spec's strings must be (its value is not shown: mount flags may hold credentials)", i+1, len(m.MountFlags))
		}
	}
	if total > MaxCSIMountOpts || len(m.MountFlags) > maxMountFlags {
		return fmt.Sprintf("the %d mount flags hold %d bytes; the CSI spec limits them to %d bytes (4 KiB) in total", len(m.MountFlags), total, MaxCSIMountOpts)
	}
	return ""
}

// Describe says what m sets, for people: "fs_type=ext4" and "mount_flags=[REDACTED] (2)", each
// when set. Mount flags may carry credentials, so only their number is shown. Views join the
// parts as they lay them out.
func (m *MountOptions) Describe() []string {
	if m == nil {
		return nil
	}
	var parts []string
	if m.FSType != "" {
		parts = append(parts, "fs_type="+m.FSType)
	}
	if n := len(m.MountFlags); n > 0 {
		parts = append(parts, fmt.Sprintf("mount_flags=%s (%d)", Redacted, n))
	}
	return parts
}

// loosening are the mount flags that lift what nosuid, nodev and noexec forbid: words of
// mount(8)'s own vocabulary, which carry no credential.
var loosening = []string{"suid", "dev", "exec"}

// mountWords are mount(8)'s filesystem-independent options that take no value: its own
// vocabulary, which carries no credential (loosening's words among them).
var mountWords = []string{"async", "atime", "noatime", "auto", "noauto", "defaults", "dev", "nodev",
	"diratime", "nodiratime", "dirsync", "exec", "noexec", "group", "iversion", "noiversion", "mand",
	"nomand", "_netdev", "nofail", "relatime", "norelatime", "strictatime", "nostrictatime",
	"lazytime", "nolazytime", "suid", "nosuid", "silent", "loud", "owner", "remount", "ro", "rw",
	"sync", "user", "nouser", "users", "nosymfollow", "bind", "rbind"}

// ShownMountFlag says whether flag is a word of mount(8)'s own vocabulary, or several joined by
// commas ("rw,noatime"): no credential, so not a value to scrub from output
// (store.Tx.SecretValues) nor from a plugin's answer to a request that carried it
// (csi's requestValues). Scrubbed, "dev" went out of every "/dev/..." path (and the status's
// "asks for dev" with it), "sync" out of every "fsync" and "async", "auto" out of "autofs",
// and "noatime" out of the helper's "mount -o noatime" that says which flag it refused
// (secrets38). A flag with a value ("uid=1000", "vers=4.1") is no word of the vocabulary, and
// stays scrubbed whole; what Allows shows of the flags is loosening's words alone.
func ShownMountFlag(flag string) bool {
	for _, item := range strings.Split(flag, ",") {
		if !slices.Contains(mountWords, strings.TrimSpace(item)) {
			return false
		}
	}
	return true
}

// MountFlagSecrets is the values, in flag (one flag, or several items joined by commas:
// "username=alice,password=..."), of the items whose key names a secret (password, passwd,
// pwd, secret, token, key: "password=hunter2" gives "hunter2"), each a secret of its own: a
// plugin, or the mount helper it runs, echoes the value without its key ("password hunter2
// rejected") as often as the whole flag, which alone is scrubbed otherwise. So is the password
// of cifs's user=NAME%PASSWORD, and each value within a value of key=value pieces joined by
// colons whose key names a secret (ecryptfs's key=passphrase:passphrase_passwd=...). The value
// of an item whose key names none (uid=1000, sec=krb5) is not one: "1000" is in many a message.
// Nor is that of a key naming a file that holds the secret (cifs's credentials=, ceph's
// secretfile= and keyring=, s3fs's passwd_file=, any *file=): it is a path, which the helper's
// "could not open credentials file /etc/cifs.cred" needs to say what to fix. Keys, not values,
// decide: a password may start with a slash as well as a path.
//
// A comma doubled is one comma of the item's value, as the kernel's cifs and smb3 read a
// password ("password=ab,,cd" is "ab,cd"): its value is the secret, as read and as written.
// Split at every comma, only "ab" was one, and a plugin echoing the password showed ",cd"
// (TestMountFlagSecretWithADoubledComma).
//
// Every item is read as split at each comma too: a reader that takes no doubled comma for one
// (libmount, a FUSE helper) reads "username=alice,,password=hunter2" as two items, and its
// "password hunter2 rejected" needs "hunter2" scrubbed, which the joined item alone, a user
// name's value, does not give (TestMountFlagSecretAfterADoubledCommaIsStillOne).
func MountFlagSecrets(flag string) []string {
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	for _, item := range mountItems(flag) {
		secrets := mountItemSecrets(strings.TrimSpace(item))
		for _, v := range secrets {
			if w := strings.ReplaceAll(v, ",", ",,"); w != v {
				add(w) // as written in the flag
			}
		}
		add(secrets...)
	}
	if strings.Contains(flag, ",,") {
		for _, item := range strings.Split(flag, ",") {
			add(mountItemSecrets(strings.TrimSpace(item))...)
		}
	}
	return out
}

// mountItems is flag's comma-joined items, a doubled comma one comma of an item.
func mountItems(flag string) []string {
	parts := strings.Split(flag, ",")
	items := []string{parts[0]}
	for i := 1; i < len(parts); i++ {
		if last := len(items) - 1; parts[i] == "" && i+1 < len(parts) && items[last] != "" {
			items[last] += "," + parts[i+1]
			i++
			continue
		}
		items = append(items, parts[i])
	}
	return items
}

// mountItemSecrets is MountFlagSecrets of one key=value item.
func mountItemSecrets(item string) []string {
	k, v, ok := strings.Cut(item, "=")
	if !ok || v == "" {
		return nil
	}
	k = strings.ToLower(nameFolder.Replace(k))
	if k == "user" || k == "username" {
		if _, pw, ok := strings.Cut(v, "%"); ok && pw != "" {
			return []string{pw} // cifs's user=NAME%PASSWORD
		}
		return nil
	}
	var out []string
	if strings.Contains(v, "=") {
		for _, piece := range strings.Split(v, ":") {
			out = append(out, mountItemSecrets(piece)...)
		}
	}
	if strings.Contains(k, "file") || strings.Contains(k, "keyring") || strings.HasPrefix(k, "cred") {
		return out // a path to the secret, not the secret
	}
	for _, s := range []string{"pass", "pwd", "secret", "token", "key"} {
		if strings.Contains(k, s) {
			return append([]string{v}, out...)
		}
	}
	return out
}

// Allows is which of suid, dev and exec the flags ask for, as a flag of their own or an item of
// a comma-separated one ("rw,suid"), in that order: what is shown of flags otherwise redacted,
// so that a volume mounted with set-user-ID files or device files allowed says so (volctl, as
// Nomad, adds no nosuid or nodev of its own: docs/specs.md). As mount(8) reads them, the last
// word on each wins: "suid,nosuid" asks for no suid, and user and users forbid all three,
// owner and group suid and dev, unless a later word allows them again.
func (f MountFlags) Allows() []string {
	allowed := map[string]bool{}
	for _, flag := range f {
		for _, item := range strings.Split(flag, ",") {
			item = strings.TrimSpace(item)
			for _, w := range loosening {
				switch {
				case item == w:
					allowed[w] = true
				case item == "no"+w, slices.Contains(forbiddenBy[item], w):
					allowed[w] = false
				}
			}
		}
	}
	var out []string
	for _, w := range loosening {
		if allowed[w] {
			out = append(out, w)
		}
	}
	return out
}

// forbiddenBy are the loosening words that mount(8)'s user-mount options imply "no" of.
var forbiddenBy = map[string][]string{
	"user": {"suid", "dev", "exec"}, "users": {"suid", "dev", "exec"},
	"owner": {"suid", "dev"}, "group": {"suid", "dev"},
}

// Redacted is what every redacting type prints in place of a sensitive value.
const Redacted = "[REDACTED]"

// Secrets is a map of sensitive strings (CSI secrets, plugin environment). It redacts its values
// wherever it can be printed, logged or marshalled; Plain returns the values for the two places
// that need them: the store, which persists them, and internal/csi, which sends them.
type Secrets map[string]string

// String redacts every value.
func (s Secrets) String() string { return redactUnlessEmpty(len(s), "map[]") }

// GoString redacts every value, for %#v.
func (s Secrets) GoString() string { return s.String() }

// LogValue redacts every value in slog output.
func (s Secrets) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON keeps the keys, so a reader can see which secrets are set, and redacts the values.
func (s Secrets) MarshalJSON() ([]byte, error) {
	out := make(map[string]string, len(s))
	for k := range s {
		out[k] = Redacted
	}
	return marshalRedacted(s == nil, out)
}

// Plain returns the raw values. Only the store and internal/csi may call it.
func (s Secrets) Plain() map[string]string { return map[string]string(s) }

// MountFlags are mount flags. The CSI spec says they may carry credentials, so, like Secrets,
// they redact themselves in every output; Plain returns them for the store and internal/csi.
type MountFlags []string

// String redacts the flags.
func (f MountFlags) String() string { return redactUnlessEmpty(len(f), "[]") }

// GoString redacts the flags, for %#v.
func (f MountFlags) GoString() string { return f.String() }

// LogValue redacts the flags in slog output.
func (f MountFlags) LogValue() slog.Value { return slog.StringValue(f.String()) }

// MarshalJSON keeps the count and redacts each flag.
func (f MountFlags) MarshalJSON() ([]byte, error) {
	out := make([]string, len(f))
	for i := range out {
		out[i] = Redacted
	}
	return marshalRedacted(f == nil, out)
}

// redactUnlessEmpty is how a redacting type prints: empty as itself (so an unset value still
// reads as unset), anything else as Redacted.
func redactUnlessEmpty(n int, empty string) string {
	if n == 0 {
		return empty
	}
	return Redacted
}

// marshalRedacted marshals a redacting type's redacted copy, or null when the value is nil.
func marshalRedacted(isNil bool, redacted any) ([]byte, error) {
	if isNil {
		return []byte("null"), nil
	}
	return json.Marshal(redacted)
}

// Plain returns the raw flags. Only the store and internal/csi may call it.
func (f MountFlags) Plain() []string { return []string(f) }

// Topology is one accessibility segment set, e.g. {"zone": "us-east-1a"}.
type Topology struct {
	Segments map[string]string `json:"segments"`
}

// TopologyRequest says where a volume must (required) or should (preferred) be accessible.
type TopologyRequest struct {
	Required  []Topology `json:"required,omitempty"`
	Preferred []Topology `json:"preferred,omitempty"`
}

// Verb is what a volume spec is validated for: the rules differ between register and create.
type Verb string

// The validation verbs. VerbAny applies only the rules common to both.
const (
	VerbAny      Verb = ""
	VerbRegister Verb = "register"
	VerbCreate   Verb = "create"
)

// Volume is a CSI volume spec in Nomad's format.
type Volume struct {
	ID              string            `json:"id"`
	Namespace       string            `json:"namespace,omitempty"`
	Name            string            `json:"name,omitempty"`
	Type            string            `json:"type"`
	PluginID        string            `json:"plugin_id"`
	ExternalID      string            `json:"external_id,omitempty"`
	SnapshotID      string            `json:"snapshot_id,omitempty"`
	CloneID         string            `json:"clone_id,omitempty"`
	CapacityMin     int64             `json:"capacity_min,omitempty"` // bytes; 0 is unset
	CapacityMax     int64             `json:"capacity_max,omitempty"` // bytes; 0 is unset
	Capabilities    []Capability      `json:"capabilities"`
	MountOptions    *MountOptions     `json:"mount_options,omitempty"`
	TopologyRequest *TopologyRequest  `json:"topology_request,omitempty"`
	Secrets         Secrets           `json:"secrets,omitempty"`
	Parameters      map[string]string `json:"parameters,omitempty"`
	Context         map[string]string `json:"context,omitempty"`
	// Capacity is no spec field: a register spec's size as the plugin reported it (0 when it
	// never did), which Nomad's API takes at a registration and a volume file has no place
	// for (nomad.RegisterSpec, nomad.Client.APIVolume).
	Capacity int64 `json:"-"`
}

// DefaultNamespace is the namespace of a volume spec that names none, as in Nomad.
const DefaultNamespace = "default"

// PluginType says which CSI services a plugin serves.
type PluginType string

// The plugin types.
const (
	PluginMonolith   PluginType = "monolith"
	PluginController PluginType = "controller"
	PluginNode       PluginType = "node"
)

// Plugin is a CSI plugin declaration: `plugin "ID" { type = "monolith" socket = "..." }`.
type Plugin struct {
	ID               string        `json:"id"`
	Type             PluginType    `json:"type"`
	Socket           string        `json:"socket,omitempty"`            // monolith
	ControllerSocket string        `json:"controller_socket,omitempty"` // controller, or monolith with split sockets
	NodeSocket       string        `json:"node_socket,omitempty"`       // node, or monolith with split sockets
	Timeout          time.Duration `json:"timeout,omitempty"`           // long-RPC timeout; 0 means the default
	Exec             *Exec         `json:"exec,omitempty"`
}

// Exec is how volctl starts and supervises a plugin itself.
type Exec struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Env     Secrets  `json:"env,omitempty"` // plugin environments often carry credentials
}

// Group is a consumer of volumes shaped like a Nomad job group.
type Group struct {
	Name    string          `json:"name"`
	Count   int             `json:"count"`
	Volumes []VolumeRequest `json:"volumes"`
	Mounts  []VolumeMount   `json:"volume_mounts,omitempty"`
}

// VolumeRequest is a group's `volume "LABEL" { ... }` block.
type VolumeRequest struct {
	Name           string         `json:"name"`
	Type           string         `json:"type"`
	Source         string         `json:"source"`
	PerAlloc       bool           `json:"per_alloc,omitempty"`
	ReadOnly       bool           `json:"read_only,omitempty"`
	AccessMode     AccessMode     `json:"access_mode"`
	AttachmentMode AttachmentMode `json:"attachment_mode"`
	MountOptions   *MountOptions  `json:"mount_options,omitempty"`
}

// VolumeMount binds a requested volume's publish target to a host destination.
type VolumeMount struct {
	Volume          string `json:"volume"`
	Destination     string `json:"destination"`
	ReadOnly        bool   `json:"read_only,omitempty"`
	PropagationMode string `json:"propagation_mode,omitempty"` // private (default), host-to-task, bidirectional
}

// The volume_mount propagation modes.
const (
	PropagationPrivate       = "private"
	PropagationHostToTask    = "host-to-task"
	PropagationBidirectional = "bidirectional"
)

// ControllerEndpoint returns the socket of the plugin's controller service: ControllerSocket
// when given, else its one socket; "" for a node plugin. (A valid spec gives one or the other.)
func (p *Plugin) ControllerEndpoint() string {
	if p.Type == PluginNode {
		return ""
	}
	if p.ControllerSocket != "" {
		return p.ControllerSocket
	}
	return p.Socket
}

// NodeEndpoint returns the socket of the plugin's node service: NodeSocket when given, else
// its one socket; "" for a controller plugin. (A valid spec gives one or the other.)
func (p *Plugin) NodeEndpoint() string {
	if p.Type == PluginController {
		return ""
	}
	if p.NodeSocket != "" {
		return p.NodeSocket
	}
	return p.Socket
}

// Printing. fmt skips String and GoString when it reports a bad verb (a struct printed with
// %s or %d shows its fields raw), so every type that holds Secrets or MountFlags implements
// fmt.Formatter: it prints a copy in which those values are already replaced, whatever the
// verb. The copies' types have no methods, so printing them cannot recurse.

// Format prints the redacted form for every verb (%#v: GoString).
func (s Secrets) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String()) }

// Format prints the redacted form for every verb (%#v: GoString).
func (f MountFlags) Format(st fmt.State, verb rune) { formatRedacted(st, verb, f.String()) }

func formatRedacted(f fmt.State, verb rune, redacted string) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, redacted)
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), redacted)
}

func (s Secrets) redacted() Secrets {
	if s == nil {
		return nil
	}
	out := make(Secrets, len(s))
	for k := range s {
		out[k] = Redacted
	}
	return out
}

func (f MountFlags) redacted() MountFlags {
	if f == nil {
		return nil
	}
	out := make(MountFlags, len(f))
	for i := range out {
		out[i] = Redacted
	}
	return out
}

func (m *MountOptions) redacted() *MountOptions {
	if m == nil {
		return nil
	}
	return &MountOptions{FSType: m.FSType, MountFlags: m.MountFlags.redacted()}
}

// Format prints the options with the mount flags redacted.
func (m MountOptions) Format(f fmt.State, verb rune) {
	type mountOptions MountOptions
	fmt.Fprintf(f, fmt.FormatString(f, verb), mountOptions(*m.redacted()))
}

// Format prints the volume with its secrets and mount flags redacted.
func (v Volume) Format(f fmt.State, verb rune) {
	type volume Volume
	c := volume(v)
	c.Secrets = v.Secrets.redacted()
	c.MountOptions = v.MountOptions.redacted()
	fmt.Fprintf(f, fmt.FormatString(f, verb), c)
}

func (e *Exec) redacted() *Exec {
	if e == nil {
		return nil
	}
	return &Exec{Command: e.Command, Args: e.Args, Env: e.Env.redacted()}
}

// Format prints the exec block with its environment redacted.
func (e Exec) Format(f fmt.State, verb rune) {
	type exec Exec
	fmt.Fprintf(f, fmt.FormatString(f, verb), exec(*e.redacted()))
}

// Format prints the plugin with its exec environment redacted.
func (p Plugin) Format(f fmt.State, verb rune) {
	type plugin Plugin
	c := plugin(p)
	c.Exec = p.Exec.redacted()
	fmt.Fprintf(f, fmt.FormatString(f, verb), c)
}

// Format prints the request with its mount flags redacted.
func (r VolumeRequest) Format(f fmt.State, verb rune) {
	type volumeRequest VolumeRequest
	c := volumeRequest(r)
	c.MountOptions = r.MountOptions.redacted()
	fmt.Fprintf(f, fmt.FormatString(f, verb), c)
}

// Format prints the group with its requests' mount flags redacted.
func (g Group) Format(f fmt.State, verb rune) {
	type group Group
	c := group(g)
	c.Volumes = make([]VolumeRequest, len(g.Volumes))
	for i, r := range g.Volumes {
		r.MountOptions = r.MountOptions.redacted()
		c.Volumes[i] = r
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), c)
}
