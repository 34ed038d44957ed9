package csi_test

// secrets38: a value echoed in another case than it was sent; a secret's halves a blank line
// apart; mount(8)'s own words among the mount flags.

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// swapCase is s with the case of each ASCII letter swapped.
func swapCase(s string) string {
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

// The adversary: a plugin (or the mount helper whose stderr it quotes) that upper-cases what
// it echoes ("PASSWORD=HUNTER2-LONGER"), lower-cases it, or swaps its case, as it is, quoted,
// percent-encoded, with a colour inside, or base64 or hex of the upper- or lower-cased value.
// A token's letters are the token to whoever reads them, in any case. Before, the scrubber
// matched each value in its own case only, and each of these was shown.
func TestScrubFindsALongValueInAnyCase(t *testing.T) {
	t.Parallel()
	const secret = "Hunter2-Longer q&x"
	up, low := strings.ToUpper(secret), strings.ToLower(secret)
	for name, echoed := range map[string]string{
		"upper-cased":                  "PASSWORD=" + up,
		"lower-cased":                  "password=" + low,
		"case swapped":                 "password=" + swapCase(secret),
		"upper-cased, JSON-quoted":     `{"password":"` + strings.ReplaceAll(up, "&", `\u0026`) + `"}`,
		"upper-cased, percent-encoded": "https://backend/login?pw=" + url.QueryEscape(up),
		"upper-cased, percent-encoded, lower-case digits": "https://backend/login?pw=" + strings.ToLower(url.PathEscape(up)),
		"upper-cased, a colour inside":                    up[:6] + "\x1b[1m" + up[6:],
		"upper-cased, wrapped":                            "key: HUNTER2-\n  LONGER Q&X",
		"base64 of the upper-cased":                       "auth " + base64.StdEncoding.EncodeToString([]byte(up)),
		"base64 of the lower-cased":                       "auth " + base64.RawURLEncoding.EncodeToString([]byte(low)),
		"base64 of the upper-cased, in basic auth":        "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+up)),
		"hex of the upper-cased":                          "dump " + hex.EncodeToString([]byte(up)),
	} {
		msg := "mount failed: " + echoed + " rejected"
		got := csi.Scrubber([]string{secret})(msg)
		if !strings.Contains(got, "[REDACTED]") || !strings.HasPrefix(got, "mount failed: ") || !strings.HasSuffix(got, " rejected") {
			t.Errorf("%s: scrubbed %q\n to %q; want the value masked, the words around it kept", name, msg, got)
		}
		for _, part := range []string{"hunter2", "longer", "q&x"} {
			if strings.Contains(strings.ToLower(got), part) {
				t.Errorf("%s: scrubbed %q\n to %q: %q of the secret is left", name, msg, got, part)
			}
		}
		for _, enc := range []string{base64.StdEncoding.EncodeToString([]byte(up)), hex.EncodeToString([]byte(up)), base64.RawURLEncoding.EncodeToString([]byte(low))} {
			if strings.Contains(got, enc[4:len(enc)-4]) {
				t.Errorf("%s: scrubbed %q\n to %q: the encoded value is left", name, msg, got)
			}
		}
	}
	// The words around it, in any case, are kept.
	msg := "MOUNT FAILED: PASSWORD=" + up + " REJECTED by Server"
	if got, want := csi.Scrubber([]string{secret})(msg), "MOUNT FAILED: PASSWORD=[REDACTED] REJECTED by Server"; got != want {
		t.Errorf("scrubbed %q\n to %q, want %q", msg, got, want)
	}
}

// The honest case: a value shorter than spec.MinFoldLen (8 bytes, the Nomad client's rule)
// is a word a person chose ("Volume", "Secret1"), which an honest message holds in another
// case: kept there, masked in its own case as before. And a value of 8 bytes or more with no
// letter has one case only.
func TestScrubLeavesAShortValueInAnotherCase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ value, msg, want string }{
		{"volume", `Volume "db" not found; volume db`, `Volume "db" not found; [REDACTED] db`},
		{"secret1", "SECRET1 is not a key; secret1", "SECRET1 is not a key; [REDACTED]"},
		{"ext4-fs", "EXT4-FS (sdb1): mounted; ext4-fs", "EXT4-FS (sdb1): mounted; [REDACTED]"},
		{"12345678", "uid 12345678 and 1234567", "uid [REDACTED] and 1234567"},
	} {
		if len(c.value) >= 8 && strings.ContainsFunc(c.value, func(r rune) bool { return 'a' <= r && r <= 'z' }) {
			t.Fatalf("%q has a letter and spec.MinFoldLen bytes: the case tests nothing", c.value)
		}
		if got := csi.Scrubber([]string{c.value})(c.msg); got != c.want {
			t.Errorf("value %q: scrubbed %q\n to %q, want %q", c.value, c.msg, got, c.want)
		}
	}
}

// The adversary: a plugin that writes a secret's halves a blank line apart (two line feeds,
// raw or quoted, a CRLF text's, blanks or a colour's reset on the blank line). Whoever reads the
// bytes reads "hunter2-" and then "s3cret", and a terminal draws them two rows apart, as a
// vertical tab twice does, which was masked. Before (secrets38: secrets37 had held a blank line
// no break), each was shown.
func TestScrubJoinsASecretsHalvesABlankLineApart(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		{"LF LF", "hunter2-\n\ns3cret"},
		{"LF LF quoted", `hunter2-\n\ns3cret`},
		{"CRLF CRLF", "hunter2-\r\n\r\ns3cret"},
		{"CRLF CRLF quoted", `hunter2-\r\n\r\ns3cret`},
		{"LF, blanks, LF, indent", "hunter2-\n  \t\n    s3cret"},
		{"three LFs", "hunter2-\n\n\ns3cret"},
		{"LF, a colour's reset, LF", "hunter2-\n\x1b[0m\ns3cret"},
		// Held before, and still: the same rows a vertical tab draws.
		{"VT VT", "hunter2-\v\vs3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// Paragraphs whose ends spell no value.
		{"hunter2-XXX\n\ns3cret", "hunter2-XXX\n\ns3cret"},
		{"hunter2-s3\n\n.cret", "hunter2-s3\n\n.cret"},
	})
	msg := "step 1 done.\n\nstep 2: token hunter2-\n\ns3cret rejected\n\nstep 3"
	if got, want := csi.Scrubber([]string{"hunter2-s3cret"})(msg), "step 1 done.\n\nstep 2: token [REDACTED] rejected\n\nstep 3"; got != want {
		t.Errorf("scrubbed %+q\n to %+q, want %+q", msg, got, want)
	}
}

// The honest case: words of mount(8)'s vocabulary are not the values the scrubber is given
// (spec.ShownMountFlag: store.Tx.SecretValues and the request's own flags leave them out), so a
// helper's message saying which it refused is shown; a flag with a value is one still.
func TestMountVocabularyIsNoSecret(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"noatime", "sync", "dev", "rw,noatime", " nodiratime ", "_netdev", "defaults"} {
		if !spec.ShownMountFlag(f) {
			t.Errorf("%q is mount(8)'s own word, and taken for a secret", f)
		}
	}
	for _, f := range []string{"password=hunter2", "noatime,password=hunter2", "uid=1000", "hunter2", "", "noatime,", "sync2"} {
		if spec.ShownMountFlag(f) {
			t.Errorf("%q is taken for a word of mount(8)'s vocabulary", f)
		}
	}
}
