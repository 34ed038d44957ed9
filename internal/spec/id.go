package spec

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/volctl/volctl/internal/shellquote"
)

// MaxIDLength bounds IDs (volume, plugin, group and alloc names). They become directory names
// under the state dir, and the volume ID doubles as a CSI string field, which the CSI spec
// limits to 128 bytes.
const MaxIDLength = 128

// ValidateID checks an ID that volctl will use as one path element under its state dir:
// a volume, plugin or group ID, a volume source, or an alloc name such as "web[0]". It refuses
// anything that could name another directory or be read as a flag: empty, ".", "..", a "/",
// a NUL or other control character, a leading "-", and IDs over MaxIDLength bytes. what names
// the ID in the error ("volume ID").
func ValidateID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s must not be empty", what)
	case id == "." || id == "..":
		return fmt.Errorf("%s %q is not allowed: it would name a directory other than its own", what, id)
	case strings.Contains(id, "/"):
		return fmt.Errorf("%s %q must not contain \"/\": IDs become directory names", what, id)
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("%s %q must not start with \"-\": it would read as a command-line flag", what, id)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%s is %d bytes long; the limit is %d", what, len(id), MaxIDLength)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%s %q is not valid UTF-8", what, id)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s %q must not contain control characters (found %U)", what, id, r)
		}
	}
	return nil
}

// ValidateNewID is ValidateID for an ID volctl is about to make (a volume's id and namespace, a
// plugin, a group, an alloc), which must also look like itself on screen: it refuses a format
// character (a zero width space or joiner, a byte order mark, a soft hyphen, a bidi override or
// isolate, which lays the rest of the line out reordered), a space other than U+0020 (a
// no-break space reads as one) and a combining mark with no character before it. With any of
// them two IDs ("db", "d\u200bb") or an alloc and another's name written backwards read alike in
// every table and message. Nomad takes them (it only asks for an ID that is not empty); an ID
// an older volctl stored with one is still found, released and deleted by ValidateID's rules,
// which every lookup keeps.
func ValidateNewID(what, id string) error {
	if err := ValidateID(what, id); err != nil {
		return err
	}
	return looksLikeItself(what, id)
}

// ValidateNamespace checks a volume spec's namespace by Nomad's rule for a namespace's name
// (`nomad namespace apply` refuses any other): ASCII letters, digits and hyphens, 1 to 128
// of them (MaxIDLength's bound, which ValidateNewID applies). A volume in a namespace of any other name is one Nomad can
// never hold. "*", which Nomad's listings read as every namespace, names none to put a
// volume in. It is ValidateNewID's rules first.
func ValidateNamespace(ns string) error {
	if err := ValidateNewID("namespace", ns); err != nil {
		return err
	}
	if ns == "*" {
		return fmt.Errorf("namespace %q names every namespace (to Nomad's listings, `-namespace '*'`), not one a volume can be in: name the namespace its jobs run in, or leave namespace out for the default one (%s)", ns, MoveNamespace("ID"))
	}
	for i, r := range ns {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-') {
			return fmt.Errorf("namespace %q has %q (its character %d): Nomad's namespace names are ASCII letters, digits and hyphens only, so Nomad could hold no volume in it; name a namespace Nomad has (`nomad namespace list`), or leave namespace out for the default one (%s)",
				ns, r, utf8.RuneCountInString(ns[:i])+1, MoveNamespace("ID"))
		}
	}
	return nil
}

// MoveNamespace says how volume id, which volctl has, moves to another namespace keeping its
// storage: volctl refuses to change a volume's namespace, and a created volume's refusal
// once said to delete it and create it again, which deletes its data. A volume deregistered
// keeps its storage, and one registered by its external ID takes it back.
func MoveNamespace(id string) string {
	return fmt.Sprintf("a volume volctl has moves so, its data kept: `%s` (its storage stays), then `volctl volume register` of its spec with its external_id (`%s` shows it) in the new namespace",
		shellquote.Command("volctl volume deregister --yes", id), shellquote.Command("volctl volume status", id))
}

// ValidateNewName checks a name typed for volctl to send a plugin as a CSI name and to record as
// what later names the object (a snapshot's NAME, which finds a pending snapshot and makes its
// creation idempotent): not empty, at most the CSI spec's 128 bytes, UTF-8, no control
// character (an escape sequence, a newline), and none of ValidateNewID's characters that show as
// something else ("pre" and "pre\u200b" read alike in the list). It may hold a "/" or start with
// a "-": a name is no path, and follows "--" on a command line.
func ValidateNewName(what, name string) error {
	if err := csiText(what, name, "name", MaxCSIString); err != nil {
		return err
	}
	return looksLikeItself(what, name)
}

