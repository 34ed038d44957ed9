package spec

import (
	"errors"
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

// DurationBounds are the least and the most a duration setting may be, and why the least:
// an agent setting's, a plugin's timeout, and the duration flags of the commands
// (internal/cli: boundedDurationVar).
type DurationBounds struct {
	Least, Most time.Duration
	Why         string
}

// Check refuses d outside b, saying the bounds (the caller names the setting).
func (b DurationBounds) Check(d time.Duration) error {
	switch {
	case d <= 0:
		return errors.New("must be more than zero")
	case d < b.Least:
		return fmt.Errorf("%s is less than the least it may be, %s (%s)", d, b.Least, b.Why)
	case d > b.Most:
		return fmt.Errorf("%s is more than the most it may be, %s", d, b.Most)
	}
	return nil
}

// agentSettingBounds holds, by setting, the least and the most it may be, and why the least
// (CheckAgentSetting). Before, a setting had only to be more than zero: probe_interval =
// "1ns" probed a plugin in a busy loop, gc_interval = "1ns" ran a claim GC pass, a write
// transaction, back to back, stop_timeout = "1ns" sent SIGKILL with SIGTERM, and
// stop_timeout = "1000000h" let a stopping agent wait 114 years on a plugin that ignores
// SIGTERM (TestAgentSettingsOutsideTheirBoundsAreRefused).
var agentSettingBounds = map[string]DurationBounds{
	"probe_interval":       {100 * time.Millisecond, time.Hour, "probing more often keeps the agent and the plugin busy"},
	"probe_interval_ready": {100 * time.Millisecond, 24 * time.Hour, "probing more often keeps the agent and the plugin busy"},
	"health_timeout":       {time.Second, 24 * time.Hour, "a plugin needs that long to start before it is restarted"},
	"gc_interval":          {time.Second, 24 * time.Hour, "each claim GC pass writes the state"},
	"reconcile_interval":   {100 * time.Millisecond, 24 * time.Hour, "each reconcile pass asks every plugin"},
	"stop_timeout":         {time.Second, time.Hour, "a plugin needs that long to stop cleanly before SIGKILL"},
}

// CheckAgentSetting refuses a duration the agent setting name may not be, saying its bounds
// and why: the config file's diagnostics and the agent's flags both say it so. The caller
// names the setting (the config's attribute, the flag).
func CheckAgentSetting(name string, d time.Duration) error {
	b, ok := agentSettingBounds[name]
	if !ok {
		return fmt.Errorf("%q is no agent setting", name)
	}
	return b.Check(d)
}

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
			d.errorf(d.at(b), "Duplicate agent block", "The agent block is already given at %s; merge the two.", d.at(agents[0]))
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
		case CheckAgentSetting(name, dur) != nil:
			bad(fmt.Sprintf("%s: %v.", name, CheckAgentSetting(name, dur)))
		default:
			settings[name] = dur
		}
	}
}
