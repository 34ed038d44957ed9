package spec

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// equalFoldByRune is SameStorageID as volctl before StorageIDKey defined it (round 32): NFC of
// the trimmed IDs compared by strings.EqualFold rune by rune, bytes that are not UTF-8 compared
// as bytes. It is the independent oracle the key is checked against: written with no key, it
// compares two IDs where the key maps each alone.
func equalFoldByRune(a, b string) bool {
	if a == b {
		return true
	}
	a, b = norm.NFC.String(strings.TrimSpace(a)), norm.NFC.String(strings.TrimSpace(b))
	if utf8.ValidString(a) && utf8.ValidString(b) {
		return strings.EqualFold(a, b)
	}
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra == utf8.RuneError && na == 1 || rb == utf8.RuneError && nb == 1 {
			if a[0] != b[0] {
				return false
			}
			na, nb = 1, 1
		} else if !strings.EqualFold(a[:na], b[:nb]) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == b
}

// widened is what StorageIDKey equates beyond equalFoldByRune, applied first: its
// default-ignorable code points removed, then NFKC.
func widened(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); {
		r, n := utf8.DecodeRuneInString(id[i:])
		if r == utf8.RuneError && n == 1 || !defaultIgnorable(r) {
			b.WriteString(id[i : i+n])
		}
		i += n
	}
	return norm.NFKC.String(b.String())
}

// adversarialIDs are IDs built to break a key: case orbits of three (K, k, KELVIN SIGN; Σ σ ς),
// normal forms, white space of every kind at the ends and inside, invisible characters, NUL,
// bytes that are not UTF-8 (alone, truncated sequences whose lead byte is a valid rune's,
// surrogates, overlong forms), characters NFKC makes longer, and ß and its capital.
var adversarialIDs = []string{
	"", " ", "\t\u00a0\u3000", "vol-1", "VOL-1", " vol-1 ", "vol-1\u00a0", "\u3000Vol-1\n", "vol-2", "vol-11", "vol1",
	"kelvin", "KELVIN", "\u212aelvin", "\u017fs", "SS", "ss", "stra\u00dfe", "STRASSE", "STRA\u1e9eE", "strasse",
	"\u03a3\u03c3\u03c2", "\u03c3\u03c3\u03c3", "caf\u00e9", "cafe\u0301", "CAF\u00c9", "CAFE\u0301", "caf\u00e9\u0301",
	"vol\u200d1", "vol\u200b1", "\u200bvol1", "vol1\u200b", "vol1\ufeff", "vol\u00ad1", "v\ufe0fol1", "vol\u20601",
	"\uff36\uff2f\uff2c\uff11", "\uff56\uff4f\uff4c\uff11", "VOL1", "\ufb01le", "file", "FILE", "\u2460", "1", "\u00b2", "2",
	"vol\x00", "VOL\x00", "vol", "\x00", "vol-\xff", "vol-\xfe", "VOL-\xff", "vol-\ufffd", "vol-\xff\xff", "\xffvol", "\xfevol",
	"\xc3", "\xc3x", "\xc3\xa9", "\xe2\x82", "\xe2\x82x", "\xe2\x82\xac", "\xed\xa0\x80", "\xc0\xaf", "\xe2\x82\u00e9",
	"\ufdfa", "\u3392", "MHZ", "mhz", "\u0130", "i", "I", "\u0131", "\u01c4", "\u01c5", "\u01c6", "D\u017d", "d\u017e",
	"\u0600vol", "vol", "\ufff9vol", "\u2028vol", "vol\u2029", "\u0085vol", "e\u200d\u0301", "\u00e9",
}

// StorageIDKey is exactly SameStorageID's equivalence, checked against an oracle written
// without it: for every pair of adversarial IDs, the keys are equal exactly when
// equalFoldByRune (round 32's rune-by-rune comparison) takes the IDs for one once invisible
// characters are removed and compatibility forms composed; and every pair round 32 took for one
// still is one.
func TestStorageIDKeyIsSameStorageIDsEquivalence(t *testing.T) {
	t.Parallel()
	for _, a := range adversarialIDs {
		for _, b := range adversarialIDs {
			checkKeyPair(t, a, b)
		}
	}
}

func checkKeyPair(t *testing.T, a, b string) {
	t.Helper()
	ka, kb := StorageIDKey(a), StorageIDKey(b)
	if want := equalFoldByRune(widened(a), widened(b)); (ka == kb) != want {
		t.Errorf("StorageIDKey(%+q) = %+q, StorageIDKey(%+q) = %+q; the oracle says same = %v", a, ka, b, kb, want)
	}
	if equalFoldByRune(a, b) && !SameStorageID(a, b) {
		t.Errorf("SameStorageID(%+q, %+q) is false, where round 32 took them for one", a, b)
	}
	if SameStorageID(a, b) != (ka == kb) {
		t.Errorf("SameStorageID(%+q, %+q) = %v, but their keys are %+q and %+q", a, b, SameStorageID(a, b), ka, kb)
	}
}

