package csi_test

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// encodedSecret has a character each encoding escapes ('@', '/', ':', ' ', '+', '?', '>'), and
// its standard and URL-safe base64 differ ('+' against '-'), padded and raw too ("==").
const encodedSecret = "p@ss/w:rd +1?>>?"

// TestScrubEncodedForms: a plugin echoes a secret re-encoded, in a URL it builds (user info,
// query, path; upper- or lower-case hex digits), as base64 in each alphabet with and without
// padding, or hex; each form is scrubbed with the text around it kept.
func TestScrubEncodedForms(t *testing.T) {
	s := encodedSecret
	if base64.StdEncoding.EncodeToString([]byte(s)) == base64.URLEncoding.EncodeToString([]byte(s)) ||
		!strings.HasSuffix(base64.StdEncoding.EncodeToString([]byte(s)), "==") {
		t.Fatalf("%q does not tell the base64 forms apart", s)
	}
	userinfo := (&url.URL{Scheme: "https", User: url.UserPassword("u", s), Host: "host"}).String()
	lowerHex := strings.NewReplacer("%40", "%40", "%2F", "%2f", "%3A", "%3a", "%3F", "%3f", "%3E", "%3e", "%2B", "%2b").Replace(url.QueryEscape(s))
	for _, c := range []struct{ name, msg, want string }{
		{"URL user info", "GET " + userinfo + "/v1: 401", "GET https://u:[REDACTED]@host/v1: 401"},
		{"url.QueryEscape", "GET /v1?token=" + url.QueryEscape(s) + "&x=1", "GET /v1?token=[REDACTED]&x=1"},
		{"url.PathEscape", "GET /v1/" + url.PathEscape(s) + "/stage", "GET /v1/[REDACTED]/stage"},
		{"percent, lower-case hex", "GET /v1?token=" + lowerHex, "GET /v1?token=[REDACTED]"},
		{"base64 std", "token " + base64.StdEncoding.EncodeToString([]byte(s)) + " refused", "token [REDACTED] refused"},
		{"base64 URL", "token " + base64.URLEncoding.EncodeToString([]byte(s)) + " refused", "token [REDACTED] refused"},
		{"base64 raw std", "token " + base64.RawStdEncoding.EncodeToString([]byte(s)) + " refused", "token [REDACTED] refused"},
		{"base64 raw URL", "token " + base64.RawURLEncoding.EncodeToString([]byte(s)) + " refused", "token [REDACTED] refused"},
		{"base64 in a query", "GET /v1?t=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(s))), "GET /v1?t=[REDACTED]"},
		{"hex", "key=" + hex.EncodeToString([]byte(s)) + ";", "key=[REDACTED];"},
		{"HEX", "key=" + strings.ToUpper(hex.EncodeToString([]byte(s))) + ";", "key=[REDACTED];"},
	} {
		if got := csi.Scrubber([]string{s})(c.msg); got != c.want {
			t.Errorf("%s: scrubbed %q\n to %q\nwant %q", c.name, c.msg, got, c.want)
		}
	}
}

// TestScrubBase64WithinLongerText: a secret encoded with what surrounds it, as in HTTP basic
// auth (base64 of "user:secret"), lands on any of the three alignments of base64's 3-byte
// groups. The characters the secret alone determines are scrubbed whatever the alignment;
// at most a character at each end, shared with the neighbours, stays.
func TestScrubBase64WithinLongerText(t *testing.T) {
	s := encodedSecret
	for _, user := range []string{"u", "us", "usr"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			b64 := enc.EncodeToString([]byte(user + ":" + s + "!"))
			msg := "Authorization: Basic " + b64
			got := csi.Scrubber([]string{s})(msg)
			rest, ok := strings.CutPrefix(got, "Authorization: Basic ")
			if !ok || !strings.Contains(rest, "[REDACTED]") {
				t.Errorf("user %q: scrubbed %q to %q", user, msg, got)
				continue
			}
			// What is left of the base64 text: the user's part, the "!" and the padding, and at
			// most two characters holding bits of the secret.
			left := len(rest) - len("[REDACTED]")
			if most := len(b64) - (8*len(s))/6 + 2; left > most {
				t.Errorf("user %q: %d characters of %q left in %q, want at most %d", user, left, b64, got, most)
			}
		}
	}
}

// TestScrubLeavesOtherTextAlone: messages that hold URLs, percent signs, base64, hex and plus
// signs, but no secret in any form, come out byte for byte as they went in.
func TestScrubLeavesOtherTextAlone(t *testing.T) {
	scrub := csi.Scrubber([]string{encodedSecret, "s3cr3t-SENTINEL-4711", "x y z", "ro", "rw"})
	for _, msg := range []string{
		"",
		"volume vol-1 not found",
		"disk 100% full; 5%% reserved; %zz; %4",
		"GET https://user:pa%24%24word@host/v1/vol%2F1?q=a+b&t=c2VjcmV0&x=%E2%82%AC",
		"Authorization: Basic dXNlcjpwYXNzd29yZA==",
		"sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"mount -o ro,noatime,rw /dev/sdb1 /mnt: exit 32; a+b=c; ab; \"a\\u0020b\"",
		"ctl \x01 and ü and \xff invalid",
		"volume vol-1\nnot found\r\n  at c2Vj\n    cmV0 line 2\\nx y\\r\\nz",
	} {
		if got := scrub(msg); got != msg {
			t.Errorf("scrubbed %q\n      to %q", msg, got)
		}
	}
}

