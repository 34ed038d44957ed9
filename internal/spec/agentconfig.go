package spec

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// AgentConfig is an agent config file (docs/agent.md): the settings its agent block gives and
// its plugin blocks, which are plugin specs. It is read like any spec file: HCL2, the HCL1
// forms Nomad's files use, or JSON.
//
//	agent {
//	  probe_interval       = "5s"
//	  probe_interval_ready = "30s"
//	  health_timeout       = "30s"
//	  gc_interval          = "1m"
//	  reconcile_interval   = "1m"
//	  stop_timeout         = "10s"
//	}
//	plugin "hostpath" { type = "monolith", socket = "/run/volctl/hostpath.sock", exec { ... } }
type AgentConfig struct {
	// Settings holds the durations the agent blocks give, by their names in AgentSettings;
	// a setting no block gives is absent.
	Settings map[string]time.Duration
	Plugins  []*Plugin
}

// AgentSettings are the settings an agent block may give; the restart backoff is left to the
// defaults (tests set it in code).
var AgentSettings = []string{"probe_interval", "probe_interval_ready", "health_timeout", "gc_interval", "reconcile_interval", "stop_timeout"}

var agentConfigSchema = &schema{
	what:   "an agent config",
	blocks: []blockSchema{{name: "agent"}, {name: "plugin", labels: []string{"id"}}},
}

var agentBlockSchema = &schema{
	what:  "an agent block",
	attrs: AgentSettings,
}

// ParseAgentConfig parses and validates an agent config. It returns every problem at once as
// diagnostics with source ranges; the config is nil when any of them is an error.
func (p *Parser) ParseAgentConfig(filename string, src []byte) (*AgentConfig, hcl.Diagnostics) {
	f, diags := p.parse(filename, src, kindAgent, VerbAny)
	if f == nil {
		return nil, diags
	}
	return f.agent, diags
}

// agentConfig decodes an agent config's body: the agent blocks' settings, merged in order, and
// the plugin blocks as a plugin spec's.
func (d *decoder) agentConfig(body hcl.Body) *AgentConfig {
	c := d.content(body, agentConfigSchema)
	out := &AgentConfig{Settings: map[string]time.Duration{}}
	agents := blocksOf(c, "agent")
	for i, b := range agents {
		if i > 0 {
			d.errorf(b.DefRange, "Duplicate agent block", "The agent block is already given at %s; merge the two.", agents[0].DefRange)
		}
		d.agentSettings(b, out.Settings)
	}
	if plugins := blocksOf(c, "plugin"); len(plugins) > 0 {
		out.Plugins = d.pluginBlocks(plugins)
	}
	return out
}

// agentSettings reads an agent block's durations into settings.
func (d *decoder) agentSettings(b *hcl.Block, settings map[string]time.Duration) {
	c := d.content(b.Body, agentBlockSchema)
	for _, name := range AgentSettings {
		attr := c.Attributes[name]
		if attr == nil {
			continue
		}
		v, diags := eval(attr.Expr)
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		bad := func(detail string) { d.errorf(attr.Expr.Range(), "Invalid duration", "%s", detail) }
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			bad(fmt.Sprintf("%s must be a duration string, like \"5s\" or \"1m\".", name))
			continue
		}
		dur, err := ParseDuration(v.AsString())
		switch {
		case err != nil:
			bad(fmt.Sprintf("%v; write %s like \"5s\" or \"1m\".", err, name))
		case dur <= 0:
			bad(fmt.Sprintf("%s must be more than zero.", name))
		default:
			settings[name] = dur
		}
	}
}
