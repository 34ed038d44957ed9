package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote"
)

// How plugins are shown: the one-line verdict of a register, the status table, and the detail
// view of one plugin. plugin register, plugin status, status and quickstart share them.

// pluginHealthWords is the plugin's health in the engine's word: "healthy", "not ready",
// "unhealthy", or "unknown" before its first probe.
func pluginHealthWords(p engine.PluginInfo) string { return p.Health().String() }

// pluginRegisteredLine is what plugin register prints for each plugin, saying what the
// registration did (r): `Plugin "hp" registered: hostpath.csi.volctl.dev 0.1.0, healthy`,
// `Plugin "hp" unchanged: registered with this declaration; hostpath.csi.volctl.dev 0.1.0,
// healthy`, `Plugin "hp" updated: timeout changed; ...`.
func pluginRegisteredLine(p engine.PluginInfo, r engine.Registration) string {
	did := "registered: "
	switch r.Outcome {
	case engine.Unchanged:
		did = "unchanged: registered with this declaration; "
	case engine.Updated:
		did = "updated: " + strings.Join(r.Changed, ", ") + " changed; "
	}
	if p.Provider == "" {
		// A plugin the agent starts itself is recorded before it has ever run.
		return fmt.Sprintf("Plugin %q %snot fingerprinted yet (%s)", p.ID, did, p.LastError)
	}
	line := fmt.Sprintf("Plugin %q %s%s %s, %s", p.ID, did, p.Provider, p.Version, pluginHealthWords(p))
	if p.LastError != "" {
		line += " (" + p.LastError + ")"
	}
	return line
}

// writePluginTable prints the plugin list.
func writePluginTable(out io.Writer, plugins []engine.PluginInfo) error {
	t := newTable(out, "ID", "TYPE", "PROVIDER", "VERSION", "HEALTH", "LATENCY", "VOLUMES")
	for _, p := range plugins {
		t.row(p.ID, string(p.Type), p.Provider, p.Version, p.Health().String(),
			p.ProbeLatency.String(), strconv.Itoa(p.Volumes))
	}
	return t.render()
}

// capabilityChangeWords says what a plugin lost and gained: "lost STAGE_UNSTAGE_VOLUME;
// gained none".
func capabilityChangeWords(ch *engine.CapabilityChange) string {
	words := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	return "lost " + words(ch.Lost) + "; gained " + words(ch.Gained)
}

// writeCapabilityChanges says, under a plugin table, which plugins came back with other
// capabilities than they had, and what changed: the table shows none of them.
func writeCapabilityChanges(out io.Writer, plugins []engine.PluginInfo, now time.Time) {
	for _, p := range plugins {
		if ch := p.CapabilityChange; ch != nil {
			fmt.Fprintf(out, "Plugin %q came back with other capabilities %s: %s (`volctl events --kind plugin-capabilities` shows each change)\n",
				p.ID, ago(now, ch.At), capabilityChangeWords(ch))
		}
	}
}

// writeProbedOnly says, under a plugin table, which plugins declared with an exec block the agent
// probes only (their socket served by a process it did not start), and why: it neither stops
// nor restarts them, which the exec block alone would have the reader believe.
//
// It says too of each plugin whose record names an agent that is gone (killed before it could
// record its stop: Supervision.AgentGone) that no agent does what the record says.
func writeProbedOnly(out io.Writer, plugins []engine.PluginInfo, now time.Time) {
	for _, p := range plugins {
		sv := p.Supervision
		if sv != nil && sv.AgentGone {
			fmt.Fprintf(out, "Plugin %q: %s\n", p.ID, supervisionWords(sv, now))
			continue
		}
		if sv != nil && sv.Mode == engine.SupervisionProbed {
			fmt.Fprintf(out, "Plugin %q is not supervised despite its exec block: %s\n", p.ID, supervisionWords(sv, now))
		}
	}
}

