package spec

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// emptySpec is the one error for a spec file with nothing in it: no bytes, blanks and
// comments only, or an empty JSON object. Decoded as any other, it got an error for each
// argument and block its kind needs (five for a volume to register), none saying that the
// input was empty, which is what went wrong when a generator piped into `volctl volume
// register -` failed and wrote nothing (TestAnEmptySpecSaysSo). kind is "" when the caller
// did not say which kind the file is (validate).
func emptySpec(filename string, src []byte, kind Kind, json bool) hcl.Diagnostics {
	what := emptyWhat(filename, src, json)
	var needs string
	switch kind {
	case KindVolume:
		needs = "A volume spec needs id, type, plugin_id and a capability block: `volctl init volume FILE` writes a commented one."
	case KindPlugin:
		needs = "A plugin spec needs a plugin block: `volctl init plugin FILE` writes a commented one."
	case KindGroup:
		needs = "A group spec needs a group block: `volctl init group FILE` writes a commented one."
	default:
		needs = "`volctl init volume|plugin|group FILE` writes a commented spec of each kind."
	}
	rng := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Empty spec", Subject: &rng, Extra: ownWords{},
		Detail: fmt.Sprintf("%s. %s", what, needs)}}
}

// emptyWhat says what is in a file with nothing in it, for emptySpec and emptyAgentConfig.
func emptyWhat(filename string, src []byte, json bool) string {
	name := filename
	if filename == StdinName {
		name = "Standard input"
	}
	var what string
	switch {
	case len(src) == 0:
		what = name + " is empty"
	case json:
		what = name + " holds an empty JSON object or array"
	default:
		what = name + " holds nothing but comments and blank lines"
	}
	if filename == StdinName && len(bytes.TrimSpace(src)) == 0 {
		what += ": the command writing to the pipe may have failed, or written nothing"
	}
	return what
}

// emptyAgentConfig is the warning for an agent config with nothing in it. The agent runs as
// without --config (a package may ship a config of comments only), but a config emptied by
// mistake (a template that failed, a truncated copy) was taken without a word, the agent
// running with none of the settings and plugins the operator gave it
// (TestAnEmptyAgentConfigIsWarnedOf).
func emptyAgentConfig(filename string, src []byte, json bool) hcl.Diagnostics {
	rng := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
	return hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "Empty agent config", Subject: &rng, Extra: ownWords{},
		Detail: fmt.Sprintf("%s. The agent runs with its default settings and the plugins already registered, as without --config: "+
			"is it the file you meant? An agent config holds an agent block and plugin blocks (docs/agent.md).", emptyWhat(filename, src, json))}}
}
