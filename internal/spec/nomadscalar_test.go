package spec

import (
	"reflect"
	"strings"
	"testing"
)

// TestScalarsAsNomadSendsThem: a bool or number written in parameters, secrets, context or
// mount_options is sent as the string `nomad volume register` sends for the same file, in every
// form volctl reads (HCL2 blocks and attributes, HCL1 that needs the rewrite, JSON). The
// expected strings are what Nomad (the snapshot's CLI, reading with HCL1 and
// mapstructure.WeakDecode) put in its register request for these values.
func TestScalarsAsNomadSendsThem(t *testing.T) {
	wantMap := map[string]string{
		"on": "1", "off": "0", "uid": "1000", "neg": "-7", "f": "1.5", "exp": "1000",
		"big": "9223372036854775807", "bigf": "12345678901234567000", "small": "0.000001", "s": "x",
	}
	const values = `on = true
  off = false
  uid = 1000
  neg = -7
  f = 1.50
  exp = 1e3
  big = 9223372036854775807
  bigf = 12345678901234567890.5
  small = 0.000001
  s = "x"`
	head := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	block := func(name string) string { return name + " {\n  " + values + "\n}\n" }
	attr := func(name string) string { return name + " = {\n  " + values + "\n}\n" }
	mo := "mount_options {\n  fs_type = 1.50\n  mount_flags = [1.50, -2, 1e3, true]\n}\n"
	jsonValues := `{"on": true, "off": false, "uid": 1000, "neg": -7, "f": 1.50, "exp": 1e3,
  "big": 9223372036854775807, "bigf": 12345678901234567890.5, "small": 0.000001, "s": "x"}`
	for _, c := range []struct{ name, src string }{
		{"hcl2 blocks", head + block("parameters") + block("secrets") + block("context") + mo},
		{"hcl2 attributes", head + attr("parameters") + attr("secrets") + attr("context") + mo},
		// A quoted argument name is HCL1 only: the file goes through the rewrite.
		{"hcl1", head + "\"name\" = \"n\"\n" + block("parameters") + block("secrets") + block("context") + mo},
		{"json", `{"id": "db", "type": "csi", "plugin_id": "ebs",
  "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
  "parameters": ` + jsonValues + `, "secrets": ` + jsonValues + `, "context": ` + jsonValues + `,
  "mount_options": {"fs_type": 1.50, "mount_flags": [1.50, -2, 1e3, "true"]}}`},
	} {
		name := "v.hcl"
		if c.name == "json" {
			name = "v.json"
		}
		v, diags := ParseVolume(name, []byte(c.src), VerbAny)
		if diags.HasErrors() || v == nil {
			t.Errorf("%s: %v", c.name, diags)
			continue
		}
		for _, m := range []struct {
			what string
			got  map[string]string
		}{{"parameters", v.Parameters}, {"secrets", v.Secrets.Plain()}, {"context", v.Context}} {
			if !reflect.DeepEqual(m.got, wantMap) {
				t.Errorf("%s: %s %q\nwant %q", c.name, m.what, m.got, wantMap)
			}
		}
		if v.MountOptions == nil || v.MountOptions.FSType != "1.50" ||
			!reflect.DeepEqual([]string(v.MountOptions.MountFlags.Plain()), []string{"1.50", "-2", "1e3", "true"}) {
			t.Errorf("%s: mount_options %q %q, want fs_type \"1.50\" and flags [\"1.50\" \"-2\" \"1e3\" \"true\"], numbers as written",
				c.name, v.MountOptions.FSType, v.MountOptions.MountFlags.Plain())
		}
	}
}

// A whole number beyond int64 in parameters makes Nomad refuse the file ("value out of range"):
// volctl refuses it too, saying how to write it, rather than send a string Nomad never would.
func TestWholeNumberBeyondInt64IsRefused(t *testing.T) {
	for _, src := range []string{
		"id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nparameters {\n  big = 12345678901234567890\n}\n",
		"id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nparameters {\n  big = -12345678901234567890\n}\n",
	} {
		_, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		found := false
		for _, d := range diags {
			found = found || strings.Contains(d.Detail, "write it as a string")
		}
		if !found {
			t.Errorf("%s: %v, want an error saying to quote it", src, diags)
		}
	}
}
