package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A process holding this state's database open (its -shm's dead-man byte locked) beside another
// state dir's open lock whose file was removed (an older volctl of that other state, which also
// opened this one's database raw: a test binary, a tool with two states open) was taken for an
// older volctl of this state whose lock file was removed: Store.openers compared the removed
// file's base name alone, and the migration of this state was refused with ErrInUse for as long
// as that process ran (CI: TestStorageKeyBackfillKilledHalfwayIsRedone, beside other tests of
// the same binary). Now the removed file must be this state dir's lock file (its path as given,
// or with symlinks resolved): the migration runs.
func TestMigrationIsNotRefusedForAnotherStateDirsRemovedLockFile(t *testing.T) {
	t.Parallel()
	other, this := t.TempDir(), t.TempDir()
	s, err := open(context.Background(), this, SchemaVersion()-1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	startOlderProcess(t, other, olderAlsoEnv+"="+this) // the child opens this state's database raw beside its own
	if err := os.Remove(filepath.Join(other, FileName+lockSuffix)); err != nil {
		t.Fatalf("precondition: removing the other state's open lock file: %v", err)
	}
	s, err = Open(context.Background(), this)
	if err != nil {
		t.Fatalf("Open of a state whose database another state's older volctl holds open raw (its own lock file removed): %v; want the migration run", err)
	}
	defer s.Close()
	if got := userVersion(t, rawDB(t, filepath.Join(this, FileName))); got != SchemaVersion() {
		t.Errorf("version after the Open = %d, want %d", got, SchemaVersion())
	}
}
