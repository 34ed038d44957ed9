package spec

import (
	"embed"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

//go:embed examples/*.hcl
var examples embed.FS

// Example returns the commented example spec of a kind, as `volctl init` writes it. Each
// example validates (the volume one for create, or with no verb).
func Example(kind Kind) ([]byte, error) {
	b, err := examples.ReadFile("examples/" + string(kind) + ".hcl")
	if err != nil {
		return nil, fmt.Errorf("no example for kind %q (want volume, plugin or group)", kind)
	}
	return b, nil
}

// ExampleFor returns the example of a kind as `volctl init` writes it to file: a volume spec is
// named after the file (web.hcl holds volume "web"), unless the file is the default volume.hcl
// or "-" or its name is no valid new volume ID (ValidateNewID); the usage comments of every
// kind name the file.
func ExampleFor(kind Kind, file string) ([]byte, error) {
	src, err := Example(kind)
	if err != nil || file == "-" {
		return src, err
	}
	base := filepath.Base(file)
	out := string(src)
	// The usage comments name the file written, whatever its name: the example's own
	// (volume.hcl, plugin.hcl, group.hcl) is a file a user who wrote web.hcl may not have, or
	// one an earlier init wrote holding another volume, which the copied command then created
	// (TestInitVolumeUsageCommentsNameTheFileWhateverItsName).
	if !strings.ContainsAny(base, "\n\r") { // the command is a line of a comment
		out = strings.ReplaceAll(out, " "+string(kind)+".hcl\n", " "+shellWord(base)+"\n")
	}
	if kind != KindVolume {
		return []byte(out), nil
	}
	// In NFC, the form volctl reads IDs in: a name typed decomposed (macOS's) was written as it
	// was, and validate warned of what init wrote
	// (TestInitVolumeOfADecomposedFileNameValidatesWithoutWarnings).
	id := norm.NFC.String(strings.TrimSuffix(base, filepath.Ext(base)))
	if base == "volume.hcl" || ValidateNewID("volume ID", id) != nil {
		return []byte(out), nil
	}
	lit := hclString(id)
	out = strings.Replace(out, "\nid        = \"data\"\n", "\nid        = "+lit+"\n", 1)
	out = strings.Replace(out, "\nname = \"data\"\n", "\nname = "+lit+"\n", 1)
	return []byte(out), nil
}

// hclString quotes s as a volume spec's string literal: Go's escapes, and no template
// sequences. A "${" or "%{" is written with its brace as \u007b, which HCL2 and Nomad's HCL1
// both read as "{" ("$${", HCL2's escape, Nomad sends as written: escapedTemplate).
func hclString(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, "${", `$\u007b`)
	return strings.ReplaceAll(q, "%{", `%\u007b`)
}
