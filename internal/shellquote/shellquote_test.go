package shellquote

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

func TestCommandRunByTheShellGivesTheExactArguments(t *testing.T) {
	for _, id := range shellquotetest.HostileIDs {
		cmd := Command("volctl volume snapshot delete "+Flag("--plugin", id), "p1", id)
		got := shellquotetest.RunArgs(t, cmd)
		want := []string{"volume", "snapshot", "delete", "--plugin", id, "p1", id}
		if strings.HasPrefix(id, "-") {
			want = []string{"volume", "snapshot", "delete", "--plugin=" + id, "--", "p1", id}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%q run by sh gives %q; want %q", cmd, got, want)
		}
	}
}

func TestFlagsAfterArgumentsRunByTheShellGiveTheExactArguments(t *testing.T) {
	for _, id := range shellquotetest.HostileIDs {
		cmd := CommandFlags("volctl volume release", []string{id}, Flag("--alloc", id), "--force")
		got := shellquotetest.RunArgs(t, cmd)
		want := []string{"volume", "release", id, "--alloc", id, "--force"}
		if strings.HasPrefix(id, "-") {
			want = []string{"volume", "release", "--alloc=" + id, "--force", "--", id}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%q run by sh gives %q; want %q", cmd, got, want)
		}
	}
}

func TestPlainWordsStayAsTheyAre(t *testing.T) {
	for _, id := range []string{"db", "web-1", "a.b_c", "vol@2", "x=y", "h:1,2", "/var/lib/volctl/x.hcl"} {
		if got := Arg(id); got != id {
			t.Errorf("Arg(%q) = %q; want it as it is", id, got)
		}
	}
	if got := Command("volctl nomad release", "db"); got != "volctl nomad release db" {
		t.Errorf("Command = %q", got)
	}
	if got := CommandFlags("volctl volume release", []string{"db"}, Flag("--alloc", "web")); got != "volctl volume release db --alloc web" {
		t.Errorf("CommandFlags = %q", got)
	}
}