// TestScrubOverlappingSecrets: secrets that overlap in a message, or that contain one another,
// are scrubbed whole however the message encodes them, with nothing of either left between or
// after the markers.
func TestScrubOverlappingSecrets(t *testing.T) {
	const a, b = "alpha-shared-part", "shared-part-omega"
	scrub := csi.Scrubber([]string{a, b, "pass", "pass/word"})
	for _, c := range []struct{ msg, want string }{
		{"x alpha-shared-part-omega y", "x [REDACTED] y"},
		{"x " + url.PathEscape("pass/word") + " and pass y", "x [REDACTED] and [REDACTED] y"},
		{"x " + url.QueryEscape("pass/word") + " y", "x [REDACTED] y"},
		{"x " + hex.EncodeToString([]byte("alpha-shared-part-omega")) + " y", "x [REDACTED] y"},
		{"x alpha-shared-partalpha-shared-part y", "x [REDACTED][REDACTED] y"},
	} {
		if got := scrub(c.msg); got != c.want {
			t.Errorf("scrubbed %q\n to %q\nwant %q", c.msg, got, c.want)
		}
	}
}

// TestScrubFloorHoldsForEncodedForms: a value shorter than three bytes is not scrubbed in any
// form (its encodings, "726f" or "cm8=", are as short and as common).
func TestScrubFloorHoldsForEncodedForms(t *testing.T) {
	msg := "flags ro 726f cm8= cm8 r%6F"
	if got := csi.Scrubber([]string{"ro"})(msg); got != msg {
		t.Errorf("scrubbed %q to %q", msg, got)
	}
}

// TestScrubSecretsWithPercentAndPlus: a secret holding '%' or '+' is scrubbed as it is and
// percent-encoded, a '%XX' in it is not read as an escape of the secret's own, and a message
// that spells a secret with some of its bytes percent-encoded has the whole stretch scrubbed,
// escapes included, with a '%' that escapes nothing left alone.
func TestScrubSecretsWithPercentAndPlus(t *testing.T) {
	scrub := csi.Scrubber([]string{"100%+up", "k%41y-value", "pass word"})
	for _, c := range []struct{ msg, want string }{
		{"raw 100%+up; query " + url.QueryEscape("100%+up") + "; path " + url.PathEscape("100%+up"), "raw [REDACTED]; query [REDACTED]; path [REDACTED]"},
		{"raw k%41y-value; query " + url.QueryEscape("k%41y-value"), "raw [REDACTED]; query [REDACTED]"},
		{"kAy-value is another value", "kAy-value is another value"},
		{"p%61ss%20wor%64 and pass+word and pass%2Bword", "[REDACTED] and [REDACTED] and pass%2Bword"},
		{"100% done, 5%+ left, %+up", "100% done, 5%+ left, %+up"},
	} {
		if got := scrub(c.msg); got != c.want {
			t.Errorf("scrubbed %q\n to %q\nwant %q", c.msg, got, c.want)
		}
	}
}

// wrapLines breaks s into lines of width characters joined by sep, as MIME (76, "\r\n"), PEM
// and openssl (64, "\n") and Python's base64.encodebytes (76, "\n") write base64.
func wrapLines(s string, width int, sep string) string {
	var lines []string
	for len(s) > width {
		lines, s = append(lines, s[:width]), s[width:]
	}
	return strings.Join(append(lines, s), sep)
}

