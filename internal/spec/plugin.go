package spec

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/text/unicode/norm"
)

// MaxSocketPath is the longest unix socket path Linux accepts: sun_path holds 108 bytes,
// including the terminating NUL.
const MaxSocketPath = 107

// EndpointEnv is the variable volctl sets, to unix://SOCKET, in the environment of a plugin it
// starts from an exec block (the name CSI plugins conventionally read their endpoint from).
// Specs do no interpolation: args are passed exactly as written.
const EndpointEnv = "CSI_ENDPOINT"

var pluginFileSchema = &schema{
	what:   "a plugin spec",
	blocks: []blockSchema{{name: "plugin", labels: []string{"id"}}},
}

var pluginSchema = &schema{
	what:   "a plugin block",
	attrs:  []string{"type", "socket", "controller_socket", "node_socket", "timeout"},
	blocks: []blockSchema{{name: "exec"}},
}

var execSchema = &schema{
	what:  "an exec block",
	attrs: []string{"command", "args"},
	maps:  []string{"env"},
}

var pluginTypes = []PluginType{PluginMonolith, PluginController, PluginNode}

func (d *decoder) plugins(body hcl.Body) []*Plugin {
	c := d.content(body, pluginFileSchema)
	blocks := blocksOf(c, "plugin")
	if len(blocks) == 0 {
		d.errorf(c.MissingItemRange, "Missing plugin block",
			`A plugin spec needs at least one plugin block, e.g. plugin "hostpath" { type = "monolith" socket = "/run/volctl/hostpath.sock" }.`)
		return nil
	}
	return d.pluginBlocks(blocks)
}

// pluginBlocks decodes plugin blocks, joining the two halves of a plugin split in two.
func (d *decoder) pluginBlocks(blocks []*hcl.Block) []*Plugin {
	var out []*Plugin
	seen := map[string]int{} // ID -> index in out
	for _, b := range blocks {
		p := d.plugin(b)
		i, dup := seen[p.ID]
		if !dup {
			seen[p.ID] = len(out)
			out = append(out, p)
			continue
		}
		if !IsSplitHalf(out[i].Type) || !IsSplitHalf(p.Type) || out[i].Type == p.Type {
			d.errorf(b.LabelRanges[0], "Duplicate plugin", "The plugin %q is declared more than once in this file. "+
				"Only a plugin split in two is declared twice: one block of type \"controller\" and one of type \"node\".", p.ID)
			continue
		}
		merged, problem := JoinSplit(*out[i], *p)
		if problem != "" {
			d.errorf(b.LabelRanges[0], "Invalid split plugin", "%s", problem)
			continue
		}
		out[i] = &merged
	}
	return out
}

// IsSplitHalf reports whether a plugin of type t is one half of a plugin split in two
// processes: its controller or its node.
func IsSplitHalf(t PluginType) bool { return t == PluginController || t == PluginNode }

