// Package nomadcorpus locates the corpus of real Nomad volume specs the tests check volctl
// against: shared/compat/nomad-specs, beside the checkout. A fresh clone has no such folder, so
// the tests that need it skip, saying where it was looked for; CI provides it, and there
// (CI=true) its absence fails the tests instead of skipping them unnoticed.
package nomadcorpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// RelPath is where the corpus lives, relative to the folder that holds the checkout.
const RelPath = "shared/compat/nomad-specs"

// Find returns the corpus folder, or an error naming the path it expected, which says how
// to provide it. The folder is found from the working directory by walking up to go.mod.
func Find() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), filepath.FromSlash(RelPath))
	if _, err := os.Stat(filepath.Join(dir, "SOURCES.txt")); err != nil {
		return dir, fmt.Errorf("the Nomad spec corpus is not at %s (%v): put it there, beside the checkout, as CI does", dir, err)
	}
	return dir, nil
}

// Required reports whether a missing corpus is a failure rather than a reason to skip: in CI
// (CI set to a true value), where it must be present.
func Required() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// TB is the part of testing.TB that Dir needs.
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// Dir returns the corpus folder for a test, or skips the test with the path it expected;
// under CI=true a missing corpus fails the test instead.
func Dir(t TB) string {
	t.Helper()
	dir, err := Find()
	if err != nil {
		if Required() {
			t.Fatal(err, "(CI=true: the corpus is required)")
		}
		t.Skip("skipping:", err)
	}
	return dir
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("nomadcorpus: no go.mod above the working directory")
		}
		dir = parent
	}
}
