package spec

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

const baseVolume = `id        = "db"
type      = "csi"
plugin_id = "ebs"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

type ruleCase struct {
	name    string
	src     string
	verb    Verb
	summary string // the error expected; "" means the spec is valid
	detail  string // a substring of its detail
	errors  int    // how many errors in all; 0 means 1
}

func checkRule(t *testing.T, tt ruleCase, diags hcl.Diagnostics) {
	t.Helper()
	errs := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs++
		}
	}
	if tt.summary == "" {
		if diags.HasErrors() {
			t.Fatalf("want valid, got %v", diags)
		}
		return
	}
	want := max(tt.errors, 1)
	if errs != want {
		t.Errorf("got %d errors, want %d: %v", errs, want, diags)
	}
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Summary == tt.summary && strings.Contains(d.Detail, tt.detail) {
			if d.Subject == nil || d.Subject.Start.Line < 1 {
				t.Errorf("diagnostic without a position: %v", d)
			}
			return
		}
	}
	t.Fatalf("no error %q with detail containing %q in %v", tt.summary, tt.detail, diags)
}

func TestVolumeRules(t *testing.T) {
	without := func(line string) string { return strings.Replace(baseVolume, line+"\n", "", 1) }
	tests := []ruleCase{
		{name: "base is valid", src: baseVolume},
		{name: "base is valid for register with external_id", src: baseVolume + `external_id = "vol-1"`, verb: VerbRegister},
		{name: "base is valid for create with name", src: baseVolume + `name = "db"`, verb: VerbCreate},
		{name: "id required", src: without(`id        = "db"`), summary: "Missing required argument", detail: `"id"`},
		{name: "type required", src: without(`type      = "csi"`), summary: "Missing required argument", detail: `type = "csi"`},
		{name: "plugin_id required", src: without(`plugin_id = "ebs"`), summary: "Missing required argument", detail: `"plugin_id"`},
		{name: "a capability required", src: "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n", summary: "Missing capability", detail: "at least one capability"},
		{name: "type must be csi", src: strings.Replace(baseVolume, `"csi"`, `"nfs"`, 1), summary: "Invalid volume type", detail: `"nfs"`},
		{name: "name required for create", src: baseVolume, verb: VerbCreate, summary: "Missing required argument", detail: "name is required to create"},
		{name: "empty name refused for create", src: baseVolume + `name = ""`, verb: VerbCreate, summary: "Missing required argument", detail: "name is required to create"},
		{name: "name not required for register", src: baseVolume + `external_id = "x"`, verb: VerbRegister},
		{name: "external_id required for register", src: baseVolume, verb: VerbRegister, summary: "Missing required argument", detail: "external_id is required to register a volume"},
		{name: "external_id refused on create", src: baseVolume + "name = \"db\"\nexternal_id = \"x\"", verb: VerbCreate, summary: "Argument not allowed for create", detail: "external_id"},
		{name: "snapshot_id create-only", src: baseVolume + "external_id = \"x\"\nsnapshot_id = \"s\"", verb: VerbRegister, summary: "Argument not allowed for register", detail: "snapshot_id"},
		{name: "clone_id create-only", src: baseVolume + "external_id = \"x\"\nclone_id = \"c\"", verb: VerbRegister, summary: "Argument not allowed for register", detail: "clone_id"},
		{name: "snapshot_id on create", src: baseVolume + "name = \"db\"\nsnapshot_id = \"s\"", verb: VerbCreate},
		{name: "snapshot and clone exclusive", src: baseVolume + "snapshot_id = \"s\"\nclone_id = \"c\"", summary: "Conflicting arguments", detail: "mutually exclusive"},
		{name: "snapshot and clone exclusive on create", src: baseVolume + "name = \"n\"\nsnapshot_id = \"s\"\nclone_id = \"c\"", verb: VerbCreate, summary: "Conflicting arguments", detail: "mutually exclusive"},
		{name: "context register-only", src: baseVolume + "name = \"db\"\ncontext { a = \"b\" }", verb: VerbCreate, summary: "Argument not allowed for create", detail: "context is only used to register"},
		{name: "context on register", src: baseVolume + "external_id = \"x\"\ncontext = { a = \"b\" }", verb: VerbRegister},
		{name: "preferred create-only", src: baseVolume + "external_id = \"x\"\ntopology_request {\n preferred {\n topology {\n segments = { rack = \"R1\" }\n }\n }\n}", verb: VerbRegister, summary: "Block not allowed for register", detail: "preferred"},
		{name: "preferred on create", src: baseVolume + "name = \"x\"\ntopology_request {\n preferred {\n topology {\n segments = { rack = \"R1\" }\n }\n }\n}", verb: VerbCreate},
		{name: "topology needs segments", src: baseVolume + "topology_request {\n required {\n topology {\n }\n }\n}", summary: "Missing topology segments", detail: "at least one segment"},
		{name: "topology segments non-empty", src: baseVolume + "topology_request {\n required {\n topology {\n segments = {}\n }\n }\n}", summary: "Missing topology segments", detail: "at least one segment"},
		{name: "segment key prefix", src: baseVolume + "topology_request {\n required {\n topology {\n segments = { \"Foo/zone\" = \"a\" }\n }\n }\n}", summary: "Invalid topology segment", detail: "prefix"},
		{name: "segment value", src: baseVolume + "topology_request {\n required {\n topology {\n segments = { zone = \"a b\" }\n }\n }\n}", summary: "Invalid topology segment", detail: `"a b"`},
		{name: "every access mode", src: strings.Join([]string{
			`id = "db"`, `type = "csi"`, `plugin_id = "x"`,
			`capability {` + "\n" + `access_mode = "single-node-reader-only"` + "\n" + `attachment_mode = "file-system"` + "\n}",
			`capability {` + "\n" + `access_mode = "single-node-writer"` + "\n" + `attachment_mode = "file-system"` + "\n}",
			`capability {` + "\n" + `access_mode = "multi-node-reader-only"` + "\n" + `attachment_mode = "block-device"` + "\n}",
			`capability {` + "\n" + `access_mode = "multi-node-single-writer"` + "\n" + `attachment_mode = "block-device"` + "\n}",
			`capability {` + "\n" + `access_mode = "multi-node-multi-writer"` + "\n" + `attachment_mode = "file-system"` + "\n}",
		}, "\n")},
		{name: "access mode typo suggests", src: strings.Replace(baseVolume, `"single-node-writer"`, `"single-node-writter"`, 1), summary: "Invalid access mode", detail: `Did you mean "single-node-writer"? Valid modes: single-node-reader-only, single-node-writer,`},
		{name: "access mode far off lists modes", src: strings.Replace(baseVolume, `"single-node-writer"`, `"rwx"`, 1), summary: "Invalid access mode", detail: "Valid modes: single-node-reader-only"},
		{name: "attachment mode invalid", src: strings.Replace(baseVolume, `"file-system"`, `"filesystem"`, 1), summary: "Invalid attachment mode", detail: `Did you mean "file-system"?`},
		{name: "capability needs both", src: "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\ncapability {\n access_mode = \"single-node-writer\"\n}", summary: "Missing required argument", detail: `"attachment_mode"`},
		{name: "legacy flat form", src: "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\naccess_mode = \"single-node-writer\"\nattachment_mode = \"file-system\""},
		{name: "legacy flat and blocks", src: baseVolume + `access_mode = "single-node-writer"`, summary: "Conflicting arguments", detail: "legacy form"},
		{name: "legacy flat half", src: "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nattachment_mode = \"file-system\"", summary: "Missing required argument", detail: `"access_mode"`},
		{name: "block-device volume may have mount_options", src: strings.Replace(baseVolume, `"file-system"`, `"block-device"`, 1) + "mount_options {\n fs_type = \"ext4\"\n}"},
		{name: "capacity garbage", src: baseVolume + `capacity_min = "lots"`, summary: "Invalid capacity", detail: `"lots"`},
		{name: "capacity negative", src: baseVolume + `capacity_max = "-1G"`, summary: "Invalid capacity", detail: "negative"},
		{name: "capacity overflow", src: baseVolume + `capacity_max = "9EiB"`, summary: "Invalid capacity", detail: "too large"},
		{name: "capacity min over max", src: baseVolume + "capacity_min = \"2GiB\"\ncapacity_max = \"1GiB\"", summary: "Invalid capacity range", detail: "capacity_min (2GiB) is larger than capacity_max (1GiB)"},
		{name: "capacity min equals max", src: baseVolume + "capacity_min = \"1GiB\"\ncapacity_max = \"1024MiB\""},
		{name: "capacity as a number", src: baseVolume + "capacity_min = 1073741824"},
		// Nomad's HCL1 reads "${...}" and "%{...}" as plain text: volctl refuses to evaluate
		// them (the plugin would get other text), and says how to write them literally.
		{name: "variable in a parameter says how to escape", src: baseVolume + "parameters {\n subDir = \"${pvc.metadata.name}\"\n}", summary: "Variables not allowed", detail: `write "$\u007b" for "${"`},
		{name: "constant interpolation refused", src: baseVolume + `capacity_min = "${10*1024}MiB"`, summary: "Interpolation not allowed", detail: `write "$\u007b" for "${"`},
		{name: "template directive refused", src: baseVolume + "parameters {\n x = \"%{if true}a%{endif}\"\n}", summary: "Interpolation not allowed", detail: `"%\u007b" for "%{"`},
		{name: "interpolation in a heredoc refused", src: baseVolume + "name = <<EOT\n${\"db\"}\nEOT\n", summary: "Interpolation not allowed"},
		{name: "escaped template is literal", src: baseVolume + "parameters {\n subDir = \"$${pvc.metadata.name}\"\n x = \"%%{if}\"\n}"},
		{name: "capacity empty is unset, as Nomad reads it", src: baseVolume + "capacity_min = \"\"\ncapacity_max = \"\""},
		{name: "capacity blank", src: baseVolume + `capacity_min = " "`, summary: "Invalid capacity", detail: "empty size"},
		{name: "capacity with thousands separators, as Nomad reads it", src: baseVolume + "capacity_min = \"1,000GiB\"\ncapacity_max = \"1,024GiB\""},
		{name: "capacity with a decimal comma", src: baseVolume + `capacity_max = "1,5GiB"`, summary: "Invalid capacity", detail: "not a thousands separator"},
		{name: "secret key rule", src: baseVolume + "secrets = { \"a b\" = \"x\" }", summary: "Invalid secret key", detail: `"a b"`},
		{name: "secret keys allowed", src: baseVolume + "secrets = { \"a.b-c_D9\" = \"x\" }"},
		{name: "string field limit", src: baseVolume + `name = "` + strings.Repeat("x", 129) + `"`, summary: "Value too long", detail: "128 bytes"},
		{name: "string field at the limit", src: baseVolume + `name = "` + strings.Repeat("x", 128) + `"`},
		// A plugin's own ID past the limit is kept (warned of): volctl stores what plugins
		// answer, and a spec it exports must register again (TestPluginIDsPastTheCSILimitAreWarnedOf).
		{name: "plugin ID past the string limit", src: baseVolume + `external_id = "` + strings.Repeat("x", 200) + `"`},
		{name: "plugin ID with a control character", src: baseVolume + "external_id = \"a\\u0001b\"", summary: "Invalid character", detail: "external_id"},
		{name: "map limit", src: baseVolume + "parameters = { a = \"" + strings.Repeat("x", 4096) + "\" }", summary: "Map too large", detail: "4097 bytes"},
		{name: "map at the limit", src: baseVolume + "parameters = { a = \"" + strings.Repeat("x", 4095) + "\" }"},
		{name: "long map value is fine", src: baseVolume + "secrets = { cert = \"" + strings.Repeat("x", 2000) + "\" }"},
		{name: "mount flags limit", src: baseVolume + "mount_options {\n mount_flags = [\"" + strings.Repeat("x", 4097) + "\"]\n}", summary: "Value too long", detail: "mount_flags"},
		{name: "unsafe id", src: strings.Replace(baseVolume, `"db"`, `"../db"`, 1), summary: "Invalid volume ID", detail: `must not contain "/"`},
		{name: "unsafe plugin id", src: strings.Replace(baseVolume, `"ebs"`, `"-ebs"`, 1), summary: "Invalid plugin ID", detail: `must not start with "-"`},
		{name: "alloc-style id", src: strings.Replace(baseVolume, `"db"`, `"db[0]"`, 1)},
		{name: "unknown argument suggests", src: baseVolume + `plugin = "x"`, summary: "Unsupported argument", detail: `Did you mean "plugin_id"?`},
		{name: "unknown block suggests", src: baseVolume + "mount_option {\n}", summary: "Unsupported block type", detail: `Did you mean "mount_options"?`},
		{name: "host field hint", src: baseVolume + `host_path = "/x"`, summary: "Unsupported argument", detail: "host volume specs"},
		{name: "map values may be numbers and bools", src: baseVolume + "parameters {\n uid = 1000\n ro = true\n}"},
		{name: "map values must be scalars", src: baseVolume + "parameters {\n uid = [1]\n}", summary: "Incorrect value type", detail: "parameters.uid"},
		{name: "no interpolation", src: strings.Replace(baseVolume, `"db"`, `"${x}"`, 1), summary: "Variables not allowed"},
		{name: "map twice", src: baseVolume + "secrets = { a = \"b\" }\nsecrets {\n c = \"d\"\n}", summary: "Duplicate secrets", detail: "more than once"},
		{name: "duplicate map key", src: baseVolume + "parameters = { a = \"1\", a = \"2\" }", summary: "Duplicate map key", detail: `"a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := ParseVolume("t.hcl", []byte(tt.src), tt.verb)
			checkRule(t, tt, diags)
		})
	}
}

func TestHostSpecIsOneError(t *testing.T) {
	src := `type = "host"
name = "x"
node_id = "n"
host_path = "/srv"
node_pool = "p"
capacity = "1G"
constraint {
  attribute = "${attr.kernel.name}"
}
`
	for _, verb := range []Verb{VerbAny, VerbCreate, VerbRegister} {
		v, diags := ParseVolume("host.hcl", []byte(src), verb)
		if v != nil || len(diags) != 1 || diags[0].Summary != "Host volumes are not supported" {
			t.Fatalf("verb %q: %v", verb, diags)
		}
		if d := diags[0].Detail; !strings.Contains(d, "CSI volumes only") || !strings.Contains(d, "nomad volume create") {
			t.Errorf("detail: %s", d)
		}
		if line := diags[0].Subject.Start.Line; line != 1 {
			t.Errorf("points at line %d, want the type on line 1", line)
		}
	}
}

// TestNomadAPIFormIsOneError: a volume in Nomad's HTTP API form (the {"Volumes": [...]} body,
// or "nomad volume status -json" output) is not a spec; it gets one error saying so at its
// first API field, not one per CamelCase field plus every spec field "missing".
func TestNomadAPIFormIsOneError(t *testing.T) {
	for _, src := range []string{
		`{"Volumes": [{"ID": "db", "Type": "csi", "PluginID": "x", "RequestedCapabilities": [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]}]}`,
		`{"Volume": {"ID": "db", "PluginID": "x"}}`,
		`{"ID": "db", "Namespace": "default", "PluginID": "x", "ExternalID": "vol-1"}`,
	} {
		v, diags := ParseVolume("api.json", []byte(src), VerbAny)
		if v != nil || len(diags) != 1 || diags[0].Summary != "Nomad API form, not a volume spec" {
			t.Fatalf("%s: %v", src, diags)
		}
		if d := diags[0].Detail; !strings.Contains(d, "snake_case") || !strings.Contains(d, "volctl init volume") {
			t.Errorf("detail: %s", d)
		}
	}
}

func TestVolumeValues(t *testing.T) {
	src := `id = "db"
type = "csi"
plugin_id = "ebs"
access_mode = "single-node-reader"
attachment_mode = "file-system"
capacity_min = "1GiB"
parameters {
  uid = 1000
  on  = true
}
secrets = { password = "xyz" }
mount_options {
  mount_flags = ["ro", "noatime"]
}
`
	v, diags := ParseVolume("t.hcl", []byte(src), VerbAny)
	if diags.HasErrors() || v == nil {
		t.Fatal(diags)
	}
	if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Deprecated access mode" {
		t.Errorf("want one deprecation warning, got %v", diags)
	}
	want := &Volume{
		ID: "db", Namespace: DefaultNamespace, Type: "csi", PluginID: "ebs", CapacityMin: 1 << 30,
		Capabilities: []Capability{{SingleNodeReaderOnly, FileSystem}},
		MountOptions: &MountOptions{MountFlags: MountFlags{"ro", "noatime"}},
		Secrets:      Secrets{"password": "xyz"},
		// true is sent as "1", as Nomad sends it (TestScalarsAsNomadSendsThem).
		Parameters: map[string]string{"uid": "1000", "on": "1"},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got  %+v\nwant %+v", v, want)
	}
}