// JoinSplit joins the controller half and the node half of one plugin, declared as two plugin
// blocks with the same ID (as Nomad's controller and node plugin jobs share one plugin ID),
// into the one plugin volctl keeps: a monolith whose controller_socket and node_socket are the
// halves' sockets. The halves may come in either order. problem says, as a sentence, why they
// cannot be joined: halves on one socket are a monolith, halves with different timeouts
// disagree, and a half with an exec block is refused because the agent starts one process per
// plugin, on its first socket.
func JoinSplit(a, b Plugin) (joined Plugin, problem string) {
	if a.Type == PluginNode {
		a, b = b, a
	}
	if a.Type != PluginController || b.Type != PluginNode || a.ID != b.ID {
		return Plugin{}, fmt.Sprintf("plugin %q: only a controller half and a node half of one plugin ID can be joined.", b.ID)
	}
	ctrl, node := firstOf(a.ControllerSocket, a.Socket), firstOf(b.NodeSocket, b.Socket)
	switch {
	case ctrl == node:
		return Plugin{}, fmt.Sprintf("plugin %q: the controller and node halves both serve on %s; one process serving both services there is one plugin block of type \"monolith\".", a.ID, ctrl)
	case a.Exec != nil || b.Exec != nil:
		return Plugin{}, fmt.Sprintf("plugin %q: a half of a split plugin cannot have an exec block: volctl's agent starts one process per plugin. "+
			"Run the controller and node processes outside volctl (as Nomad runs its plugin jobs), or run one process that serves both sockets and declare it once, as type \"monolith\" with controller_socket, node_socket and the exec block.", a.ID)
	case a.Timeout != 0 && b.Timeout != 0 && a.Timeout != b.Timeout:
		return Plugin{}, fmt.Sprintf("plugin %q: the controller half's timeout is %s and the node half's %s; a plugin has one timeout: give it in one block, or the same in both.", a.ID, a.Timeout, b.Timeout)
	}
	joined = Plugin{ID: a.ID, Type: PluginMonolith, ControllerSocket: ctrl, NodeSocket: node, Timeout: a.Timeout}
	if joined.Timeout == 0 {
		joined.Timeout = b.Timeout
	}
	return joined, ""
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func (d *decoder) plugin(b *hcl.Block) *Plugin {
	// The label is read in NFC, as HCL reads the quoted plugin_id a volume names it by: a file
	// that spells the ID decomposed names the plugin a volume's file spelling it alike names.
	p := &Plugin{ID: norm.NFC.String(b.Labels[0])}
	d.checkNewID(b.LabelRanges[0], "plugin ID", "Invalid plugin ID", p.ID)
	c := d.content(b.Body, pluginSchema)
	attr := func(name string) *hcl.Attribute { return c.Attributes[name] }

	if s, ok := d.str(attr("type")); ok {
		p.Type = PluginType(s)
		valid := false
		for _, t := range pluginTypes {
			valid = valid || p.Type == t
		}
		if !valid {
			detail := fmt.Sprintf("%q is not a plugin type.", shown(s))
			if sug := suggest(s, joinable(pluginTypes)); sug != "" {
				detail += fmt.Sprintf(" Did you mean %q?", sug)
			}
			d.errorf(attr("type").Expr.Range(), "Invalid plugin type", "%s Valid types: %s (controller and node services in one process).", detail, joinStrings(pluginTypes))
		}
	} else if attr("type") == nil {
		d.missing(d.at(b), "type", `The argument "type" is required: "monolith", "controller" or "node".`)
	}

	sockets := map[string]string{}
	for _, name := range []string{"socket", "controller_socket", "node_socket"} {
		if s, ok := d.str(attr(name)); ok {
			if path, ok := d.socketPath(name, s, attr(name).Expr.Range()); ok {
				sockets[name] = path
			}
		}
	}
	d.pluginSockets(p, b, attr, sockets)

	if a := attr("timeout"); a != nil {
		if s, ok := d.str(a); ok {
			t, err := ParseDuration(s)
			switch {
			case err != nil:
				d.errorf(a.Expr.Range(), "Invalid timeout", "%v; write it like \"90s\" or \"2m\".", err)
			case CheckPluginTimeout(t) != nil:
				d.errorf(a.Expr.Range(), "Invalid timeout", "timeout: %v.", CheckPluginTimeout(t))
			default:
				p.Timeout = t
			}
		}
	}
	if eb := d.single(c, "exec", "a plugin block"); eb != nil {
		endpoint := p.Socket
		if endpoint == "" {
			endpoint = p.ControllerSocket // what the agent hands the plugin in CSI_ENDPOINT
		}
		p.Exec = d.exec(eb, endpoint)
	}
	return p
}

// servedSocket is the socket path that args give `volctl plugin serve hostpath` with --socket
// (servedFlag), read as serve reads it (SocketEndpoint: unix:PATH, unix://PATH, the scheme in
// any case); problem is serve's refusal of it, "" when it takes it. Only "unix://" was taken
// off, and unix:/PATH or UNIX:///PATH, which serve takes as PATH, was warned of as another
// socket (TestExecServingItsSocketAsAnotherUnixURLFormIsNotWarnedOf).
func servedSocket(args []string) (path, problem string) {
	v := servedFlag(args, "--socket")
	if v == "" {
		return "", ""
	}
	return SocketEndpoint("--socket", v)
}

// servedFlag is the value that args give the flag name of `volctl plugin serve hostpath`
// (FlagValue), when args run it and give one; "" otherwise.
func servedFlag(args []string, name string) string {
	if !servesHostpath(args) {
		return ""
	}
	return FlagValue(args, name)
}

// servedTwice is FlagTwice of args that run `volctl plugin serve hostpath`.
func servedTwice(args []string, name string) (first, other string, twice bool) {
	if !servesHostpath(args) {
		return "", "", false
	}
	return FlagTwice(args, name)
}

// servesHostpath reports whether args run `volctl plugin serve hostpath` (before any "--").
func servesHostpath(args []string) bool {
	flags := FlagArgs(args)
	for i := 0; i+2 < len(flags); i++ {
		if flags[i] == "plugin" && flags[i+1] == "serve" && flags[i+2] == "hostpath" {
			return true
		}
	}
	return false
}

// ServeFlags are the flags of `volctl plugin serve hostpath`, each with its value's type as
// pflag names it: "bool" (given alone, it is true), "int64" (read as Go reads an integer literal:
// 0x10 is 16, 010 is 8), "string". What FlagValue and FlagTwice read an exec block's arguments
// by (TestServeFlagsAreTheCommands keeps them the command's).
var ServeFlags = map[string]string{"--socket": "string", "--root": "string", "--node-id": "string", "--max-volumes": "int64", "--enable-attach": "bool"}

// flagValues are the values args give the flag name of `volctl plugin serve hostpath`, in
// order, as its flag parsing (pflag) reads them: --name VALUE (the value taken whatever it is,
// a dash first too) or --name=VALUE, a boolean's --name alone "true", another flag's value
// skipped, none after "--", which ends the flags.
func flagValues(args []string, name string) []string {
	args = FlagArgs(args)
	var vals []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			if k == name {
				vals = append(vals, v)
			}
			continue
		}
		kind, known := ServeFlags[a]
		boolean := kind == "bool"
		switch {
		case !known:
		case boolean && a == name:
			vals = append(vals, "true")
		case !boolean && i+1 < len(args):
			if a == name {
				vals = append(vals, args[i+1])
			}
			i++
		}
	}
	return vals
}

