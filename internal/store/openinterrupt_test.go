package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// An Open interrupted (Ctrl-C, its command's deadline) while it reads or migrates the schema
// says so, and that nothing was written, as an interrupted transaction does, not SQLite's
// words for the query it cut ("read schema version: context canceled").
func TestInterruptedOpenSaysSo(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{true, false} {
		dir := t.TempDir()
		if existing {
			s, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s, err := Open(ctx, dir)
		if err == nil {
			s.Close()
			t.Fatalf("Open with its context ended succeeded (existing state: %v)", existing)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Open interrupted: %v, want it to match context.Canceled", err)
		}
		for _, want := range []string{dir, "interrupted", "nothing written"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open interrupted (existing state: %v): %v\nwant it to say %q", existing, err, want)
			}
		}
	}
}