// TestJSONMatchesHCL decodes the same specs written in HCL and JSON.
func TestJSONMatchesHCL(t *testing.T) {
	tests := []struct{ name, hcl, json string }{
		{"volume", `id = "db"
type = "csi"
plugin_id = "ebs"
name = "n"
capacity_max = "1G"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
capability {
  access_mode = "multi-node-reader-only"
  attachment_mode = "file-system"
}
mount_options {
  fs_type = "ext4"
  mount_flags = ["ro"]
}
topology_request {
  required {
    topology { segments { rack = "R1" } }
  }
}
secrets { a = "b" }
parameters { n = 1 }
`, `{"id": "db", "type": "csi", "plugin_id": "ebs", "name": "n", "capacity_max": "1G",
 "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"},
                {"access_mode": "multi-node-reader-only", "attachment_mode": "file-system"}],
 "mount_options": {"fs_type": "ext4", "mount_flags": ["ro"]},
 "topology_request": {"required": [{"topology": [{"segments": {"rack": "R1"}}]}]},
 "secrets": {"a": "b"}, "parameters": {"n": 1}}`},
		{"plugins", `plugin "a" {
  type = "node"
  socket = "/run/a.sock"
  timeout = "1m"
  exec {
    command = "/bin/a"
    args = ["x"]
    env { K = "v" }
  }
}
plugin "b" {
  type = "monolith"
  controller_socket = "/run/b-c.sock"
  node_socket = "/run/b-n.sock"
}
`, `{"plugin": {"a": {"type": "node", "socket": "/run/a.sock", "timeout": "1m",
                   "exec": {"command": "/bin/a", "args": ["x"], "env": {"K": "v"}}},
              "b": {"type": "monolith", "controller_socket": "/run/b-c.sock", "node_socket": "/run/b-n.sock"}}}`},
		{"group", `group "g" {
  count = 2
  volume "d" {
    type = "csi"
    source = "s"
    per_alloc = true
    access_mode = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume = "d"
    destination = "/srv/{alloc}"
  }
}
`, `{"group": {"g": {"count": 2,
  "volume": {"d": {"type": "csi", "source": "s", "per_alloc": true,
                   "access_mode": "single-node-writer", "attachment_mode": "file-system"}},
  "volume_mount": {"volume": "d", "destination": "/srv/{alloc}"}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fromHCL, diags := Parse("t.hcl", []byte(tt.hcl), VerbAny)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			// No .json name: the leading "{" alone must select JSON.
			fromJSON, diags := Parse("t.spec", []byte(tt.json), VerbAny)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if !reflect.DeepEqual(fromHCL, fromJSON) {
				t.Errorf("HCL and JSON differ:\n%+v\n%+v", fromHCL, fromJSON)
			}
			if string(fromHCL.Kind) != tt.name && !(tt.name == "plugins" && fromHCL.Kind == KindPlugin) {
				t.Errorf("kind %q", fromHCL.Kind)
			}
		})
	}
}

func TestPluginRules(t *testing.T) {
	plugin := func(body string) string { return "plugin \"p\" {\n" + body + "\n}\n" }
	tests := []ruleCase{
		{name: "monolith", src: plugin(`type = "monolith"` + "\n" + `socket = "/run/p.sock"`)},
		{name: "monolith split", src: plugin("type = \"monolith\"\ncontroller_socket = \"/run/c.sock\"\nnode_socket = \"/run/n.sock\"")},
		{name: "controller socket", src: plugin("type = \"controller\"\nsocket = \"/run/c.sock\"")},
		{name: "node node_socket", src: plugin("type = \"node\"\nnode_socket = \"/run/n.sock\"")},
		{name: "no plugin block", src: `id = "x"`, summary: "Missing plugin block", detail: "at least one plugin block", errors: 2},
		{name: "type required", src: plugin(`socket = "/run/p.sock"`), summary: "Missing required argument", detail: `"type"`},
		{name: "type typo", src: plugin("type = \"monolit\"\nsocket = \"/run/p.sock\""), summary: "Invalid plugin type", detail: `Did you mean "monolith"?`},
		{name: "socket required", src: plugin(`type = "monolith"`), summary: "Missing required argument", detail: "needs a socket"},
		{name: "monolith half split", src: plugin("type = \"monolith\"\nnode_socket = \"/run/n.sock\""), summary: "Missing required argument", detail: "controller_socket"},
		{name: "monolith socket and split", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"\nnode_socket = \"/run/n.sock\""), summary: "Argument not allowed", detail: "cannot be combined"},
		{name: "controller needs controller socket", src: plugin("type = \"controller\"\nnode_socket = \"/run/n.sock\""), summary: "Missing required argument", detail: "controller socket", errors: 2},
		{name: "controller controller_socket", src: plugin("type = \"controller\"\ncontroller_socket = \"/run/c.sock\"")},
		{name: "controller socket repeated", src: plugin("type = \"controller\"\nsocket = \"/run/c.sock\"\ncontroller_socket = \"/run/d.sock\""), summary: "Argument not allowed", detail: "controller_socket repeats socket: on a controller plugin, socket is its controller socket. Give one of them."},
		{name: "node needs node socket", src: plugin(`type = "node"`), summary: "Missing required argument", detail: "A node plugin needs its node socket: socket or node_socket."},
		{name: "node refuses controller_socket", src: plugin("type = \"node\"\nsocket = \"/run/n.sock\"\ncontroller_socket = \"/run/c.sock\""), summary: "Argument not allowed", detail: "not used by a node plugin"},
		{name: "relative socket", src: plugin("type = \"monolith\"\nsocket = \"p.sock\""), summary: "Invalid socket path", detail: "absolute"},
		{name: "socket at sun_path limit", src: plugin("type = \"monolith\"\nsocket = \"/" + strings.Repeat("s", 106) + "\"")},
		{name: "socket over sun_path", src: plugin("type = \"monolith\"\nsocket = \"/" + strings.Repeat("s", 107) + "\""), summary: "Invalid socket path", detail: "sun_path"},
		{name: "timeout", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"\ntimeout = \"soon\""), summary: "Invalid timeout", detail: `"soon"`},
		{name: "timeout positive", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"\ntimeout = \"-1s\""), summary: "Invalid timeout", detail: "more than zero"},
		{name: "exec command", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"\nexec {\nargs = [\"x\"]\n}"), summary: "Missing required argument", detail: "command"},
		{name: "exec literal ${socket} is not interpolated", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"\nexec {\ncommand = \"/bin/p\"\nargs = [\"${socket}\"]\n}"), summary: "Variables not allowed"},
		{name: "exec escaped $${socket} is literal", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"\nexec {\ncommand = \"/bin/p\"\nargs = [\"$${socket}\"]\n}")},
		{name: "unsafe id", src: "plugin \"../p\" {\ntype = \"monolith\"\nsocket = \"/run/p.sock\"\n}", summary: "Invalid plugin ID", detail: `"/"`},
		{name: "duplicate id", src: plugin("type = \"monolith\"\nsocket = \"/run/p.sock\"") + plugin("type = \"monolith\"\nsocket = \"/run/q.sock\""), summary: "Duplicate plugin", detail: `"p"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := NewParser().ParsePlugins("t.hcl", []byte(tt.src))
			checkRule(t, tt, diags)
		})
	}
}