// FlagValue is the value args give the flag name of `volctl plugin serve hostpath`
// (flagValues), the last one given: "" when none. An exec block's arguments are read so
// wherever volctl says what they serve (servedFlag; export nomad's plugin job). Given twice
// with two values, serve refuses the arguments: FlagTwice says which.
func FlagValue(args []string, name string) string {
	vals := flagValues(args, name)
	if len(vals) == 0 {
		return ""
	}
	return vals[len(vals)-1]
}

// FlagTwice reports a serve flag that args give twice with two values, which `volctl plugin
// serve` refuses ("was given before as ...: give it once"), so that a plugin run with them
// exits at every start: the first value and the other. The same value twice is one (5 and 05,
// true and --enable-attach alone too), as serve takes it. Before, the last given was taken as
// what serve would read, and neither validate nor export nomad said that serve refuses them.
func FlagTwice(args []string, name string) (first, other string, twice bool) {
	vals := flagValues(args, name)
	for _, v := range vals[min(1, len(vals)):] {
		if !sameFlagValue(ServeFlags[name], vals[0], v) {
			return vals[0], v, true
		}
	}
	return "", "", false
}

// sameFlagValue reports whether two values of a flag of the kind given (ServeFlags) are one
// value to serve's parsing: an int's in decimal digits, as intVar reads them (10 and 010 are
// one; 0x10 is no value serve takes), a bool's as strconv reads one, a string's as text
// (TestServeFlagTwiceReadsMaxVolumesAsServeDoes).
func sameFlagValue(kind, a, b string) bool {
	switch kind {
	case "int", "int64":
		x, xerr := strconv.ParseInt(a, 10, 64)
		y, yerr := strconv.ParseInt(b, 10, 64)
		return xerr == nil && yerr == nil && x == y || a == b
	case "bool":
		x, xerr := strconv.ParseBool(a)
		y, yerr := strconv.ParseBool(b)
		return xerr == nil && yerr == nil && x == y || a == b
	}
	return a == b
}

