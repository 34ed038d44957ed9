package csi_test

// recheck39b: the case fold of secrets38 read again for values beyond ASCII.

import (
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/volctl/volctl/internal/csi"
)

// The adversary: a plugin that upper- or lower-cases what it echoes with Unicode's rules (Go's
// strings.ToUpper, Python's str.upper, ICU), or with the Turkish locale's (Java's
// toUpperCase() on a JVM whose default locale is tr_TR: "i" becomes "İ", "I" becomes "ı"),
// or JSON-encodes the upper-cased value with every non-ASCII letter escaped (Python's
// json.dumps). A password's letters are the password to whoever reads them in any case: the
// fold of secrets38 lowered ASCII letters only, and each of these was shown.
func TestScrubFindsANonASCIIValueInAnyCase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ secret, echoed string }{
		{"пароль-секрет", "ПАРОЛЬ-СЕКРЕТ"},
		{"пароль-секрет", strings.Trim(strconv.QuoteToASCII("ПАРОЛЬ-СЕКРЕТ"), `"`)}, // a JSON string's inside
		{"ПАРОЛЬ-СЕКРЕТ", "пароль-секрет"},
		{"Größe-Geheimnis", "GRÖSSE-GEHEIMNIS"},  // Python's, ICU's upper case of ß
		{"Größe-Geheimnis", "GRÖßE-GEHEIMNIS"},   // Go's, which keeps ß
		{"Größe-Geheimnis", "größe-geheimnis"},   // lower-cased
		{"admin-hunter2", "ADMİN-HUNTER2"},       // upper-cased in the Turkish locale
		{"ADMIN-HUNTER2", "admın-hunter2"},       // lower-cased in the Turkish locale
		{"Ελληνικά-μυστικό", "ΕΛΛΗΝΙΚΆ-ΜΥΣΤΙΚΌ"}, // Greek, accents kept as Go upper-cases
	} {
		msg := "mount failed: password=" + c.echoed + " rejected"
		got := csi.Scrubber([]string{c.secret})(msg)
		if got != "mount failed: password=[REDACTED] rejected" {
			t.Errorf("secret %q: scrubbed %q\n to %q; want the value masked, the words around it kept", c.secret, msg, got)
		}
	}
}

// The honest case: a non-ASCII word shorter than spec.MinFoldLen letters ("Тест", 8 bytes
// but 4 letters) is a word an honest message holds in another case, as an ASCII one of 4
// letters is: kept there, masked in its own case as before; and the words around a masked
// value, in any script, are kept.
func TestScrubLeavesAShortNonASCIIValueInAnotherCase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ value, msg, want string }{
		{"тест", "Тест пройден; тест", "Тест пройден; [REDACTED]"},
		{"größe", "GRÖSSE ok; größe", "GRÖSSE ok; [REDACTED]"},
		{"пароль-секрет", "ОШИБКА: ПАРОЛЬ-СЕКРЕТ неверен", "ОШИБКА: [REDACTED] неверен"},
	} {
		if got := csi.Scrubber([]string{c.value})(c.msg); got != c.want {
			t.Errorf("value %q: scrubbed %q\n to %q, want %q", c.value, c.msg, got, c.want)
		}
	}
	// A value with no letter that has a case (digits, CJK) has one case only.
	if !unicode.IsLetter('秘') || unicode.ToUpper('秘') != '秘' {
		t.Fatal("秘 has a case: the test tests nothing")
	}
	if got, want := csi.Scrubber([]string{"秘密の合言葉です"})("key 秘密の合言葉です bad"), "key [REDACTED] bad"; got != want {
		t.Errorf("scrubbed to %q, want %q", got, want)
	}
}

// The adversary: a plugin that wraps its message's lines at a width, cutting a secret of
// non-ASCII letters across a line break (as it is, or upper-cased: the case changed and the
// line cut), or between two of its letters. An ASCII secret so cut was masked (unwrappedView
// joins a break between two base64 characters); one in another script, whose letters are no
// base64 characters, was shown. The honest case: lines of such text that spell no value are
// kept as written.
func TestScrubFindsANonASCIIValueCutAcrossALine(t *testing.T) {
	t.Parallel()
	sc := csi.Scrubber([]string{"пароль-секрет"})
	for _, msg := range []string{"key: пароль-\nсекрет bad", "key: ПАРОЛЬ-\r\n  СЕКРЕТ bad", "key: пароль-сек\nрет bad", `key: "ПАРОЛЬ-СЕК\nРЕТ" bad`} {
		got := sc(msg)
		if !strings.HasPrefix(got, "key: ") || !strings.HasSuffix(got, " bad") || !strings.Contains(got, "[REDACTED]") || strings.Contains(strings.ToLower(got), "секр") {
			t.Errorf("scrubbed %q\n to %q; want the value masked, the words around it kept", msg, got)
		}
	}
	for _, msg := range []string{"пароль-\nне тот секрет", "Ошибка:\nсекрет-пароль не принят\n", "ß\nß"} {
		if got := sc(msg); got != msg {
			t.Errorf("scrubbed %q\n to %q; it spells no value", msg, got)
		}
	}
}