// TestScrubBase64WrappedAcrossLines: a plugin that dumps a long secret (a service account's
// key, a token) as base64 the way MIME, PEM, openssl or Python's base64.encodebytes write it,
// broken into lines, or a JSON or Go-quoted dump of that (the breaks written \n), or indented
// under a key as YAML is: every line of it is scrubbed, breaks and all, and the text around it
// kept. Before, base64 was looked for only unbroken, and every line of such a dump was shown,
// the whole secret in a few lines.
func TestScrubBase64WrappedAcrossLines(t *testing.T) {
	secret := strings.Repeat("k3y-m@terial/", 9) + "end" // 120 bytes: two lines at 76, three at 64
	scrub := csi.Scrubber([]string{secret})
	for _, c := range []struct {
		name, sep string
		width     int
		enc       *base64.Encoding
		prefix    string
	}{
		{"MIME", "\r\n", 76, base64.StdEncoding, ""},
		{"PEM", "\n", 64, base64.StdEncoding, ""},
		{"encodebytes", "\n", 76, base64.StdEncoding, ""},
		{"URL alphabet", "\n", 64, base64.URLEncoding, ""},
		{"quoted dump", `\n`, 64, base64.StdEncoding, ""},
		{"quoted MIME dump", `\r\n`, 76, base64.StdEncoding, ""},
		{"YAML", "\n    ", 64, base64.StdEncoding, ""},
		{"basic auth", "\n", 64, base64.StdEncoding, "user:"},
		{"basic auth us", "\r\n", 76, base64.StdEncoding, "us:"},
	} {
		b64 := c.enc.EncodeToString([]byte(c.prefix + secret))
		wrapped := wrapLines(b64, c.width, c.sep)
		if !strings.Contains(wrapped, strings.TrimSpace(strings.ReplaceAll(c.sep, `\`, ""))) && wrapped == b64 {
			t.Fatalf("%s: %q is not wrapped", c.name, wrapped)
		}
		msg := "key:\n" + wrapped + "\n-- end of dump"
		got := scrub(msg)
		for i := 0; i+8 <= len(b64); i++ {
			if chunk := b64[i : i+8]; strings.Contains(got, chunk) && !strings.Contains(c.enc.EncodeToString([]byte(c.prefix)), chunk) {
				t.Errorf("%s: %q is left in\n%q", c.name, chunk, got)
				break
			}
		}
		inner, ok := strings.CutPrefix(got, "key:\n")
		if inner, ok = strings.CutSuffix(inner, "\n-- end of dump"); !ok || strings.Count(inner, "[REDACTED]") != 1 {
			t.Errorf("%s: scrubbed %q\n to %q; want the text around the secret kept, the secret one marker", c.name, msg, got)
			continue
		}
		// Of a secret encoded with a prefix, the prefix's characters and at most a character at
		// each end holding some of the secret's bits stay, and the padding (as within one line).
		if left, most := len(inner)-len("[REDACTED]"), len(b64)-(8*len(secret))/6+2; (c.prefix == "" && left != 0) || left > most {
			t.Errorf("%s: %d characters of the encoded secret left in %q", c.name, left, got)
		}
	}
}

// TestScrubFindsAValueCutShort: text quoting a plugin's answer cut (spec.Cut) before a scrub
// that knows the value ends in the value's first bytes, which no search for the whole value
// finds: the longest stretch of at least three bytes before the cut's mark that begins the value
// (or one of its forms but the percent-encoded: those are found by decoding the whole text) is
// scrubbed; two bytes, or text that is not spec.Cut's mark, are not.
func TestScrubFindsAValueCutShort(t *testing.T) {
	const s = "s3cr3t-value-0123456789"
	scrub := csi.Scrubber([]string{s, encodedSecret})
	for _, c := range []struct{ msg, want string }{
		{"id \"" + spec.Cut("vol-"+s, 17) + "\": refused", "id \"vol-[REDACTED]… (10 bytes more)\": refused"},
		{spec.Cut("xs3c", 4) + " " + spec.Cut("ab"+s, 4), "xs3c abs3… (21 bytes more)"}, // no cut, then two bytes
		{spec.Cut("vol-s3c"+s, 7) + ", then " + spec.Cut("vol-s3cr3t-v", 10), "vol-[REDACTED]… (23 bytes more), then vol-[REDACTED]… (2 bytes more)"},
		{spec.Cut("key="+hex.EncodeToString([]byte(encodedSecret)), 14) + "!", "key=[REDACTED]… (22 bytes more)!"},
		{"vol-s3cr3t… (see below)", "vol-s3cr3t… (see below)"},
		{"vol-s3… (5 bytes more)", "vol-s3… (5 bytes more)"},
	} {
		if got := scrub(c.msg); got != c.want {
			t.Errorf("scrubbed %q\n to %q\nwant %q", c.msg, got, c.want)
		}
	}
}

// A value cut by spec.Cut and then quoted in ASCII (%+q, spec.HCLQuotedASCII) carries the
// mark as "\u2026 (": the secret's head before it is scrubbed as before the plain mark. Before,
// it was shown (TestNearStorageRefusalShowsNoPartOfACutSecret, internal/cli).
func TestScrubFindsASecretCutBeforeAnEscapedMark(t *testing.T) {
	const secret = "pw62-near-cut-s3cret-zz"
	scrub := csi.Scrubber([]string{secret})
	for _, quote := range []func(string) string{
		func(s string) string { return fmt.Sprintf("%+q", s) },
		spec.HCLQuotedASCII,
	} {
		msg := "external ID " + quote(spec.Cut("vol-"+strings.Repeat("x", 242)+secret, 256)) + " refused"
		if got := scrub(msg); strings.Contains(got, secret[:8]) {
			t.Errorf("scrubbed %q = %q; the secret's head before the cut is shown", msg, got)
		}
	}
}
