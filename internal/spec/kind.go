package spec

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/volctl/volctl/internal/shellquote"
)

// StdinName is how a spec read from standard input is named in diagnostics. Messages that
// show a command to run write it as "-" instead.
const StdinName = "<stdin>"

// kindAgent is an agent config (docs/agent.md): not a spec kind, but a file people hand to
// spec commands by mistake, since it holds plugin blocks too.
const kindAgent Kind = "agent"

// kindJob is a Nomad job file: not a spec kind either, but one a user moving between Nomad and
// volctl hands to group run or validate, since its groups hold the volume blocks a group spec
// does.
const kindJob Kind = "job"

// topName is one top-level argument or block of a file.
type topName struct {
	name  string
	rng   hcl.Range // the argument's name, or the block's type
	block bool      // a native block; JSON has only properties, which count as both
}

// topLevel lists body's top-level arguments and blocks in source order.
func topLevel(body hcl.Body) []topName {
	var out []topName
	if sb, ok := body.(*hclsyntax.Body); ok {
		for _, a := range sb.Attributes {
			out = append(out, topName{name: a.Name, rng: a.NameRange})
		}
		for _, b := range sb.Blocks {
			out = append(out, topName{name: b.Type, rng: b.TypeRange, block: true})
		}
	} else {
		attrs, _ := body.JustAttributes()
		for _, a := range attrs {
			out = append(out, topName{name: a.Name, rng: a.NameRange, block: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rng.Start.Byte < out[j].rng.Start.Byte })
	return out
}

// signature is what tells one kind of file at its top level.
type signature struct {
	// signals are names that, at the top level, only this kind has: one of them makes a file
	// recognisably of this kind. blockSignals must be blocks (in native syntax).
	signals      []string
	blockSignals bool
	// names are every top-level name this kind uses, or that its own body's names would be
	// if written at the top level by mistake (a plugin block's socket, say): a file using one
	// of them is a broken file of this kind, and gets its detailed diagnostics.
	names []string
}

// signatures is built at the first spec read, not at every process's start: `volctl version`
// and the commands that read no spec do not pay for it (BENCHMARKS.md, Start-up).
var signatures = sync.OnceValue(func() map[Kind]*signature {
	return map[Kind]*signature{
		KindVolume: {
			// id, name, type and namespace could be anything's.
			signals: []string{
				"plugin_id", "external_id", "snapshot_id", "clone_id", "capacity_min", "capacity_max",
				"access_mode", "attachment_mode", "capability", "mount_options", "topology_request",
				"secrets", "parameters", "context",
			},
			names: append(volumeSchema.names(), slices.Sorted(maps.Keys(hostOnly))...),
		},
		KindPlugin: {
			signals:      []string{"plugin"},
			blockSignals: true,
			names:        append([]string{"plugin"}, pluginSchema.names()...),
		},
		KindGroup: {
			signals:      []string{"group"},
			blockSignals: true,
			names:        append([]string{"group"}, groupSchema.names()...),
		},
		kindAgent: {
			signals:      []string{"agent"},
			blockSignals: true,
			names:        []string{"agent", "plugin"},
		},
		kindJob: {
			signals:      []string{"job"},
			blockSignals: true,
			names:        []string{"job"},
		},
	}
})

// otherKinds is the order in which a file's kind is looked for: an agent config first, since it
// holds plugin blocks as well.
var otherKinds = []Kind{kindAgent, kindJob, KindPlugin, KindGroup, KindVolume}

// signal returns the first of names that signals the kind, if any does.
func (s *signature) signal(names []topName) (topName, bool) {
	for _, n := range names {
		if slices.Contains(s.signals, n.name) && (n.block || !s.blockSignals) {
			return n, true
		}
	}
	return topName{}, false
}

// detectKind tells a plugin or group spec from a volume spec by its top-level names, as
// `volctl validate` does: plugin blocks make a plugin spec, a group block a group spec,
// anything else a volume spec.
func detectKind(names []topName) Kind {
	for _, k := range []Kind{KindPlugin, KindGroup} {
		if _, ok := signatures()[k].signal(names); ok {
			return k
		}
	}
	return KindVolume
}

// otherKind reports whether a file of these top-level names is recognisably of another kind
// than want: it has that kind's signal (a plugin, group or agent block; an argument only a
// volume spec has) and nothing of want's own that the other kind does not also have. A broken
// file of kind want is not another kind: it keeps its detailed diagnostics. It returns the
// other kind and the name that tells it.
func otherKind(names []topName, want Kind) (Kind, topName, bool) {
	for _, k := range otherKinds {
		if k == want {
			continue
		}
		other := signatures()[k]
		at, ok := other.signal(names)
		if !ok {
			continue
		}
		mine := false
		for _, n := range names {
			if slices.Contains(signatures()[want].names, n.name) && !slices.Contains(other.names, n.name) {
				mine = true
				break
			}
		}
		if !mine {
			return k, at, true
		}
	}
	return "", topName{}, false
}

// wrongKind reports a file of another kind than want with one error at the name that tells
// it, saying which command takes it; validate is set for `volctl validate`, which has no one
// kind. names are the file's top-level names, which tell a volume spec's verb.
func (d *decoder) wrongKind(filename string, want, other Kind, at topName, names []topName, validate bool) {
	file := shellWord(filename)
	var use string
	switch other {
	case KindPlugin:
		use = fmt.Sprintf(`register it with "volctl plugin register %s"`, file)
	case KindGroup:
		use = fmt.Sprintf(`run it with "volctl group run %s"`, file)
	case kindAgent:
		use = fmt.Sprintf(`use it with "volctl agent --config %s"`, file)
	case kindJob:
		// Nomad's volume_mount is a task's, its destination inside the task; volctl's is the
		// group's, its destination on this host.
		use = `volctl runs a group spec, one group block of the job's (its volume blocks as they are, count) with a volume_mount block beside them for each task's, ` +
			`its destination a path on this host ("volctl init group" writes an example)`
		if validate {
			d.errorf(at.rng, "Not a volume, plugin or group spec", "This is a Nomad job file, which volctl does not read: %s.", use)
			return
		}
	default:
		has := func(name string) bool {
			return slices.ContainsFunc(names, func(n topName) bool { return n.name == name })
		}
		switch {
		case has("external_id"): // only register takes it
			use = fmt.Sprintf(`register it with "volctl volume register %s"`, file)
		case has("snapshot_id") || has("clone_id"): // only create takes them
			use = fmt.Sprintf(`create it with "volctl volume create %s"`, file)
		default:
			use = fmt.Sprintf(`register it with "volctl volume register %s" or create it with "volctl volume create %s"`, file, file)
		}
	}
	if validate && other == kindAgent {
		// validate reads every kind of spec: only an agent config is another kind to it.
		d.errorf(at.rng, "Not a volume, plugin or group spec",
			`This is an agent config, which volctl validate does not check: "volctl agent --config %s" checks it (and starts the agent when it is valid).`, file)
		return
	}
	d.errorf(at.rng, "Not "+kindNoun(want),
		"This is %s, not %s: %s.", kindNoun(other), kindNoun(want), use)
}

// kindNoun names a kind with its article: "a volume spec", "an agent config".
func kindNoun(k Kind) string {
	switch k {
	case kindAgent:
		return "an agent config"
	case kindJob:
		return "a Nomad job file"
	}
	return "a " + string(k) + " spec"
}

// shellWord writes a file name as it would be typed in a shell command: standard input as
// "-", a name with characters the shell would interpret in single quotes.
func shellWord(name string) string {
	if name == StdinName {
		return "-"
	}
	if strings.HasPrefix(name, "-") {
		name = "./" + name
	}
	return shellquote.Arg(name)
}
