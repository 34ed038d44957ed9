package spec

import (
	"encoding/json"
	"strings"
	"testing"
)

// A secret written as the octal number 0755 is sent as "493" (nomadscalar.go). The "Octal
// number" warning's example names that very pair: its written form was masked, and the detail
// printed "493", the secret as volctl sends it, in text and in --json. docs/specs.md: "A value
// of 3 bytes or more is masked wherever volctl prints it". Found by helper review68.
func TestOctalSecretIsHiddenAsItIsSent(t *testing.T) {
	src := `id = "db"
name = "db"
type = "csi"
plugin_id = "p"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets {
  pin = 0755
}
`
	p := NewParser()
	v, diags := p.ParseVolume("vol.hcl", []byte(src), VerbAny)
	if v == nil {
		t.Fatalf("refused: %v", diags)
	}
	secret := v.Secrets.Plain()["pin"]
	if secret != "493" {
		t.Fatalf("secret read as %q, want the 493 Nomad sends", secret)
	}
	var text strings.Builder
	if err := p.WriteDiagnostics(&text, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(JSONDiagnostics("vol.hcl", diags))
	if err != nil {
		t.Fatal(err)
	}
	for form, out := range map[string]string{"text": text.String(), "json": string(js)} {
		if strings.Contains(out, secret) {
			t.Errorf("%s diagnostics print the secret's value %q:\n%s", form, secret, out)
		}
	}
}

// The engine binds a destination with one pass of strings.Replacer (engine/groups.go): in group
// "g{index}", "/srv/{alloc}" is "/srv/g{index}[0]" for alloc 0, the group's name kept as written.
// The spec's duplicate check (boundTemplate, boundFor) wrote {alloc} as "g{index}[{index}]" and
// then replaced every {index}, the group name's too: it took "/srv/{alloc}" for "/srv/g0[0]" and
// refused the group as two volume_mounts on one path that the engine binds on two, naming a path
// the engine never uses. Found by helper review68.
func TestGroupNameHoldingAPlaceholderKeepsItAsText(t *testing.T) {
	src := `group "g{index}" {
  count = 2
  volume "data" {
    type            = "csi"
    source          = "db"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
  volume "logs" {
    type            = "csi"
    source          = "logs"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "/srv/{alloc}"
  }
  volume_mount {
    volume      = "logs"
    destination = "/srv/g{index}[{index}]"
  }
}
`
	g, diags := NewParser().ParseGroup("g.hcl", []byte(src))
	if g == nil || diags.HasErrors() {
		t.Fatalf("refused; the engine binds alloc g{index}[0]'s mounts at /srv/g{index}[0] and /srv/g0[0], two paths: %v", diags)
	}
}

// A destination holding a NUL byte is refused where it is written: no path can hold one (the
// bind would fail at every run), and the duplicate check's stand-in for a group name's {index}
// is made of them.
func TestDestinationHoldingANULIsRefused(t *testing.T) {
	src := "group \"g\" {\n  volume \"data\" {\n    type = \"csi\"\n    source = \"db\"\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n" +
		"  volume_mount {\n    volume = \"data\"\n    destination = \"/srv/a\\u0000b\"\n  }\n}\n"
	_, diags := NewParser().ParseGroup("g.hcl", []byte(src))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "g.hcl:10,") || !strings.Contains(diags.Error(), "NUL") {
		t.Fatalf("a destination holding a NUL: %v; want it refused at g.hcl:10, naming the NUL", diags)
	}
}
