package tui

import (
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
)

// A volume of an alloc's spec that the last run could not claim (refused: its error says why
// and what works) was listed in the dashboard's group detail as "missing: `volctl group run
// FILE` of its spec again", which the run then refuses the same way; group status says the
// run's refusal there instead (TestGroupStatusSaysWhyTheLastRunLeftAVolumeMissing). Found by
// helper review80 (groups), left as a lead; the test is mine.
func TestGroupDetailOfAVolumeARunRefusedDoesNotAdviseRunningAgain(t *testing.T) {
	s := NewStyles(FixedRenderer(termenv.Ascii))
	held := []engine.ClaimInfo{{ID: 1, VolumeID: "db", Alloc: "web[0]", Mode: "write", State: "published"}}
	refused := "claim \"logs\": volume \"logs\" is single-node-writer, held by alloc \"other\""
	g := engine.GroupInfo{Name: "web", State: "running", Count: 1, Allocs: []engine.AllocInfo{{Name: "web[0]", Index: 0, Claims: held, Missing: []string{"logs"}, Error: refused, RunError: refused}}}
	out := groupDetail(s, g, 300)
	if strings.Contains(out, "of its spec again") || !strings.Contains(out, "held by alloc") {
		t.Errorf("the group detail of an alloc whose run was refused a volume:\n%s\nwant the refusal, not \"run it again\"", out)
	}
	g.Allocs[0].Error, g.Allocs[0].RunError = "", ""
	if out := groupDetail(s, g, 300); !strings.Contains(out, "of its spec again") {
		t.Errorf("the group detail of an alloc a run cut short (no error):\n%s\nwant the run advised", out)
	}
}