// FlagArgs is args up to "--", after which pflag reads no flags.
func FlagArgs(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
}

// pluginSockets checks which socket arguments fit the plugin's type and fills them in.
// `socket` is the one socket of a monolith, a controller's controller socket or a node's node
// socket; a monolith may instead give both split sockets.
func (d *decoder) pluginSockets(p *Plugin, b *hcl.Block, attr func(string) *hcl.Attribute, sockets map[string]string) {
	notFor := func(name, why string) {
		d.errorf(attr(name).NameRange, "Argument not allowed", "%s %s", name, why)
	}
	switch p.Type {
	case PluginMonolith:
		switch {
		case attr("socket") != nil && (attr("controller_socket") != nil || attr("node_socket") != nil):
			name := "controller_socket"
			if attr(name) == nil {
				name = "node_socket"
			}
			notFor(name, "cannot be combined with socket: a monolith serves on one socket, or on split controller_socket and node_socket.")
		case attr("socket") != nil:
			p.Socket = sockets["socket"]
		case attr("controller_socket") != nil && attr("node_socket") != nil:
			p.ControllerSocket, p.NodeSocket = sockets["controller_socket"], sockets["node_socket"]
		case attr("controller_socket") != nil:
			d.missing(d.at(b), "node_socket", "A monolith with a controller_socket also needs a node_socket (or give one socket for both services).")
		case attr("node_socket") != nil:
			d.missing(d.at(b), "controller_socket", "A monolith with a node_socket also needs a controller_socket (or give one socket for both services).")
		default:
			d.missing(d.at(b), "socket", "A plugin needs a socket: the unix socket path it serves on.")
		}
	case PluginController, PluginNode:
		// One service: socket or the service's own socket argument, never the other service's.
		role, other, serves, dst := "controller", "node_socket", "a controller serves only the controller service", &p.ControllerSocket
		if p.Type == PluginNode {
			role, other, serves, dst = "node", "controller_socket", "a node plugin serves only the node service", &p.NodeSocket
		}
		own := role + "_socket"
		if attr(other) != nil {
			notFor(other, fmt.Sprintf("is not used by a %s plugin; %s (use type = \"monolith\" for both).", role, serves))
		}
		switch {
		case attr("socket") != nil && attr(own) != nil:
			notFor(own, fmt.Sprintf("repeats socket: on a %s plugin, socket is its %s socket. Give one of them.", role, role))
		case attr("socket") != nil:
			*dst = sockets["socket"]
		case attr(own) != nil:
			*dst = sockets[own]
		default:
			d.missing(d.at(b), own, fmt.Sprintf("A %s plugin needs its %s socket: socket or %s.", role, role, own))
		}
	}
}

// socketPath reads a unix socket path, written as a path or a unix: URL (SocketEndpoint), and
// checks it: absolute, and short enough for sun_path.
func (d *decoder) socketPath(name, s string, rng hcl.Range) (string, bool) {
	path, problem := SocketEndpoint(name, s)
	if problem == "" {
		problem = socketPathProblem(name, path)
	}
	if problem != "" {
		d.errorf(rng, "Invalid socket path", "%s", problem)
		return "", false
	}
	return path, true
}

// SocketEndpoint reads a plugin's socket as users write it (in a spec, a flag, CSI_ENDPOINT)
// and returns its path, or, as a sentence naming the argument name, why it names none.
// Besides a path, the URL forms Kubernetes' and Nomad's configs hold are read: unix:///PATH
// and unix:/PATH, the path absolute ("unix://csi/csi.sock" is refused, not read as the
// relative "csi/csi.sock" one plugin takes it for or as host "csi" gRPC does). Another
// scheme (tcp://, dns:) or a host:port is refused, saying why: volctl reaches its plugins on
// unix sockets on this host; taken as a path, each was looked for as a file in the working
// directory, "does not exist (is the plugin running?)". A path is returned as written, relative
// or not, for the caller's rule (register wants an absolute one, probe takes the working
// directory's).
//
// One with a blank before or after it or a control character is refused, saying so (StrayText):
// CSI_ENDPOINT="unix:///run/hp.sock " from a template served on a socket whose name ends in a
// blank, which nothing registered found, and " unix:///run/hp.sock" was called a network
// address (TestSocketEndpointWithStrayTextIsRefused).
func SocketEndpoint(name, s string) (path, problem string) {
	if strings.TrimSpace(s) != s { // before the scheme is read: " unix" is none
		return "", strayEndpoint(name, s)
	}
	path, problem = socketEndpoint(name, s)
	if problem == "" && StrayText(s) != "" {
		return "", strayEndpoint(name, s)
	}
	return path, problem
}

