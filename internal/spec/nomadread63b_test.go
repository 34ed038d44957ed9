package spec

import (
	"strings"
	"testing"
)

// nomadNulls matched a null by its path as written, "capability.[].access_mode",
// "mount_options.mount_flags", "topology_request.required": the forms of one block HCL2's JSON
// reader (and Nomad's HCL1 JSON reader, which flattens a list of objects into the block's
// items) take alike were missed: a capability written as one object, not a list of them
// (volctl then reads a volume with its only capability dropped, no capability at all, the
// very bug TestJSONNullInARequiredFieldIsRefused fixed), and mount_options or
// topology_request written as a list of one object. And encoding/json stops at a raw tab in
// a string, which both HCL readers accept, so every null after it was missed (blockPath, and
// the walk on the text with raw control characters escaped, now). Found by helper
// review63 (own2).
func TestJSONNullInOtherFormsOfABlockIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"capability as one object", jsonVolumeWith(map[string]string{
			"capability": `{"access_mode": null, "attachment_mode": "file-system"}`})},
		{"mount_options as a list", jsonVolumeWith(map[string]string{
			"mount_options": `[{"fs_type": "ext4", "mount_flags": null}]`})},
		{"topology_request as a list", jsonVolumeWith(map[string]string{
			"topology_request": `[{"required": null}]`})},
		{"after a raw tab in a parameter", `{"id": "vol1", "name": "vol1", "type": "csi", "plugin_id": "hostpath", "parameters": {"note": "a` + "\t" + `b"}, ` +
			`"capability": [{"access_mode": null, "attachment_mode": "file-system"}, {"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, diags := ParseVolume("vol.json", []byte(tc.src), VerbAny)
			if v != nil || !diags.HasErrors() {
				var got any = "nil"
				if v != nil {
					got = volctlSends(v)
				}
				t.Errorf("%s\nvolctl says valid (reads %+v); the same null in the block's other form is refused, and Nomad reads both forms alike", strings.TrimSpace(tc.src), got)
			}
		})
	}
}

// The HCL null refusal (first in volume.go) looked at the volume's top-level arguments only: a null in
// a block (capability, mount_options) was read by HCL2 as the argument left out, where Nomad's
// HCL1 reader has no null ("Unknown token: IDENT null") and refuses the file. volctl said
// valid, and for a capability's null mode dropped that capability without a word. Found by
// helper review63 (own2).
func TestHCLNullInsideABlockIsRefused(t *testing.T) {
	for _, extra := range []string{
		"capability {\n  access_mode     = null\n  attachment_mode = \"file-system\"\n}\n",
		"mount_options {\n  fs_type = null\n}\n",
		"mount_options {\n  mount_flags = null\n}\n",
	} {
		t.Run(strings.Fields(extra)[0]+" "+strings.Fields(extra)[2], func(t *testing.T) {
			src := baseVolume + extra
			v, diags := ParseVolume("vol.hcl", []byte(src), VerbAny)
			if v != nil || !diags.HasErrors() {
				var got any = "nil"
				if v != nil {
					got = volctlSends(v)
				}
				t.Errorf("%s\nvolctl says valid (reads %+v); Nomad's HCL1 has no null and refuses the file", extra, got)
			}
		})
	}
}

// `secrets = null` (or parameters, context): one wrong value, two errors were reported, the null refusal
// and "Incorrect value type: secrets must be a map of strings", which advises a map where the
// other says to leave the argument out. Found by helper review63 (own2).
func TestHCLNullIsReportedOnce(t *testing.T) {
	for _, name := range []string{"secrets", "parameters", "context"} {
		t.Run(name, func(t *testing.T) {
			_, diags := ParseVolume("vol.hcl", []byte(baseVolume+name+" = null\n"), VerbAny)
			if errs := errorTexts(diags); len(errs) != 1 {
				t.Errorf("%s = null: %d errors for one value, want 1:\n%s", name, len(errs), strings.Join(errs, "\n"))
			}
		})
	}
}

// unclosedInterp's error said Nomad refuses the file ("literal not terminated") whenever a
// "$${" has no "}" before its string's quote. But HCL1's scanner, inside "${", reads past
// quotes and newlines to the next "}" (braces > 0: neither '"' nor '\n' ends the string): with
// a "}" in a later string, Nomad reads the file, a = "$${\"\n  b = \"}" and no b at all, and
// registers it. The refusal is right (the two read other values) but the error states a
// refusal that does not happen and hid what Nomad does send; it says which, now. Found by helper review63 (own2).
func TestUnclosedDollarEscapeErrorDoesNotClaimARefusalNomadDoesNotMake(t *testing.T) {
	src := baseVolume + "parameters {\n  a = \"$${\"\n  b = \"}\"\n}\n"
	_, diags := ParseVolume("vol.hcl", []byte(src), VerbAny)
	for _, e := range errorTexts(diags) {
		if strings.Contains(e, "literal not terminated") || strings.Contains(e, "refuses the file") {
			t.Errorf("%s\nerror: %s\nNomad reads this file (HCL1 reads a = %q, and no b) and registers it; the error says it refuses it", src, e, "$${\"\n  b = \"}")
		}
	}
}