// writePluginProblems says, under a plugin table, why each plugin that is not healthy is so
// and what that means, in the engine's words (engine.PluginHealth), as the dashboard does.
func writePluginProblems(out io.Writer, plugins []engine.PluginInfo) {
	for _, p := range plugins {
		switch h := p.Health(); h {
		case engine.PluginHealthy:
			continue
		case engine.PluginNotReady:
			fmt.Fprintf(out, "Plugin %q is %s: its Probe says so; claims on its volumes are refused until it is ready\n", p.ID, h)
			continue
		case engine.PluginUnknown:
			fmt.Fprintf(out, "Plugin %q health is %s: %s\n", p.ID, h, display.Escape(p.HealthWhy()))
		default:
			fmt.Fprintf(out, "Plugin %q is %s: %s\n", p.ID, h, display.Escape(p.HealthWhy()))
		}
		fmt.Fprintf(out, "  volumes using it cannot take claims until it passes a probe again (%s probes it)\n", shellquote.Command("volctl plugin status", p.ID))
	}
}

// writePluginDetail prints one plugin: its declaration, fingerprint and health, then its
// capabilities per service.
func writePluginDetail(out io.Writer, p engine.PluginInfo, now time.Time) error {
	maxVolumes := ""
	if p.NodeSocket != "" {
		maxVolumes = display.MaxVolumes(p.MaxVolumes)
	}
	pairs := [][2]string{
		{"ID", p.ID},
		{"Type", string(p.Type)},
		{"Provider", p.Provider},
		{"Version", p.Version},
		{"Controller Socket", p.ControllerSocket},
		{"Node Socket", p.NodeSocket},
		{"Supervised", display.YesNo(p.Supervised)},
		{"Node ID", p.NodeID},
		{"Max Volumes", maxVolumes},
		{"Topology", segmentsString(p.Topology)},
		{"Health", p.Health().String()},
		{"Probe Latency", p.ProbeLatency.String()},
		{"Probed", ago(now, p.ProbedAt)},
		{"Last Error", p.LastError},
		{"Volumes", strconv.Itoa(p.Volumes)},
	}
	if sv := p.Supervision; sv != nil {
		// What the agent does with it, which the exec block alone does not say: one whose
		// socket another process serves is probed only, never stopped or restarted.
		pairs = slices.Insert(pairs, slices.IndexFunc(pairs, func(kv [2]string) bool { return kv[0] == "Supervised" })+1,
			[2]string{"Supervision", supervisionWords(sv, now)})
	}
	if ch := p.CapabilityChange; ch != nil {
		pairs = append(pairs, [2]string{"Capabilities Changed", ago(now, ch.At) + ": " + capabilityChangeWords(ch)})
	}
	if err := keyValues(out, pairs...); err != nil {
		return err
	}
	fmt.Fprintln(out)
	return writeCapabilityTable(out, p.Capabilities.Plugin, p.Capabilities.Controller, p.Capabilities.Node)
}

// supervisionWords says what the agent does with a plugin's process, as it recorded it, and when:
// "the agent runs it (pid 12); ... (recorded by the agent, pid 7, 3m ago)".
func supervisionWords(sv *engine.Supervision, now time.Time) string {
	gone := ""
	if !sv.AgentGoneBy.IsZero() {
		gone = ", gone by " + ago(now, sv.AgentGoneBy)
	}
	return fmt.Sprintf("%s (recorded by the agent, pid %d, %s%s)", display.Escape(sv.Words()), sv.AgentPid, ago(now, sv.At), gone)
}

// writeCapabilityTable lists a plugin's capabilities by service, <none> for a service without any.
func writeCapabilityTable(out io.Writer, plugin, controller, node []string) error {
	t := newTable(out, "SERVICE", "CAPABILITY")
	for _, group := range []struct {
		service string
		names   []string
	}{
		{"plugin", plugin},
		{"controller", controller},
		{"node", node},
	} {
		if len(group.names) == 0 {
			t.row(group.service, "")
		}
		for _, n := range group.names {
			t.row(group.service, n)
		}
	}
	return t.render()
}

// segmentsString renders topology segments as "k=v, k2=v2", sorted by key.
func segmentsString(segments map[string]string) string { return display.Segments(segments) }