// Every rune's key agrees with the oracle against every rune of its NFC form's case orbit, in
// an ID around it, and with its own upper and lower case: a sweep of the first two planes, which
// hold every rune with a case (the last, Adlam's, end at U+1E943; the sweep checks there are
// none after), each rune against a handful, not against every rune.
func TestStorageIDKeyAgreesForEveryRune(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x20000, 0x2f800, 0xe0041, 0xf0000, unicode.MaxRune} {
		if unicode.SimpleFold(r) != r || unicode.ToUpper(r) != r || unicode.ToLower(r) != r {
			t.Errorf("U+%04X, past the sweep, has a case: sweep further", r)
		}
	}
	for r := rune(0); r < 0x20000; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		var others []rune
		for _, o := range []rune{unicode.ToUpper(r), unicode.ToLower(r)} {
			if o != r {
				others = append(others, o)
			}
		}
		if r >= utf8.RuneSelf && norm.NFC.IsNormalString(string(r)) {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				others = append(others, f)
			}
		} else if r >= utf8.RuneSelf {
			if n := []rune(norm.NFC.String(string(r))); len(n) == 1 {
				for f := unicode.SimpleFold(n[0]); f != n[0]; f = unicode.SimpleFold(f) {
					others = append(others, f)
				}
			}
		}
		if len(others) == 0 {
			continue // no other rune is r's case: its key is checked with the IDs above
		}
		a := "x" + string(r) + "y"
		ka := StorageIDKey(a)
		for _, o := range others {
			b := "x" + string(o) + "y"
			want := equalFoldByRune(widened(a), widened(b))
			if (ka == StorageIDKey(b)) != want {
				t.Errorf("U+%04X and U+%04X: keys %+q and %+q, the oracle says same = %v", r, o, ka, StorageIDKey(b), want)
			}
			if equalFoldByRune(a, b) && ka != StorageIDKey(b) {
				t.Errorf("U+%04X and U+%04X: round 32 took them for one, their keys differ", r, o)
			}
		}
	}
}

// FuzzStorageIDKey checks any pair of IDs as TestStorageIDKeyIsSameStorageIDsEquivalence does
// (go test -fuzz FuzzStorageIDKey ./internal/spec; the corpus runs in every test run).
func FuzzStorageIDKey(f *testing.F) {
	for i, a := range adversarialIDs {
		f.Add(a, adversarialIDs[(i*7+3)%len(adversarialIDs)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkKeyPair(t, a, b)
		// Either one changed only in case, or with an invisible character inside, is the same.
		for _, c := range []string{strings.ToUpper(a), strings.ToLower(a), " " + a + "\u200b"} {
			if utf8.ValidString(a) && equalFoldByRune(widened(a), widened(c)) && !SameStorageID(a, c) {
				t.Errorf("SameStorageID(%+q, %+q) is false", a, c)
			}
		}
	})
}

// What a plugin may answer for a known ID, and whether volctl takes it for that ID: the
// decisions, each a test. Invisible characters and compatibility forms are the same ID (HFS+
// ignores the former in names, ZFS's normalization=formKC composes the latter, and neither
// pair can be told apart on screen, so no honest provider names two volumes so); full case
// folding is not (TestSameStorageIDKeepsFullCaseFoldingApart).
func TestSameStorageIDEquatesInvisibleAndCompatibilityForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b string }{
		{"vol1", "vol\u200d1"},               // ZERO WIDTH JOINER
		{"vol1", "vol\u200c1"},               // ZERO WIDTH NON-JOINER
		{"vol1", "vol1\u200b"},               // a trailing ZERO WIDTH SPACE
		{"vol1", "\ufeffvol1"},               // a BYTE ORDER MARK
		{"vol1", "vo\u00adl1"},               // SOFT HYPHEN
		{"vol1", "vol\ufe0f1"},               // VARIATION SELECTOR-16
		{"vol1", "vol\u202e1"},               // RIGHT-TO-LEFT OVERRIDE
		{"VOL1", "\uff36\uff2f\uff2c\uff11"}, // full-width
		{"vol1", "\uff36\uff2f\uff2c\uff11"},
		{"file-1", "\ufb01le-1"},    // the ligature fi
		{"vol-1", "vol-\u2460"},     // CIRCLED DIGIT ONE
		{"vol\u00b2", "VOL2"},       // SUPERSCRIPT TWO
		{"\u2163", "iv"},            // ROMAN NUMERAL FOUR
		{"caf\u00e9", "CAFE\u0301"}, // canonical, as before
		{" \u3000vol-1\u200b ", "VOL-1"},
	} {
		if !SameStorageID(tc.a, tc.b) {
			t.Errorf("SameStorageID(%+q, %+q) is false: a plugin that cleans or normalises IDs takes them for one", tc.a, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"vol1", "vol-1"}, {"vol1", "vol 1"}, {"vol1", "vol\x001"}, {"vol\x00", "vol"}, {"vol1", "vol\u00a01"},
		{"\u0600vol", "vol"},                         // ARABIC NUMBER SIGN shows: not ignorable
		{"vol1", "vol\u0301"}, {"data", "d\u0430ta"}, // a Cyrillic a is another letter
		{"\u0130", "i"}, {"\u0131", "I"}, // Turkish dotted and dotless i fold only to themselves
	} {
		if SameStorageID(tc.a, tc.b) {
			t.Errorf("SameStorageID(%+q, %+q) is true: two IDs any backend keeps apart", tc.a, tc.b)
		}
	}
}

