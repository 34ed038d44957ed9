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
// format character, a space other than U+0020, a leading combining mark.
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
// all, only in case, Unicode normalisation or surrounding white space: what a plugin on a
// case-insensitive backend, or one that trims and normalises the IDs it is sent, takes for one
// ID. A plugin's answer naming an ID so near a known one may be about that one, and volctl
// neither deletes it nor records it as another (engine's nearStorage and nearSnapshot, csi's
// check of a clone answered with its source).
//
// Bytes that are not UTF-8 must be the same bytes: strings.EqualFold reads each as U+FFFD, so
// "vol-\xff" and "vol-\xfe", distinct to any plugin, were taken for one
// (TestSameStorageIDKeepsDistinctInvalidBytesApart).
func SameStorageID(a, b string) bool {
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
