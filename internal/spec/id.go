package spec

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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