func strayEndpoint(name, s string) string {
	return fmt.Sprintf("%s %q %s: write the socket's path without it.", name, s, StrayText(s))
}

func socketEndpoint(name, s string) (path, problem string) {
	scheme, rest, hasScheme := strings.Cut(s, ":")
	switch {
	case !hasScheme || strings.Contains(scheme, "/"):
		return s, "" // a path, perhaps with a colon in a file name
	case strings.EqualFold(scheme, "unix"):
		path = strings.TrimPrefix(rest, "//")
		switch {
		case path == "":
			return "", fmt.Sprintf("%s %s names no socket path: write unix:///PATH or the absolute PATH.", name, QuoteName(s))
		case !filepath.IsAbs(path):
			read := "a path relative to the working directory"
			if strings.HasPrefix(rest, "//") {
				read = fmt.Sprintf("gRPC reads %q as a host, some plugins as a directory of their working directory", strings.SplitN(path, "/", 2)[0])
			}
			return "", fmt.Sprintf("%s %s: a unix: URL must name the socket's absolute path (%s): write unix:///PATH or the absolute PATH, e.g. %s.",
				name, QuoteName(s), read, QuoteName("/"+path))
		}
		return path, ""
	case strings.HasPrefix(rest, "//") || isPort(rest):
		return "", fmt.Sprintf("%s %s is a network address, and only unix sockets are supported: volctl and its CSI plugins meet on this host, on the socket the plugin serves on; give its path (PATH or unix:///PATH).", name, QuoteName(s))
	}
	return s, "" // "a:b.sock", a file name with a colon
}

// isPort reports a TCP port number: what follows the colon of host:port.
func isPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n > 0
}

// QuoteName is a name from a user or a plugin (a path, a socket, an ID) as a message shows it:
// as it is, or, when it holds a character that does not print as itself (a newline, an escape,
// a zero width space: display.Escape's), quoted with those written out ("a\nb"): printed raw, a
// newline in a socket's path made the rest of the path read as a line of its own, and an
// escape sequence recoloured the terminal. escapeLines, which errors pass through, keeps
// newlines: it cannot tell a name's from the message's own.
func QuoteName(s string) string {
	if EscapeControl(s) == s {
		return s
	}
	return strconv.Quote(s)
}

// SocketPathProblem says what is wrong with a unix socket path, named as name in the sentence,
// or "" when nothing is: for command-line flags and listeners, in the words a spec gets.
func SocketPathProblem(name, s string) string { return socketPathProblem(name, s) }

// socketPathProblem says what is wrong with a unix socket path given as the argument name,
// as a sentence, or "" when nothing is. Specs and command-line flags share it.
func socketPathProblem(name, s string) string {
	switch {
	case s == "":
		return fmt.Sprintf("%s must not be empty.", name)
	case !filepath.IsAbs(s):
		return fmt.Sprintf("%s %q must be an absolute path.", name, s)
	case len(s) > MaxSocketPath:
		return fmt.Sprintf("%s is %d bytes long; a unix socket path must fit in sun_path, at most %d bytes. Use a shorter directory, such as /run/volctl.", name, len(s), MaxSocketPath)
	case strings.ContainsRune(s, 0):
		return fmt.Sprintf("%s must not contain a NUL byte.", name)
	}
	return ""
}

