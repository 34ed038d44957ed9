package spec

import (
	"os"
	"testing"
)

func TestZZProf(t *testing.T) {
	src, _ := os.ReadFile("/tmp/in14/mf10000.hcl")
	_, diags := ParseVolume("mf.hcl", src, VerbRegister)
	t.Log(len(diags))
}