func TestPluginValues(t *testing.T) {
	src := `plugin "c" {
  type = "controller"
  socket = "/run/c.sock"
}
plugin "n" {
  type = "node"
  socket = "/run/n.sock"
  timeout = "90s"
  exec {
    command = "/bin/n"
    args = ["--endpoint", "$${CSI_ENDPOINT}"]
    env = { A = "1", CSI_ENDPOINT = "x" }
  }
}
`
	ps, diags := NewParser().ParsePlugins("t.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := []*Plugin{
		{ID: "c", Type: PluginController, ControllerSocket: "/run/c.sock"},
		{ID: "n", Type: PluginNode, NodeSocket: "/run/n.sock", Timeout: 90 * time.Second,
			Exec: &Exec{Command: "/bin/n", Args: []string{"--endpoint", "${CSI_ENDPOINT}"}, Env: Secrets{"A": "1"}}},
	}
	if !reflect.DeepEqual(ps, want) {
		t.Errorf("got  %+v\nwant %+v", ps, want)
	}
	if len(diags) != 1 || diags[0].Summary != "Environment variable overridden" {
		t.Errorf("want a warning about CSI_ENDPOINT, got %v", diags)
	}
}

func TestGroupRules(t *testing.T) {
	group := func(count, volume, mount string) string {
		return "group \"web\" {\n" + count + "\nvolume \"data\" {\ntype = \"csi\"\nsource = \"data\"\n" + volume + "\n}\n" + mount + "\n}\n"
	}
	rw := "access_mode = \"single-node-writer\"\nattachment_mode = \"file-system\""
	mount := func(body string) string { return "volume_mount {\nvolume = \"data\"\n" + body + "\n}" }
	tests := []ruleCase{
		{name: "minimal", src: group("", rw, "")},
		{name: "per_alloc with count", src: group("count = 3", rw+"\nper_alloc = true", mount(`destination = "/srv/{index}"`))},
		{name: "count at least 1", src: group("count = 0", rw, ""), summary: "Invalid count", detail: "at least 1"},
		{name: "count 0 names the stop", src: group("count = 0", rw, ""), summary: "Invalid count", detail: "run `volctl group stop web`"},
		{name: "count below 0", src: group("count = -1", rw, ""), summary: "Invalid count", detail: "at least 1, not -1"},
		{name: "count whole", src: group("count = 1.5", rw, ""), summary: "Invalid value", detail: "whole number"},
		{name: "single-node with count needs per_alloc", src: group("count = 2", rw, ""), summary: "Single-node volume shared by several allocs", detail: "per_alloc = true"},
		{name: "multi-node with count is fine", src: group("count = 2", "access_mode = \"multi-node-multi-writer\"\nattachment_mode = \"file-system\"", "")},
		{name: "reader-only needs read_only", src: group("", "access_mode = \"multi-node-reader-only\"\nattachment_mode = \"file-system\"", ""), summary: "Read-only access mode needs read_only", detail: "read_only = true"},
		{name: "reader-only with read_only", src: group("", "read_only = true\naccess_mode = \"single-node-reader-only\"\nattachment_mode = \"file-system\"", "")},
		{name: "block-device forbids mount_options", src: group("", "access_mode = \"single-node-writer\"\nattachment_mode = \"block-device\"\nmount_options {\nfs_type = \"ext4\"\n}", ""), summary: "mount_options not allowed for block-device", detail: "raw device"},
		{name: "access_mode required", src: group("", `attachment_mode = "file-system"`, ""), summary: "Missing required argument", detail: `"access_mode"`},
		{name: "attachment_mode required", src: group("", `access_mode = "single-node-writer"`, ""), summary: "Missing required argument", detail: `"attachment_mode"`},
		{name: "type must be csi", src: strings.Replace(group("", rw, ""), `type = "csi"`, `type = "nfs"`, 1), summary: "Invalid volume type", detail: `"nfs"`},
		{name: "host request refused", src: strings.Replace(group("", "", ""), `type = "csi"`, `type = "host"`, 1), summary: "Host volumes are not supported", detail: "CSI volumes only"},
		{name: "source required", src: strings.Replace(group("", rw, ""), `source = "data"`, "", 1), summary: "Missing required argument", detail: `"source"`},
		{name: "source is an ID", src: strings.Replace(group("", rw, ""), `source = "data"`, `source = "a/b"`, 1), summary: "Invalid volume source", detail: `"/"`},
		{name: "volume_mount names a volume", src: group("", rw, "volume_mount {\nvolume = \"dat\"\ndestination = \"/srv\"\n}"), summary: "Unknown volume", detail: `Did you mean "data"?`},
		{name: "destination absolute", src: group("", rw, mount(`destination = "srv"`)), summary: "Invalid destination", detail: "absolute"},
		{name: "destination per alloc", src: group("count = 2", rw+"\nper_alloc = true", mount(`destination = "/srv"`)), summary: "Destination shared by several allocs", detail: "{index}"},
		{name: "destination per alloc only before ..", src: group("count = 2", rw+"\nper_alloc = true", mount(`destination = "/srv/{index}/.."`)), summary: "Destination shared by several allocs", detail: "{index}"},
		{name: "destination per alloc only in a dropped component", src: group("count = 2", rw+"\nper_alloc = true", mount(`destination = "/srv/{alloc}/../data"`)), summary: "Destination shared by several allocs", detail: "{index}"},
		{name: "destination per alloc before ..", src: group("count = 2", rw+"\nper_alloc = true", mount(`destination = "/srv/{index}/a/../b"`))},
		{name: "duplicate destination as bound", src: group("", rw, mount(`destination = "/srv/a"`)+"\n"+mount(`destination = "/srv//a/"`)), summary: "Duplicate destination", detail: `"/srv/a"`},
		{name: "destination with alloc placeholder", src: group("count = 2", rw+"\nper_alloc = true", mount(`destination = "/srv/{alloc}"`))},
		{name: "unknown placeholder", src: group("", rw, mount(`destination = "/srv/{id}"`)), summary: "Unknown placeholder", detail: "{id}"},
		// Past Linux's bounds on a name or a path, which no bind could be made at: the claim's
		// stage and publish were done before its bind failed at the walk.
		{name: "destination component at the name bound", src: group("", rw, mount(`destination = "/srv/`+strings.Repeat("n", 255)+`"`))},
		{name: "destination component past the name bound", src: group("", rw, mount(`destination = "/srv/`+strings.Repeat("n", 256)+`/x"`)), summary: "Destination too long", detail: "component of 256 bytes"},
		{name: "destination component past the name bound for the last alloc", src: group("count = 1000", rw+"\nper_alloc = true", mount(`destination = "/srv/`+strings.Repeat("n", 248)+`{alloc}"`)), summary: "Destination too long", detail: "component of 256 bytes"},
		{name: "destination component within the name bound for the last alloc", src: group("count = 1000", rw+"\nper_alloc = true", mount(`destination = "/srv/`+strings.Repeat("n", 247)+`{alloc}"`))},
		{name: "destination past the path bound", src: group("", rw, mount(`destination = "`+strings.Repeat("/"+strings.Repeat("p", 200), 21)+`"`)), summary: "Destination too long", detail: "4221 bytes long (for alloc web[0])"},
		{name: "propagation modes", src: group("", rw, mount("destination = \"/a\"\npropagation_mode = \"host-to-task\"")+"\n"+mount("destination = \"/b\"\npropagation_mode = \"bidirectional\"")+"\n"+mount("destination = \"/c\"\npropagation_mode = \"private\""))},
		{name: "propagation invalid", src: group("", rw, mount("destination = \"/a\"\npropagation_mode = \"shared\"")), summary: "Invalid propagation mode", detail: "Valid modes: private, host-to-task, bidirectional"},
		{name: "bidirectional needs rw mount", src: group("", rw, mount("destination = \"/a\"\nread_only = true\npropagation_mode = \"bidirectional\"")), summary: "Bidirectional propagation needs a read-write volume", detail: "volume_mount is read_only"},
		{name: "bidirectional needs rw request", src: group("", "read_only = true\n"+rw, mount("destination = \"/a\"\npropagation_mode = \"bidirectional\"")), summary: "Bidirectional propagation needs a read-write volume", detail: "requested read_only"},
		{name: "group name is an ID", src: strings.Replace(group("", rw, ""), `"web"`, `".."`, 1), summary: "Invalid group name", detail: `".."`},
		{name: "one group per file", src: group("", rw, "") + group("", rw, ""), summary: "Duplicate group block", detail: "exactly one group"},
		{name: "a volume block required", src: "group \"web\" {\n}\n", summary: "Missing volume block", detail: "at least one volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := NewParser().ParseGroup("t.hcl", []byte(tt.src))
			checkRule(t, tt, diags)
		})
	}
}

