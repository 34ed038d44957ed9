package tui

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// Bidi overrides and isolates in a plugin's strings would lay the rest of a row out reordered
// on a terminal that does bidi: they must not reach the screen, in the list or the detail.
func TestBidiControlsAreCleaned(t *testing.T) {
	fake := fixture()
	fake.data.Events[0].Message = "probe ok\u202edeliaf\u202c \u2067x\u2069 \u202a\u202b\u202d\u2066\u2068"
	h := newHarness(t, fake, Options{})
	h.keys("4")
	if out := h.m.View(); strings.ContainsFunc(out, spec.IsBidiControl) {
		t.Errorf("bidi controls reached the screen: %+q", out)
	}
	h.keys("enter")
	if out := h.m.View(); strings.ContainsFunc(out, spec.IsBidiControl) {
		t.Errorf("bidi controls reached the detail: %+q", out)
	}
}