// Full case folding is not applied: "straße" and "STRASSE", "ß" and "ss", are two IDs. NTFS's
// and SMB's upcase tables map ß to itself, ZFS's casesensitivity=insensitive upper-cases
// character by character; a backend that takes them for one is not known to volctl, and two
// such names are words a case-sensitive provider holds apart (an NFS export's directories).
// Equating them would refuse a create or delete an honest user's setup makes.
func TestSameStorageIDKeepsFullCaseFoldingApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b string }{{"stra\u00dfe", "STRASSE"}, {"stra\u00dfe", "strasse"}, {"\u00df", "ss"}, {"\ufb00", "\u0066\u0066\u0301"}} {
		if SameStorageID(tc.a, tc.b) {
			t.Errorf("SameStorageID(%+q, %+q) is true", tc.a, tc.b)
		}
	}
	if !SameStorageID("stra\u00dfe", "STRA\u1e9eE") { // ß and its capital ẞ are one simple case orbit
		t.Errorf("SameStorageID(%+q, %+q) is false", "stra\u00dfe", "STRA\u1e9eE")
	}
}

// The key of IDs no volctl takes from a plugin still keeps them apart: a megabyte of ID, NULs,
// characters NFKC expands eighteen-fold; the key of an ID past CSI's 128 bytes is computed
// whole, not cut.
func TestStorageIDKeyOfAdversarialIDs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("v", 1<<20)
	if !SameStorageID(long+"a", strings.ToUpper(long)+"A") || SameStorageID(long+"a", long+"b") {
		t.Errorf("a megabyte of ID: the last character does not decide")
	}
	if k := StorageIDKey(strings.Repeat("\ufdfa", 1000)); utf8.RuneCountInString(k) != 18*1000 {
		t.Errorf("the key of 1,000 U+FDFA (NFKC: 18 characters each) is %d characters, want %d", utf8.RuneCountInString(k), 18*1000)
	}
	if SameStorageID("vol\x00a", "vol\x00b") || !SameStorageID("vol\x00a", "VOL\x00A") {
		t.Errorf("NUL bytes: keys %+q, %+q, %+q", StorageIDKey("vol\x00a"), StorageIDKey("vol\x00b"), StorageIDKey("VOL\x00A"))
	}
}

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point for the characters listed in
// DerivedCoreProperties.txt, and not for those it leaves out (white space, format characters
// that show).
func TestDefaultIgnorableAgreesWithUnicodesList(t *testing.T) {
	t.Parallel()
	ranges := [][2]rune{{0xad, 0xad}, {0x34f, 0x34f}, {0x61c, 0x61c}, {0x115f, 0x1160}, {0x17b4, 0x17b5}, {0x180b, 0x180f},
		{0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x206f}, {0x3164, 0x3164}, {0xfe00, 0xfe0f}, {0xfeff, 0xfeff},
		{0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff}}
	in := func(r rune) bool {
		for _, rg := range ranges {
			if rg[0] <= r && r <= rg[1] {
				return true
			}
		}
		return false
	}
	// The planes that hold them: the first two and the fourteenth (tags, selectors).
	for r := rune(0); r <= 0xe0fff; r++ {
		if r == 0x20000 {
			r = 0xe0000
		}
		if in(r) != defaultIgnorable(r) && !(0xfff0 <= r && r <= 0xfff8) && !(0x2065 == r) && !(0xe0000 <= r && r <= 0xe0fff) {
			t.Errorf("defaultIgnorable(U+%04X) = %v, DerivedCoreProperties says %v", r, defaultIgnorable(r), in(r))
		}
	}
	for _, r := range []rune{0x200d, 0xfeff, 0xe0001, 0xe0020, 0xfe0f} {
		if !defaultIgnorable(r) {
			t.Errorf("defaultIgnorable(U+%04X) = false", r)
		}
	}
}
