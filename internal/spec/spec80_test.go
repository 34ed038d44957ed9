package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// An exec block that runs volctl's hostpath plugin with --socket written as unix:/PATH or with
// the scheme in capitals (UNIX:///PATH) serves on the plugin's own socket: `volctl plugin serve
// hostpath` reads its --socket with SocketEndpoint, which takes both forms (as Kubernetes' and
// Nomad's configs write them) as PATH. validate, the agent's config and `plugin register`
// nonetheless warn "Plugin serves another socket ... the agent would find nothing there and
// restart the plugin for ever", a false alarm telling the user to change a working config:
// servedSocket only strips a literal "unix://" prefix before comparing. The served socket must
// be read as serve reads it (SocketEndpoint), so that these forms get no warning.
// Found by helper review80 (spec).
func TestExecServingItsSocketAsAnotherUnixURLFormIsNotWarnedOf(t *testing.T) {
	const socket = "/run/volctl/hp.sock"
	for _, form := range []string{"unix:" + socket, "UNIX://" + socket, "Unix://" + socket} {
		// Precondition: serve reads the form as the plugin's socket.
		if path, problem := SocketEndpoint("--socket", form); problem != "" || path != socket {
			t.Fatalf("SocketEndpoint(%q) = %q, %q; want %q: serve would not serve the plugin's socket", form, path, problem, socket)
		}
		args := []string{"plugin", "serve", "hostpath", "--socket", form, "--root", "/srv/hp", "--node-id", "n1"}
		for kind, parse := range map[string]func([]byte) hcl.Diagnostics{
			"plugin spec":  func(b []byte) hcl.Diagnostics { _, d := NewParser().ParsePlugins("p.hcl", b); return d },
			"agent config": func(b []byte) hcl.Diagnostics { _, d := NewParser().ParseAgentConfig("agent.hcl", b); return d },
		} {
			diags := parse(execPluginSpec(args...))
			if diags.HasErrors() {
				t.Fatalf("%s, --socket %s: %v", kind, form, diags)
			}
			for _, d := range diags {
				if strings.Contains(d.Summary, "serves another socket") {
					t.Errorf("%s, --socket %s: warned %q (%s); the plugin serves on %s, which the agent probes: want no warning",
						kind, form, d.Summary, d.Detail, socket)
				}
			}
		}
	}
}

// With servedSocket reading --socket as serve does, a value serve refuses (a blank around the
// path, another scheme) is said as refused, the plugin exiting at every start, not compared
// as a path (where " /run/volctl/hp.sock" passed as the plugin's own socket after Clean did
// not, and tcp://... as "another socket"). Mine, beside the test above.
func TestExecServingASocketServeRefusesIsWarnedOf(t *testing.T) {
	for _, form := range []string{"tcp://127.0.0.1:9000", "/run/volctl/hp.sock "} {
		if _, problem := SocketEndpoint("--socket", form); problem == "" {
			t.Fatalf("precondition: SocketEndpoint(%q) takes it; the test needs one serve refuses", form)
		}
		args := []string{"plugin", "serve", "hostpath", "--socket", form, "--root", "/srv/hp", "--node-id", "n1"}
		_, diags := NewParser().ParsePlugins("p.hcl", execPluginSpec(args...))
		if diags.HasErrors() {
			t.Fatalf("--socket %q: %v", form, diags)
		}
		found := false
		for _, d := range diags {
			found = found || strings.Contains(d.Summary, "Plugin socket refused")
			if strings.Contains(d.Summary, "serves another socket") {
				t.Errorf("--socket %q: warned %q, as if served; serve refuses it", form, d.Summary)
			}
		}
		if !found {
			t.Errorf("--socket %q, which serve refuses: no \"Plugin socket refused\" warning in %v", form, diags)
		}
	}
}