// commandProblem says, as a sentence, what is wrong with an exec block's command, or "" when
// nothing is. The agent runs it from its own working directory, "/" under systemd, so a
// relative path ("./bin/plugin", "bin/plugin", " /usr/bin/x" with a blank before it) ran from
// a shell in the file's directory and failed under systemd, the agent retrying it for ever
// (TestExecCommandIsAbsoluteOrAName); a name alone is looked up in the agent's PATH, as a
// shell does.
func commandProblem(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "command must not be empty."
	case StrayText(s) != "":
		return fmt.Sprintf("command %q %s: write the program's path without it.", s, StrayText(s))
	}
	return ""
}

// relativeCommand is the warning for an exec block's command that is a relative path
// ("./bin/plugin", "bin/plugin"), or "": the agent looks it up from its own working directory,
// "/" under systemd unless its unit sets WorkingDirectory=, not this file's, so a config that
// ran from a shell in its directory fails under systemd, the agent retrying the start for
// ever. It is a warning, not an error: a unit that sets WorkingDirectory= (or an agent always
// started from one directory) runs such a command as it always did.
func relativeCommand(s string) string {
	if filepath.IsAbs(s) || !strings.Contains(s, "/") {
		return ""
	}
	return fmt.Sprintf("command %q is a relative path, which the agent looks up from its own working directory (\"/\" under systemd, unless its unit sets WorkingDirectory=), not this file's: "+
		"write the absolute path, or the program's name alone, which the agent looks up in its PATH.", s)
}

// exec reads an exec block; endpoint is the plugin's socket the agent hands it in
// CSI_ENDPOINT.
func (d *decoder) exec(b *hcl.Block, endpoint string) *Exec {
	c := d.content(b.Body, execSchema)
	e := &Exec{}
	if s, ok := d.str(c.Attributes["command"]); ok {
		if problem := commandProblem(s); problem != "" {
			d.errorf(c.Attributes["command"].Expr.Range(), "Invalid command", "%s", problem)
		} else if warning := relativeCommand(s); warning != "" {
			d.warnf(c.Attributes["command"].Expr.Range(), "Relative command", "%s", warning)
		}
		e.Command = s
	} else if c.Attributes["command"] == nil {
		d.missing(d.at(b), "command", `An exec block needs the command to run, e.g. command = "/usr/local/bin/volctl".`)
	}
	if args, ok := d.strList(c.Attributes["args"]); ok {
		e.Args = args
		// `volctl plugin serve` refuses a flag given twice with two values: the plugin would
		// exit at every start, and the agent restart it for ever
		// (TestExecGivingAServeFlagTwiceIsWarnedOf).
		twice := map[string]bool{}
		for _, name := range slices.Sorted(maps.Keys(ServeFlags)) {
			if first, other, ok := servedTwice(args, name); ok {
				twice[name] = true
				d.warnf(c.Attributes["args"].Expr.Range(), "Flag given twice",
					"The arguments give volctl's hostpath plugin %s twice, as %q and %q, and `volctl plugin serve` refuses a flag given twice with two values: "+
						"the plugin would exit at every start, and the agent restart it for ever. Give it once.", name, first, other)
			}
		}
		// volctl's own plugin serves on its --socket rather than CSI_ENDPOINT: given another
		// path than the block's socket, the agent finds nothing on the socket it probes, and
		// restarts the plugin for ever (TestExecServingAnotherSocketIsWarnedOf). Before, this
		// was valid, and `volctl init plugin`'s example gives the path twice.
		served, problem := servedSocket(args)
		if !twice["--socket"] && problem != "" {
			d.warnf(c.Attributes["args"].Expr.Range(), "Plugin socket refused",
				"The arguments run volctl's hostpath plugin with a --socket `volctl plugin serve` refuses (%s): the plugin would exit at every start, and the agent restart it for ever. "+
					"Leave --socket out of the arguments (the agent sets %s), or write the socket's absolute path.", problem, EndpointEnv)
		}
		if !twice["--socket"] && problem == "" && served != "" && endpoint != "" && filepath.Clean(served) != filepath.Clean(endpoint) {
			d.warnf(c.Attributes["args"].Expr.Range(), "Plugin serves another socket",
				"The arguments run volctl's hostpath plugin with --socket %q, where it serves instead of the plugin's socket %q, which the agent hands it in %s and probes: "+
					"the agent would find nothing there and restart the plugin for ever. Leave --socket out of the arguments (the agent sets %s), or give both the same path.",
				served, endpoint, EndpointEnv, EndpointEnv)
		}
		// Its --root, relative, is read from the agent's working directory, as a relative
		// command is: "/" under systemd, and `export nomad` cannot tell which directory it
		// served (TestExecServingARelativeRootIsWarnedOf).
		root := servedFlag(args, "--root")
		// Refused by `volctl plugin serve` (a blank around it, a "~" no shell expanded), the
		// plugin exits at every start, and the agent restarts it for ever
		// (TestExecServingARootServeRefusesIsWarnedOf).
		if !twice["--root"] && root != "" && (strings.TrimSpace(root) != root || strings.HasPrefix(root, "~")) {
			d.warnf(c.Attributes["args"].Expr.Range(), "Plugin root refused",
				"The arguments run volctl's hostpath plugin with --root %q, which `volctl plugin serve` refuses (a blank before or after it, or a \"~\" that no shell expands here): "+
					"the plugin would exit at every start, and the agent restart it for ever. Write the absolute path without it.", root)
			root = ""
		}
		if !twice["--root"] && root != "" && !filepath.IsAbs(root) {
			d.warnf(c.Attributes["args"].Expr.Range(), "Relative plugin root",
				"The arguments run volctl's hostpath plugin with --root %q, a relative path, which the plugin reads from the agent's working directory (\"/\" under systemd, unless its unit sets WorkingDirectory=), not this file's: "+
					"write the absolute path of the directory that holds the volumes.", root)
		}
	}
	if m := d.stringMap(c, "env"); m != nil {
		for _, en := range m.entries {
			switch {
			case en.key == "" || strings.ContainsAny(en.key, "=\x00"):
				d.errorf(en.keyRange, "Invalid environment variable", "%q is not a valid environment variable name: it must be non-empty and contain no \"=\" or NUL.", en.key)
			case strings.ContainsRune(en.value, 0):
				// The value may be a credential: name the key only.
				d.errorf(en.valueRange, "Invalid environment variable", "The value of %s contains a NUL byte.", en.key)
			case en.key == EndpointEnv:
				d.warnf(en.keyRange, "Environment variable overridden", "volctl sets %s to the plugin's socket (unix://PATH) itself; this value is ignored.", EndpointEnv)
			}
		}
		env := m.values()
		delete(env, EndpointEnv)
		e.Env = Secrets(env)
	}
	return e
}