func TestGroupDefaults(t *testing.T) {
	g, diags := NewParser().ParseGroup("t.hcl", []byte(`group "db" {
  volume "data" {
    type = "csi"
    source = "db"
    access_mode = "single-node-reader"
    attachment_mode = "file-system"
    read_only = true
  }
  volume_mount {
    volume = "data"
    destination = "/srv/db"
  }
}`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := &Group{Name: "db", Count: 1,
		Volumes: []VolumeRequest{{Name: "data", Type: "csi", Source: "db", ReadOnly: true, AccessMode: SingleNodeReaderOnly, AttachmentMode: FileSystem}},
		Mounts:  []VolumeMount{{Volume: "data", Destination: "/srv/db", PropagationMode: PropagationPrivate}},
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("got  %+v\nwant %+v", g, want)
	}
}

func TestParseDetectsKind(t *testing.T) {
	tests := []struct {
		src  string
		want Kind
	}{
		{baseVolume, KindVolume},
		{"plugin \"p\" {\ntype = \"node\"\nsocket = \"/s\"\n}", KindPlugin},
		{"group \"g\" {\nvolume \"v\" {\ntype = \"csi\"\nsource = \"s\"\naccess_mode = \"single-node-writer\"\nattachment_mode = \"file-system\"\n}\n}", KindGroup},
		{`{"plugin": {"p": {"type": "node", "socket": "/s"}}}`, KindPlugin},
	}
	for _, tt := range tests {
		f, diags := Parse("t", []byte(tt.src), VerbAny)
		if diags.HasErrors() || f.Kind != tt.want {
			t.Errorf("Parse(%.20q): %v, %v; want kind %s", tt.src, f, diags, tt.want)
		}
	}
}

// TestSecretValuesMaskedWhole: a secret or mount flag whose string holds template sequences
// (`${...}`, `%{...}`), a heredoc, a number or a bare name is masked whole in diagnostics,
// not only its literal parts.
func TestSecretValuesMaskedWhole(t *testing.T) {
	parts := []string{"pre", "PARTONE", "mid", "PARTTWO", "post", "HEREDOCBODY", "PARTTHREE", "PARTFOUR", "PARTFIVE", "31415926", "BARENAME", "27182818"}
	tests := []struct{ name, src string }{
		{"template sequences", baseVolume + "secrets {\n  k = \"pre${PARTONE}mid%{if PARTTWO}x%{endif}post\"\n}"},
		{"nested quotes in a template", baseVolume + "secrets = { k = \"pre${\"PARTONE\"}post\", j = [\"x\"] }"},
		{"heredoc", baseVolume + "secrets {\n  h = <<EOT\nHEREDOCBODY${PARTTHREE}post\nEOT\n}"},
		{"mount flag template", baseVolume + "mount_options {\n  mount_flags = [\"pre${PARTFOUR}post\", 1]\n}"},
		{"number", baseVolume + "secrets = { k = [31415926] }"},
		{"bare name", baseVolume + "secrets {\n  k = BARENAME\n}"},
		{"env template", "plugin \"p\" {\ntype = \"node\"\nsocket = \"/s\"\nexec {\ncommand = \"/x\"\nenv = { A = \"pre${PARTFIVE}post\" }\n}\n}"},
		{"json number", `{"id": "db", "type": "csi", "plugin_id": "x", "secrets": {"k": 27182818, "bad key": "xxxxx"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, diags := renderFailure(t, tt.src, 200)
			for _, j := range JSONDiagnostics("t.spec", diags) {
				text += "\n" + j.Summary + "\n" + j.Detail
			}
			// Only the lines of snippets and diagnostics that quote the value: the base spec
			// around it may hold "pre" or "post" in other words.
			for _, part := range parts {
				for _, line := range strings.Split(text, "\n") {
					if strings.Contains(line, part) && !strings.Contains(baseVolume, strings.TrimSpace(line)) {
						t.Errorf("%q rendered:\n%s", part, text)
					}
				}
			}
			if !strings.Contains(text, "****") {
				t.Errorf("no masked value in the snippets, so nothing was checked:\n%s", text)
			}
		})
	}
}

// TestSecretsNeverRendered renders the diagnostics of specs whose secrets, env and mount flags
// sit on the lines the diagnostics point at, HCL and JSON, valid syntax and not.
func TestSecretsNeverRendered(t *testing.T) {
	const secret = "TOPSECRET"
	tests := []struct{ name, src string }{
		{"bad secret key", baseVolume + "secrets {\n  \"bad key\" = \"TOPSECRET\"\n}"},
		{"secret of the wrong type", baseVolume + "secrets = { k = [\"TOPSECRET\"] }"},
		{"mount flags wrong type", baseVolume + "mount_options {\n mount_flags = \"TOPSECRET\"\n}"},
		{"mount flags in a one-line block", baseVolume + "mount_options { fs_type = 1, mount_flags = [\"TOPSECRET\"], bogus = 1 }"},
		{"syntax error next to a secret", baseVolume + "secrets {\n  k = \"TOPSECRET\" = \n}"},
		{"plugin env", "plugin \"p\" {\ntype = \"node\"\nsocket = \"/s\"\nexec {\ncommand = \"/x\"\nenv = { \"A=B\" = \"TOPSECRET\" }\n}\n}"},
		{"json secret", `{"id": "db", "type": "csi", "plugin_id": "x", "secrets": {"bad key": "TOPSECRET"}}`},
		{"json mount flags", `{"id": "db", "type": "csi", "plugin_id": "x", "mount_options": {"mount_flags": "TOPSECRET"}}`},
		{"json syntax error", `{"secrets": {"k": "TOPSECRET" "x": 1}}`},
		// A sensitive block misspelt or re-cased is what a diagnostic points at: its line is
		// the snippet shown, so its values are masked too; so are names that say "secret".
		{"misspelt secrets block", baseVolume + "secret { k = \"TOPSECRET\" }"},
		{"typo in secrets", baseVolume + "secrest { k = \"TOPSECRET\" }"},
		{"re-cased secrets", baseVolume + "Secrets = { k = \"TOPSECRET\" }"},
		{"mount flags without underscore", baseVolume + "mountflags = [\"TOPSECRET\"]"},
		{"password argument", baseVolume + "db_password = \"TOPSECRET\""},
		// HCL1's quoted block name is read (TestHCL1QuotedBlockNames): the error is a bad key
		// in the map, on the secret's line.
		{"HCL1 quoted secrets name", baseVolume + "\"secrets\" { k = \"TOPSECRET\", \"bad key\" = \"x\" }"},
		{"json re-cased secrets", `{"id": "db", "type": "csi", "plugin_id": "x", "Secrets": {"k": "TOPSECRET"}}`},
		{"json escaped secrets key", `{"id": "db", "type": "csi", "plugin_id": "x", "secr\u0065ts": {"bad key": "TOPSECRET"}}`},
		{"HCL1 quoted escaped secrets name", baseVolume + "\"secr\\u0065ts\" { k = \"TOPSECRET\" }"},
		{"json API form", `{"Volumes": [{"ID": "db", "PluginID": "x", "Secrets": {"k": "TOPSECRET"}}]}`},
		// A secret written unquoted in JSON is a keyword HCL's parser refuses, quoting it
		// ("Invalid JSON keyword"); so are what follows a string and what starts as a number.
		{"json unquoted secret", `{"id": "db", "type": "csi", "plugin_id": "x", "secrets": {"k": TOPSECRET}}`},
		{"json unquoted mount flag", `{"id": "db", "type": "csi", "plugin_id": "x", "mount_options": {"mount_flags": [TOPSECRET]}}`},
		{"json word after a secret", `{"id": "db", "type": "csi", "plugin_id": "x", "secrets": {"k": "x" TOPSECRET}}`},
		{"json secret starting with a digit", `{"id": "db", "type": "csi", "plugin_id": "x", "secrets": [{"k": 1TOPSECRET}]}`},
		{"json single-quoted secret", `{"id": "db", "type": "csi", "plugin_id": "x", "secrets": {"k": 'TOPSECRET'}}`},
		// HCL quotes a template directive's keyword it does not know: in a secret, the secret.
		{"template keyword in a secret", baseVolume + "secrets {\n  k = \"%{ TOPSECRET }\"\n}"},
		{"template keyword in a mount flag", baseVolume + "mount_options {\n  mount_flags = [\"%{TOPSECRET}\"]\n}"},
		// A value written unquoted that starts as a comment is a comment, on the line shown.
		{"unquoted secret starting with #", baseVolume + "secrets {\n  k = #TOPSECRET\n}"},
		{"unquoted env value starting with //", "plugin \"p\" {\ntype = \"node\"\nsocket = \"/s\"\nexec {\ncommand = \"/x\"\nenv = { A = //TOPSECRET\n}\n}\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, diags := renderFailure(t, tt.src, 80)
			if strings.Contains(text, secret) {
				t.Errorf("secret rendered:\n%s", text)
			}
			for _, j := range JSONDiagnostics("t.spec", diags) {
				if strings.Contains(j.Summary+j.Detail, secret) {
					t.Errorf("secret in JSON diagnostic: %+v", j)
				}
			}
		})
	}
}

// renderFailure parses src, a spec that must fail, and returns its diagnostics and their text
// as volctl writes them, width columns wide.
func renderFailure(t *testing.T, src string, width uint) (string, hcl.Diagnostics) {
	t.Helper()
	p := NewParser()
	_, diags := p.Parse("t.spec", []byte(src), VerbAny)
	if !diags.HasErrors() {
		t.Fatal("the case must produce an error to render")
	}
	var out strings.Builder
	if err := p.WriteDiagnostics(&out, diags, width, false); err != nil {
		t.Fatal(err)
	}
	return out.String(), diags
}

// Parse parses a spec file of any kind with a new Parser (volctl's own callers keep the Parser,
// to render the diagnostics).
func Parse(filename string, src []byte, verb Verb) (*File, hcl.Diagnostics) {
	return NewParser().Parse(filename, src, verb)
}

// TestByteOrderMark: an editor that saves UTF-8 with a byte order mark (Notepad does) writes
// EF BB BF before the first character. HCL's parser skips it; a JSON spec must read the same,
// not fail with "Invalid start of value" at 1:1 over a character nobody can see: a volume spec
// gets the one error saying what it is (Nomad refuses it: TestByteOrderMarkIsRefused), the
// other specs none. Positions count as HCL's do: the mark takes no column, its three bytes are
// kept in the offsets.
func TestByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	good := map[string]string{
		"v.hcl":  "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
		"v.json": `{"id": "db", "type": "csi", "plugin_id": "ebs", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}`,
	}
	for name, src := range good {
		if _, diags := NewParser().ParseVolume(name, []byte(bom+src), VerbAny); len(diags) != 1 || diags[0].Summary != "Byte order mark" {
			t.Errorf("%s with a byte order mark: %v, want the one error for the mark", name, diags)
		}
		plugin := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n}\n"
		if strings.HasSuffix(name, ".json") {
			plugin = `{"plugin": {"p": {"type": "monolith", "socket": "/run/p.sock"}}}`
		}
		if _, diags := NewParser().ParsePlugins("p"+filepath.Ext(name), []byte(bom+plugin)); len(diags) != 0 {
			t.Errorf("plugin spec %s with a byte order mark: %v", name, diags)
		}
	}
	bad := map[string]string{
		"b.hcl":  "id = \"db\"\ntype = 7\n",
		"b.json": "{\"id\": \"db\",\n \"type\": 7}",
	}
	for name, src := range bad {
		for _, prefix := range []string{"", bom} {
			p := NewParser()
			_, diags := p.ParseVolume(name, []byte(prefix+src), VerbAny)
			var found bool
			for _, d := range diags {
				if d.Subject == nil || !strings.Contains(d.Detail, "type") || d.Subject.Start.Line != 2 {
					continue
				}
				found = true
				if want := len(prefix) + strings.Index(src, "7"); d.Subject.Start.Byte != want {
					t.Errorf("%s (mark %v): the error starts at byte %d, want %d", name, prefix != "", d.Subject.Start.Byte, want)
				}
			}
			if !found {
				t.Errorf("%s (mark %v): no diagnostic about type on line 2: %v", name, prefix != "", diags)
			}
			var out strings.Builder
			if err := p.WriteDiagnostics(&out, diags, 0, false); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "Invalid start of value") {
				t.Errorf("%s (mark %v): %s", name, prefix != "", out.String())
			}
		}
	}
}

// TestShortSecretWarned: a secret value of one or two bytes cannot be scrubbed from a plugin's
// messages (csi's scrub leaves such values alone): the spec is accepted, as CSI allows it, with
// a warning naming the key and the length, never the value, in the text or in the source line
// quoted under it.
func TestShortSecretWarned(t *testing.T) {
	src := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nexternal_id = \"x\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
		"secrets = { pin = \"Q7\", password = \"long-enough\", empty = \"\" }\n"
	p := NewParser()
	v, diags := p.ParseVolume("t.hcl", []byte(src), VerbRegister)
	if diags.HasErrors() || v == nil {
		t.Fatal(diags)
	}
	if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Secret too short to scrub" ||
		!strings.Contains(diags[0].Detail, `secret "pin" is 2 bytes long`) {
		t.Fatalf("want one warning for the 2-byte secret \"pin\", got %v", diags)
	}
	var out strings.Builder
	if err := p.WriteDiagnostics(&out, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Q7") {
		t.Errorf("the warning shows the secret:\n%s", out.String())
	}
}

// TestMapWrittenAsAList: a map written as a list of maps, which Nomad reads (merging the maps,
// or, for segments, making a topology of each), gets one error saying what to write in the
// file's syntax and what Nomad would make of it; not "Missing topology segments" beside it.
func TestMapWrittenAsAList(t *testing.T) {
	head := "id = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	for _, c := range []struct{ name, src, want string }{
		{"v.hcl", head + "topology_request {\n  required {\n    topology { segments = [{ rack = \"R1\" }, { zone = \"Z1\" }] }\n  }\n}\n",
			"write segments = { key = \"value\" }. Nomad makes each map of such a list a topology of its own"},
		{"v.hcl", head + "parameters = [{ a = \"x\" }]\n", "write parameters = { key = \"value\" }. Nomad merges the maps"},
		{"v.json", `{"id": "v", "type": "csi", "plugin_id": "p", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
		  "topology_request": {"required": [{"topology": [{"segments": [{"rack": "R1"}]}]}]}}`,
			`write "segments": {"key": "value"}. Nomad makes each map of such a list a topology of its own`},
	} {
		p := NewParser()
		_, diags := p.ParseVolume(c.name, []byte(c.src), VerbAny)
		if len(diags) != 1 || diags[0].Summary != "Map written as a list" || !strings.Contains(diags[0].Detail, c.want) {
			t.Errorf("%s: want one error %q saying %q, got:\n%s", c.src, "Map written as a list", c.want, renderPlain(p, diags))
		}
	}
}

// TestJSONInvalidUTF8IsRefused: HCL's JSON parser reads a byte that is not UTF-8 as U+FFFD, so
// a JSON spec's socket path or value was silently other text than the file's (the native parser
// refuses such a file, and Nomad both: "illegal UTF-8 encoding"). It is refused, at the byte,
// without quoting it (it may be a secret's).
func TestJSONInvalidUTF8IsRefused(t *testing.T) {
	for _, c := range []struct {
		name, src string
		col       int
	}{
		{"v.json", "{\"id\": \"v\", \"name\": \"a\xffb\", \"type\": \"csi\", \"plugin_id\": \"p\", \"capability\": [{\"access_mode\": \"single-node-writer\", \"attachment_mode\": \"file-system\"}]}", 23},
		{"p.json", "{\"plugin\": {\"p\": {\"type\": \"monolith\", \"socket\": \"/run/\xfe.sock\"}}}", 55},
		{"s.json", "{\"id\": \"v\", \"secrets\": {\"k\": \"hun\xc3ter2\"}}", 34},
	} {
		p := NewParser()
		f, diags := p.Parse(c.name, []byte(c.src), VerbAny)
		if f != nil || len(diags) != 1 || diags[0].Summary != "Invalid character encoding" || diags[0].Subject.Start.Column != c.col {
			t.Errorf("%q: want one error \"Invalid character encoding\" at 1:%d, got:\n%s", c.src, c.col, renderPlain(p, diags))
		} else if out := renderPlain(p, diags); strings.Contains(out, "hun") {
			t.Errorf("the secret is shown:\n%s", out)
		}
	}
}

// A plugin's own IDs (external_id, snapshot_id, clone_id) past the CSI spec's 128 bytes: Azure's
// disk IDs are resource paths longer than that. volctl stores what a plugin answers and exports
// it, so a spec holding one must register (or create from the snapshot) again: a warning that
// names the field and the limit, not an error.
func TestPluginIDsPastTheCSILimitAreWarnedOf(t *testing.T) {
	long := "/subscriptions/0b5b0a2e-1a2b-4c3d-9e8f-0123456789ab/resourceGroups/mc_prod-aks_westeurope/providers/Microsoft.Compute/disks/pvc-3f0e8a7c-2b1d-4e5f-8a9b-0c1d2e3f4a5b"
	for _, tc := range []struct {
		field string
		verb  Verb
	}{{"external_id", VerbRegister}, {"snapshot_id", VerbCreate}, {"clone_id", VerbCreate}} {
		src := baseVolume + tc.field + ` = "` + long + `"` + "\n"
		if tc.verb == VerbCreate {
			src += "name = \"db\"\n"
		}
		v, diags := ParseVolume("v.hcl", []byte(src), tc.verb)
		if diags.HasErrors() || v == nil {
			t.Fatalf("%s of %d bytes: %v; want it kept, with a warning", tc.field, len(long), diags)
		}
		if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || !strings.Contains(diags[0].Detail, tc.field) || !strings.Contains(diags[0].Detail, "128 bytes") {
			t.Errorf("%s: diagnostics %v, want one warning naming it and the 128-byte limit", tc.field, diags)
		}
		if got := map[string]string{"external_id": v.ExternalID, "snapshot_id": v.SnapshotID, "clone_id": v.CloneID}[tc.field]; got != long {
			t.Errorf("%s = %q, want it as written", tc.field, got)
		}
	}
}

// TestSecretInTheVolumesNamesWarned: a secret value that is part of the volume's ID, name or
// plugin ID ("database" for volume "database", a common choice in examples) is masked wherever
// volctl prints it, the volume's own ID included: volume status listed the volume as
// [REDACTED], its events and errors named [REDACTED], with nothing saying why. The spec is
// accepted with a warning naming the key and which name, never the value; a value in no name,
// and one too short to be scrubbed, get none of it.
func TestSecretInTheVolumesNamesWarned(t *testing.T) {
	for _, c := range []struct{ secrets, want string }{
		{`{ token = "database" }`, "part of the volume's ID"},
		{`{ token = "prod-db" }`, "part of the volume's name"},
		{`{ token = "ebs-csi" }`, "part of the volume's plugin ID"},
		{`{ token = "s3cr3t-value" }`, ""},
		{`{ token = "db" }`, ""}, // 2 bytes: the short-secret warning only
	} {
		src := "id = \"database\"\nname = \"prod-db-1\"\ntype = \"csi\"\nplugin_id = \"ebs-csi\"\nexternal_id = \"x\"\n" +
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
			"secrets = " + c.secrets + "\n"
		p := NewParser()
		v, diags := p.ParseVolume("t.hcl", []byte(src), VerbRegister)
		if diags.HasErrors() || v == nil {
			t.Fatal(diags)
		}
		var named []string
		for _, d := range diags {
			if d.Summary == "Secret in the volume's names" {
				named = append(named, d.Detail)
			}
		}
		if c.want == "" {
			if len(named) != 0 {
				t.Errorf("%s: warned %q; want no such warning", c.secrets, named)
			}
			continue
		}
		if len(named) != 1 || !strings.Contains(named[0], c.want) || !strings.Contains(named[0], `secret "token"`) {
			t.Errorf("%s: warnings %v; want one saying the value is %s, naming the key", c.secrets, diags, c.want)
		}
		var out strings.Builder
		if err := p.WriteDiagnostics(&out, diags, 0, false); err != nil {
			t.Fatal(err)
		}
		if value := strings.Split(c.secrets, `"`)[1]; strings.Contains(out.String(), value) {
			t.Errorf("%s: the warning shows the secret, quoted or not:\n%s", c.secrets, out.String())
		}
	}
}

// A value volctl masks from all it prints is part of a name it prints, with no warning: a
// secret in the volume's external ID (volume status prints it), and a mount flag's secret
// (password=, whose value alone is masked too) in its ID (review32a). Each is warned of, naming
// what holds the value and which name, never the value.
func TestSecretInTheVolumesExternalIDOrAMountFlagWarned(t *testing.T) {
	for _, c := range []struct{ name, extra, value, what, where string }{
		{"secret in external_id", "external_id = \"vol-database-01\"\nsecrets = { token = \"database\" }\n", "database", `secret "token"`, "external ID"},
		{"mount flag secret in ID", "external_id = \"x\"\nmount_options {\n  mount_flags = [\"noatime\", \"password=prod-db\"]\n}\n", "prod-db", "mount_flags[1]", "ID"},
	} {
		src := "id = \"prod-db\"\nname = \"prod-db\"\ntype = \"csi\"\nplugin_id = \"ebs-csi\"\n" +
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" + c.extra
		p := NewParser()
		v, diags := p.ParseVolume("t.hcl", []byte(src), VerbRegister)
		if diags.HasErrors() || v == nil {
			t.Fatalf("%s: %v", c.name, diags)
		}
		var named []string
		for _, d := range diags {
			if d.Summary == "Secret in the volume's names" {
				named = append(named, d.Detail)
			}
		}
		if len(named) != 1 || !strings.Contains(named[0], c.what) || !strings.Contains(named[0], "the volume's "+c.where+".") {
			t.Errorf("%s: warnings %q; want one naming %s and the volume's %s", c.name, named, c.what, c.where)
		}
		for _, d := range named {
			if strings.Contains(d, c.value) {
				t.Errorf("%s: the warning shows the value: %s", c.name, d)
			}
		}
	}
}
