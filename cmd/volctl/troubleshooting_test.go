package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTroubleshootingErrorsAreScripted: every error docs/troubleshooting.md names in a numbered
// heading is asserted, as the doc writes it, in testdata/script/troubleshooting.txtar, which
// produces it for real. A heading that drifts from what volctl prints fails here; an error
// message that drifts from the doc fails the script.
func TestTroubleshootingErrorsAreScripted(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "script", "troubleshooting.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	assertions := map[string]bool{}
	for _, l := range strings.Split(string(script), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l, "[!mount] "), "[mount] "))
		if strings.HasPrefix(l, "stderr '") && strings.HasSuffix(l, "'") {
			assertions[strings.TrimSuffix(strings.TrimPrefix(l, "stderr '"), "'")] = true
		}
	}
	heading := regexp.MustCompile(`^## [0-9]+\. `)
	// A code span: ``...`` (which may hold a backtick) or `...`.
	span := regexp.MustCompile("`` ?(.+?) ?``|`([^`]+)`")
	headings := 0
	for _, l := range strings.Split(string(doc), "\n") {
		if !heading.MatchString(l) {
			continue
		}
		headings++
		quoted := span.FindAllStringSubmatch(l, -1)
		if len(quoted) == 0 {
			t.Errorf("troubleshooting.md heading %q quotes no error", l)
		}
		for _, q := range quoted {
			text := q[1] + q[2]
			// "..." in the doc stands for what varies: any text.
			parts := strings.Split(text, "...")
			for i, p := range parts {
				parts[i] = regexp.QuoteMeta(p)
			}
			re := strings.Join(parts, ".*")
			if !assertions[re] {
				t.Errorf("troubleshooting.md quotes %q, but troubleshooting.txtar does not assert it: want the line\n\tstderr '%s'", text, re)
			}
		}
	}
	if headings != 10 {
		t.Errorf("troubleshooting.md has %d numbered errors; want the ten", headings)
	}
}
