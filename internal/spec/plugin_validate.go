package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Validate checks a Plugin built in code rather than parsed from a file (volctl plugin
// register --id --socket ...) by the rules a plugin block follows: a safe ID, a known type,
// the sockets that type takes, each absolute and short enough for sun_path, and a timeout that
// is not negative, and within its bounds when given (CheckPluginTimeout). It returns every problem at once, joined, each naming the plugin.
func (p *Plugin) Validate() error {
	var errs []error
	add := func(format string, args ...any) {
		msg := strings.TrimSuffix(fmt.Sprintf(format, args...), ".")
		errs = append(errs, fmt.Errorf("plugin %q: %s", p.ID, msg))
	}
	if err := ValidateNewID("plugin ID", p.ID); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(pluginTypes, p.Type) {
		add("type %q is not a plugin type; valid types: %s", p.Type, joinStrings(pluginTypes))
	}

	socket, ctrl, node := p.Socket != "", p.ControllerSocket != "", p.NodeSocket != ""
	switch p.Type {
	case PluginMonolith:
		switch {
		case socket && (ctrl || node):
			add("socket cannot be combined with controller_socket or node_socket: a monolith serves on one socket, or on split controller and node sockets")
		case !socket && ctrl != node:
			add("a monolith with split sockets needs both controller_socket and node_socket (or one socket for both services)")
		case !socket && !ctrl:
			add("a socket is required: the unix socket path the plugin serves on")
		}
	case PluginController:
		switch {
		case node:
			add("node_socket is not used by a controller plugin (use type monolith for both services)")
		case socket && ctrl:
			add("socket and controller_socket both given: on a controller plugin they are the same socket; give one")
		case !socket && !ctrl:
			add("a controller plugin needs its controller socket")
		}
	case PluginNode:
		switch {
		case ctrl:
			add("controller_socket is not used by a node plugin (use type monolith for both services)")
		case socket && node:
			add("socket and node_socket both given: on a node plugin they are the same socket; give one")
		case !socket && !node:
			add("a node plugin needs its node socket")
		}
	}
	for _, s := range []struct{ name, path string }{
		{"socket", p.Socket}, {"controller_socket", p.ControllerSocket}, {"node_socket", p.NodeSocket},
	} {
		if s.path == "" {
			continue
		}
		if problem := socketPathProblem(s.name, s.path); problem != "" {
			add("%s", problem)
		}
	}
	if p.Timeout < 0 {
		add("timeout must be more than zero, got %s", p.Timeout)
	} else if err := CheckPluginTimeout(p.Timeout); p.Timeout != 0 && err != nil {
		add("timeout: %v", err)
	}
	if p.Exec != nil {
		if problem := commandProblem(p.Exec.Command); problem != "" {
			add("exec %s", problem)
		}
	}
	return errors.Join(errs...)
}
