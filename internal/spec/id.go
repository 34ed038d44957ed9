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