// pluginTimeoutBounds hold a plugin's timeout, the long RPCs'. Before, it had only to be more
// than zero: timeout = "1ns" (or plugin register --timeout 1ns) failed every create, publish
// and stage at once, "did not complete the gRPC handshake within 1ns (a hung plugin, or not a
// CSI plugin)", blaming the plugin, and left the volume "creating", which neither reconcile
// nor the same create could finish under that timeout (TestPluginTimeoutOutsideItsBoundsIsRefused).
var pluginTimeoutBounds = DurationBounds{time.Second, 24 * time.Hour, "a long RPC, a create or a publish, needs that long"}

// CheckPluginTimeout refuses a plugin timeout outside its bounds, saying them; the caller
// names the setting (the plugin block's timeout, --timeout).
func CheckPluginTimeout(d time.Duration) error { return pluginTimeoutBounds.Check(d) }

// ClampPluginTimeout is a stored plugin timeout as used: 0 (the default) as is, and one
// outside its bounds, which an older volctl took (any duration more than zero), moved to the
// nearer bound, with CheckPluginTimeout's error saying why; nil when it is within them.
func ClampPluginTimeout(d time.Duration) (time.Duration, error) {
	err := pluginTimeoutBounds.Check(d)
	switch {
	case d == 0 || err == nil:
		return d, nil
	case d < pluginTimeoutBounds.Least:
		return pluginTimeoutBounds.Least, err
	}
	return pluginTimeoutBounds.Most, err
}
