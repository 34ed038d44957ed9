package spec

import (
	"embed"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
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
	if kind != KindVolume {
		// The usage comments name the file written, as a volume's do: the example's own name
		// (plugin.hcl, group.hcl) is a file a user who wrote web.hcl does not have.
		if strings.ContainsAny(base, "\n\r") { // the command is a line of a comment
			return src, nil
		}
		own := " " + string(kind) + ".hcl\n"
		return []byte(strings.ReplaceAll(string(src), own, " "+shellWord(base)+"\n")), nil
	}
	id := strings.TrimSuffix(base, filepath.Ext(base))
	if base == "volume.hcl" || ValidateNewID("volume ID", id) != nil {
		return src, nil
	}
	out := string(src)
	lit := hclString(id)
	out = strings.Replace(out, "\nid        = \"data\"\n", "\nid        = "+lit+"\n", 1)
	out = strings.Replace(out, "\nname = \"data\"\n", "\nname = "+lit+"\n", 1)
	if !strings.ContainsAny(base, "\n\r") { // the command is a line of a comment
		out = strings.ReplaceAll(out, "#   volctl validate --for create volume.hcl\n", "#   volctl validate --for create "+shellWord(base)+"\n")
		out = strings.ReplaceAll(out, "#   volctl volume create volume.hcl\n", "#   volctl volume create "+shellWord(base)+"\n")
	}
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
