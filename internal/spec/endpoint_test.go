package spec

import (
	"strings"
	"testing"
)

// TestSocketEndpointAsUsersWriteIt: a plugin's socket as Kubernetes' and Nomad's configs hold
// it (unix:///csi/csi.sock, unix:/csi.sock) is the path it names, in a plugin block as on the
// command line; a relative unix: URL, another scheme or a host:port is refused, naming why and
// the path to write. Before, "unix:/csi.sock" was refused as a relative path ("must be an
// absolute path") and "tcp://127.0.0.1:10000" too, saying nothing of why.
func TestSocketEndpointAsUsersWriteIt(t *testing.T) {
	for in, want := range map[string]string{
		"/run/csi/hp.sock": "/run/csi/hp.sock", "unix:///run/csi/hp.sock": "/run/csi/hp.sock",
		"unix:/run/csi/hp.sock": "/run/csi/hp.sock", "UNIX:///run/hp.sock": "/run/hp.sock",
		"hp.sock": "hp.sock", "./a:b.sock": "./a:b.sock", "a:b.sock": "a:b.sock", "/run/a:1": "/run/a:1",
	} {
		if got, problem := SocketEndpoint("socket", in); got != want || problem != "" {
			t.Errorf("SocketEndpoint(%q) = %q, %q; want %q", in, got, problem, want)
		}
	}
	for in, want := range map[string][]string{
		"unix://csi/csi.sock":   {`socket unix://csi/csi.sock`, "absolute path", `gRPC reads "csi" as a host`, "e.g. /csi/csi.sock"},
		"unix:csi.sock":         {"absolute path", "relative to the working directory", "e.g. /csi.sock"},
		"unix://":               {"names no socket path", "unix:///PATH"},
		"tcp://127.0.0.1:10000": {"socket tcp://127.0.0.1:10000 is a network address", "only unix sockets", "unix:///PATH"},
		"127.0.0.1:10000":       {"is a network address"},
		"localhost:10000":       {"is a network address"},
		"dns:///plugin":         {"is a network address"},
		"unix://a\nb/c":         {`"unix://a\nb/c"`, `"/a\nb/c"`},
	} {
		_, problem := SocketEndpoint("socket", in)
		for _, w := range want {
			if !strings.Contains(problem, w) {
				t.Errorf("SocketEndpoint(%q) problem %q, want it to say %q", in, problem, w)
			}
		}
		if strings.Contains(problem, "\n") {
			t.Errorf("SocketEndpoint(%q) problem %q holds a raw newline", in, problem)
		}
	}

	src := `plugin "a" {
  type   = "monolith"
  socket = "unix:///run/csi/a.sock"
}
plugin "b" {
  type            = "monolith"
  controller_socket = "unix:/run/csi/c.sock"
  node_socket       = "/run/csi/n.sock"
}
`
	ps, diags := NewParser().ParsePlugins("p.hcl", []byte(src))
	if diags.HasErrors() || len(ps) != 2 {
		t.Fatalf("ParsePlugins: %v", diags)
	}
	if ps[0].Socket != "/run/csi/a.sock" || ps[1].ControllerSocket != "/run/csi/c.sock" || ps[1].NodeSocket != "/run/csi/n.sock" {
		t.Errorf("sockets read as %q, %q, %q; want the paths the URLs name", ps[0].Socket, ps[1].ControllerSocket, ps[1].NodeSocket)
	}
	_, diags = NewParser().ParsePlugins("p.hcl", []byte(`plugin "a" {
  type   = "monolith"
  socket = "tcp://127.0.0.1:10000"
}
`))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "only unix sockets are supported") {
		t.Errorf("a tcp:// socket in a plugin block: %v; want it refused as a network address", diags)
	}
}

// TestQuoteName: a name that prints as itself is shown as it is; one holding a character that
// does not (newline, escape, zero width space, a byte that is not UTF-8) is quoted, that
// character written out, so that it cannot start a line of its own or recolour the terminal.
func TestQuoteName(t *testing.T) {
	for in, want := range map[string]string{
		"/run/csi/hp.sock": "/run/csi/hp.sock", "a b": "a b", "日本": "日本",
		"/a\nb": `"/a\nb"`, "\x1b[31mred": `"\x1b[31mred"`, "n1\u200b": `"n1\u200b"`, "\xff": `"\xff"`,
	} {
		if got := QuoteName(in); got != want {
			t.Errorf("QuoteName(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestSocketEndpointWithStrayTextIsRefused: a socket with a blank after it or a newline
// (CSI_ENDPOINT from a template or $(cat FILE), a flag copied from a table) was a path with
// that blank or newline in its name: `plugin serve hostpath` served on it, and nothing
// registered with the path meant found it; one with a blank before it was called a network
// address. Each is refused, quoted, saying what is stray; a blank inside a path is the path's.
func TestSocketEndpointWithStrayTextIsRefused(t *testing.T) {
	for in, want := range map[string]string{
		"unix:///run/hp.sock ":  `CSI_ENDPOINT "unix:///run/hp.sock " ends with a blank: write the socket's path without it.`,
		" unix:///run/hp.sock":  `CSI_ENDPOINT " unix:///run/hp.sock" begins with a blank`,
		"unix:///run/hp.sock\n": `CSI_ENDPOINT "unix:///run/hp.sock\n" holds a control character ('\n'`,
		"/run/hp.sock\r":        `holds a control character ('\r'`,
		"/run/h\x1bp.sock":      `holds a control character ('\x1b'`,
		" ":                     `CSI_ENDPOINT " " is blanks only`,
	} {
		path, problem := SocketEndpoint("CSI_ENDPOINT", in)
		if path != "" || !strings.Contains(problem, want) || strings.ContainsAny(problem, "\n\r\x1b") {
			t.Errorf("SocketEndpoint(%q) = %q, %q; want it refused saying %q, nothing raw", in, path, problem, want)
		}
	}
	if path, problem := SocketEndpoint("CSI_ENDPOINT", "unix:///run/my plugin/hp.sock"); path != "/run/my plugin/hp.sock" || problem != "" {
		t.Errorf("a blank inside: %q, %q", path, problem)
	}
}
