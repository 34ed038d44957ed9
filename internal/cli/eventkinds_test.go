package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// recordedKind finds the kind of an event where engine or agent code records one:
// store.Event{Kind: "x", ...} (claims, releases, volumes, snapshots, plugins) and
// PluginEvent(ctx, id, "x", ...) (the agent's plugin supervision).
var recordedKind = regexp.MustCompile(`store\.Event\{Kind: *"([a-z-]+)"|PluginEvent\([^,]+, *[^,]+, *"([a-z-]+)"`)

// recordedEventKinds is every event kind volctl records, from the code that records them.
func recordedEventKinds(t *testing.T) []string {
	t.Helper()
	var kinds []string
	for _, dir := range []string{"../engine", "../agent"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range recordedKind.FindAllStringSubmatch(string(src), -1) {
				kinds = append(kinds, m[1]+m[2])
			}
		}
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// TestEventKindsNamedAreRecorded holds every event kind the help names (`events --kind`'s
// examples and its flag's list) to a kind volctl records: `--kind` matches exactly, and a kind
// nothing records matches nothing, ever, with exit 0 ("No events match."): a script watching
// for it would never see an event (the help's `--kind claim-error`, while a failed claim is
// recorded as kind claim with its rpc and code).
func TestEventKindsNamedAreRecorded(t *testing.T) {
	kinds := recordedEventKinds(t)
	for _, k := range []string{"claim", "release", "plugin-health", "volume-create", "plugin-start"} {
		if !slices.Contains(kinds, k) {
			t.Fatalf("recordedEventKinds found %q, not %q: the pattern no longer finds where events are recorded", kinds, k)
		}
	}
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(ios))
	events, _, err := root.Find([]string{"events"})
	if err != nil {
		t.Fatal(err)
	}
	usage := events.Flags().Lookup("kind").Usage
	_, list, _ := strings.Cut(usage, "(")
	for k := range strings.SplitSeq(strings.TrimSuffix(list, ")"), ", ") {
		if k != "..." && !slices.Contains(kinds, k) {
			t.Errorf("events --kind's help names kind %q, which volctl never records (it records %q)", k, kinds)
		}
	}
	forEachExample(root, func(listed *cobra.Command, words []string) {
		if i := slices.Index(words, "--kind"); i > 0 && i+1 < len(words) && !slices.Contains(kinds, words[i+1]) {
			t.Errorf("%s --help: example %q filters on kind %q, which volctl never records (it records %q)",
				listed.CommandPath(), strings.Join(words, " "), words[i+1], kinds)
		}
	})
}

// TestEventKindsListsEveryRecordedKind holds engine.EventKinds, the kinds `events --kind`
// takes, to the kinds the code records: a kind missing from it would be refused as a typo.
func TestEventKindsListsEveryRecordedKind(t *testing.T) {
	if got, want := engine.EventKinds, recordedEventKinds(t); !slices.Equal(got, want) {
		t.Errorf("engine.EventKinds = %q\nthe code records %q", got, want)
	}
}