// csiText refuses a string volctl is to send a plugin as a CSI kind ("name", "node ID") that
// is blank, past max bytes, not UTF-8 or holds a control character (an escape sequence, a
// newline), naming it as what.
func csiText(what, s, kind string, max int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%s must not be blank", what)
	case len(s) > max:
		return fmt.Errorf("%s is %d bytes long; the CSI spec limits a %s to %d", what, len(s), kind, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q is not valid UTF-8, as CSI's strings must be", what, s)
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s %q must not contain the control character %U (its character %d); write the %s without it",
				what, s, r, utf8.RuneCountInString(s[:i])+1, kind)
		}
	}
	return nil
}

// MaxNodeID bounds a node ID: NodeGetInfoResponse.node_id, which the CSI spec lets be 256 bytes
// (a fully qualified host name, up to 253, fits), not a string field's 128.
const MaxNodeID = 256

// ValidateNodeID checks a node ID volctl's hostpath plugin is to report as NodeGetInfo's node_id
// and record in its volumes' topology (`plugin serve hostpath --node-id`, and the one `export
// nomad` writes into a plugin job): not blank, at most MaxNodeID bytes, UTF-8, no control
// character (an escape sequence, a carriage return) and none of the characters that show as
// something else or nothing (showsAsItself: a bidi override, a zero width space, a no-break
// space). It has no one-script rule (mixedScripts): a node ID is the host's name as `hostname`
// gives it, which volctl does not choose, and a host a plugin served as "узел-node1" must serve
// again under the same ID, which its attachments and topology are keyed by.
func ValidateNodeID(what, id string) error {
	if err := csiText(what, id, "node ID", MaxNodeID); err != nil {
		return err
	}
	return showsAsItself(what, id)
}

// looksLikeItself refuses what would make an ID or name read as another on screen: a format
// character, a space other than U+0020, a leading combining mark (showsAsItself), or letters
// of scripts not written together (mixedScripts).
func looksLikeItself(what, id string) error {
	if err := showsAsItself(what, id); err != nil {
		return err
	}
	return mixedScripts(what, id)
}

// showsAsItself refuses a character that shows as nothing, as another or reorders the text: a
// format character, a space other than U+0020, a leading combining mark, and a space at either
// end, which a table's padding hides ("v1 " lists as "v1").
func showsAsItself(what, id string) error {
	for i, r := range id {
		var kind string
		switch {
		case unicode.Is(unicode.Cf, r):
			kind = "a format character, which shows as nothing or reorders the text around it"
		case unicode.IsSpace(r) && r != ' ':
			kind = "a space other than U+0020, which reads as one"
		case i == 0 && unicode.Is(unicode.M, r):
			kind = "a combining mark with no character before it, which joins what is printed before the ID"
		default:
			continue
		}
		return fmt.Errorf("%s %q must not contain %U (its character %d): %s, so two IDs could look alike on screen; write the ID without it",
			what, id, r, utf8.RuneCountInString(id[:i])+1, kind)
	}
	if t := strings.Trim(id, " "); t != id {
		return fmt.Errorf("%s %q must not start or end with a space: it reads as %q in every table, so two IDs could look alike on screen; write the ID without it",
			what, id, t)
	}
	return nil
}

// mixedScripts refuses an ID whose letters are of two scripts that are not written together:
// Latin "db" and "dЬ", its b the Cyrillic soft sign, or "pаypal" with a Cyrillic а, look alike in
// every table and message, and a delete or release typed from what the screen shows would name
// the other volume, or none. Letters of one script, and Latin with Han, Hiragana, Katakana,
// Hangul or Bopomofo, as Japanese, Chinese and Korean names are written, are taken (Unicode's
// "highly restrictive" profile, UTS #39); digits, punctuation and marks are of no script. A
// whole ID in a script whose letters look like Latin ones ("сс", Cyrillic) is not refused:
// that would refuse the script.
func mixedScripts(what, id string) error {
	type letter struct {
		script string
		r      rune
	}
	var seen []letter // each script's first letter, in order
	for _, r := range id {
		script := scriptOf(r)
		if script == "" || slices.ContainsFunc(seen, func(l letter) bool { return l.script == script }) {
			continue
		}
		for _, l := range seen {
			if !writtenTogether(l.script, script) {
				return fmt.Errorf("%s %q mixes the %s letter %q (%U) with the %s letter %q (%U), so it could look like an ID of one script on screen; "+
					"write it in one script", what, id, l.script, l.r, l.r, script, r, r)
			}
		}
		seen = append(seen, letter{script, r})
	}
	return nil
}

