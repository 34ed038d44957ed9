package engine

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestCaseChangedEchoedSecretsScrubbedOnEveryPath is TestEchoedSecretsScrubbedOnEveryPath with
// a plugin that echoes every value upper-cased, lower-cased and with its case swapped, as a
// plugin (or the mount helper it quotes) that shouts its errors does ("PASSWORD=HUNTER2"), and
// base64 of the upper-cased value. Before (secrets38), every path showed each of them: the
// scrubber matched a value in its own case only.
func TestCaseChangedEchoedSecretsScrubbedOnEveryPath(t *testing.T) {
	swap := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case 'a' <= r && r <= 'z':
				return r - 'a' + 'A'
			case 'A' <= r && r <= 'Z':
				return r - 'A' + 'a'
			}
			return r
		}, s)
	}
	echoedSecretsScrubbed(t, echoSentinels{secret: "Echo-Secret@7f3a/x y+z?", volFlag: "VolFlag:7f3a/P@ss=?",
		claimFlag: "ClaimFlag 7f3a+Q@r", other: "Other-Volume-Secret/7f3a:S@t"}, map[string]func(string) string{
		"upper-cased":               strings.ToUpper,
		"lower-cased":               strings.ToLower,
		"case swapped":              swap,
		"base64 of the upper-cased": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(strings.ToUpper(s))) },
	})
}
