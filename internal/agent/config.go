package agent

import (
	"github.com/volctl/volctl/internal/spec"
)

// File is an agent config file: the settings of its agent block and the plugin blocks (the
// plugin spec format) to register at start. internal/spec parses it (spec.Parser.ParseAgentConfig).
type File struct {
	Settings Settings
	Plugins  []spec.Plugin
}

// NewFile makes a File of a parsed agent config.
func NewFile(c *spec.AgentConfig) *File {
	out := &File{}
	for _, f := range out.Settings.fields() {
		if d, ok := c.Settings[f.name]; ok {
			*f.d = d
		}
	}
	for _, p := range c.Plugins {
		out.Plugins = append(out.Plugins, *p)
	}
	return out
}
