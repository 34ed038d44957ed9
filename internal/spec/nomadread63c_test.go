package spec

import (
	"strings"
	"testing"
)

// A "$${" with no "}" after it in its string, in a LIST (mount_flags), with the "}" that HCL1's
// scanner reads up to in the list's next string: Nomad's HCL1 reads `"$${", "}"` as ONE string
// (it ignores quotes inside "${...}") and then the list's "]" and the block's "}": it registers
// the file, with one mount flag `$${", "}`. escapedTemplate looks for that "}" only past the
// END of the whole expression (d.src[rng.End.Byte:]), i.e. past the list, where the file has a
// "}" (the block's) but no quote after it, so the error says `nomad volume register` "refuses the
// file ("literal not terminated")", which it does not: the same false claim
// TestUnclosedDollarEscapeErrorDoesNotClaimARefusalNomadDoesNotMake fixed for map values.
// Found by helper review63 own3.
func TestUnclosedDollarEscapeInAListDoesNotClaimARefusal(t *testing.T) {
	src := baseVolume + "mount_options {\n  mount_flags = [\"$${\", \"}\"]\n}\n"
	_, diags := ParseVolume("vol.hcl", []byte(src), VerbAny)
	errs := errorTexts(diags)
	if len(errs) == 0 {
		t.Fatalf("%s\nno error: Nomad reads this list otherwise (one flag)", src)
	}
	for _, e := range errs {
		if strings.Contains(e, "literal not terminated") || strings.Contains(e, "refuses the file") {
			t.Errorf("%s\nerror: %s\nNomad reads this file (HCL1 reads mount_flags = [%q]) and registers it; the error says it refuses it", src, e, "$${\", \"}")
		}
	}
}