// scriptOf is the name of r's script, "" for a character of no script of its own (Common,
// Inherited: digits, punctuation, marks).
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return ""
	}
	if unicode.In(r, unicode.Common, unicode.Inherited) {
		return ""
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// eastAsian are the scripts written beside Latin and Han in Japanese, Chinese and Korean.
var eastAsian = map[string]bool{"Latin": true, "Han": true, "Hiragana": true, "Katakana": true, "Hangul": true, "Bopomofo": true}

// writtenTogether says whether letters of scripts a and b may stand in one ID: Latin, Han and
// one of Japanese's kana, Hangul or Bopomofo.
func writtenTogether(a, b string) bool {
	if !eastAsian[a] || !eastAsian[b] {
		return false
	}
	kana := func(s string) bool { return s == "Hiragana" || s == "Katakana" }
	other := func(s string) bool { return s == "Hangul" || s == "Bopomofo" }
	// Hangul or Bopomofo go with Latin and Han only; kana with each other, Latin and Han.
	return !(other(a) && (kana(b) || other(b)) || other(b) && kana(a))
}

// SameStorageID reports whether two IDs a plugin uses (volume or snapshot IDs) differ, if at
// all, only so that a plugin on a case-insensitive or normalising backend, or one that trims
// and cleans the IDs it is sent, takes them for one ID: in case, Unicode normalisation
// (compatibility forms included), invisible characters or surrounding white space; exactly
// when their StorageIDKey is the same. A plugin's answer naming an ID so near a known one may
// be about that one, and volctl neither deletes it nor records it as another (engine's
// nearStorage and nearSnapshot, csi's check of a clone answered with its source).
func SameStorageID(a, b string) bool {
	return a == b || StorageIDKey(a) == StorageIDKey(b)
}

// StorageIDKey is id's canonical key under SameStorageID, its one definition: two IDs are the
// same storage ID exactly when their keys are equal, so the store keeps the key beside each
// ID it records and finds the IDs near one by an indexed equality. The key is id with its
// default-ignorable code points removed (ZERO WIDTH SPACE, ZERO WIDTH JOINER and NON-JOINER,
// SOFT HYPHEN, BYTE ORDER MARK, variation selectors, bidirectional marks: characters that show
// as nothing or as a blank, some of which, not all, HFS+ ignores in names), in Unicode compatibility composition (NFKC:
// full-width "ＶＯＬ１" is "VOL1", the ligature "ﬁ" is "fi", as ZFS's normalization=formKC
// makes them; it includes canonical composition, "é" composed and decomposed), Unicode white
// space trimmed at both ends, and each character replaced by the least of its simple case
// folding orbit ("Data" and "DATA", K and KELVIN SIGN; what strings.EqualFold equates, NTFS's
// and SMB's upcase tables). Bytes that are not UTF-8 are kept as they are, so only the same
// bytes match them: strings.EqualFold reads each as U+FFFD, and "vol-\xff" and "vol-\xfe",
// distinct to any plugin, were taken for one (TestSameStorageIDKeepsDistinctInvalidBytesApart).
// Full case folding is not applied ("straße" and "STRASSE" stay two IDs): no common
// case-insensitive backend folds so, and two such names are words a case-sensitive provider
// may hold apart (TestSameStorageIDKeepsFullCaseFoldingApart).
//
// The key depends on the Unicode tables it is computed with (StorageIDKeyVersion): a key
// stored by a volctl built with other tables is not compared as one of this version's.
func StorageIDKey(id string) string {
	ascii := true
	for i := 0; i < len(id); i++ {
		if id[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// NFKC leaves ASCII as it is, and no ASCII character is default-ignorable.
		return strings.ToUpper(strings.TrimSpace(id))
	}
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); {
		r, n := utf8.DecodeRuneInString(id[i:])
		if !(r == utf8.RuneError && n == 1) && defaultIgnorable(r) {
			i += n
			continue
		}
		b.WriteString(id[i : i+n])
		i += n
	}
	s := strings.TrimSpace(norm.NFKC.String(b.String()))
	b.Reset()
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(s[i]) // not UTF-8: kept, matched only by the same byte
		} else {
			b.WriteRune(leastOfOrbit(r))
		}
		i += n
	}
	return b.String()
}

// StorageIDKeyVersion names the definition of StorageIDKey and the Unicode tables it is
// computed with: a key stored by a volctl with another one may differ from this one's for the
// same ID (a character new to one of them), so the store reads such keys as candidates for
// every check.
const StorageIDKeyVersion = "1/" + unicode.Version + "/" + norm.Version

// leastOfOrbit is the least rune of r's simple case folding orbit (unicode.SimpleFold): the
// runes strings.EqualFold takes for r, and only those.
func leastOfOrbit(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// defaultIgnorable reports whether r is a Default_Ignorable_Code_Point (Unicode's
// DerivedCoreProperties: Other_Default_Ignorable_Code_Point, Cf and Variation_Selector, but for
// white space, the interlinear annotation characters, the Egyptian hieroglyph format controls
// and the prepended concatenation marks, which show).
func defaultIgnorable(r rune) bool {
	switch {
	case r < 0xad:
		return false
	case 0xfff9 <= r && r <= 0xfffb, 0x13430 <= r && r <= 0x1343f:
		return false
	case unicode.Is(unicode.White_Space, r), unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Cf)
}
