package spec

import (
	"embed"
	"fmt"
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
