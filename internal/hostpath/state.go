package hostpath

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/atomicfile"
)

// stateVersion is bumped when the metadata layout changes incompatibly. Version 1 was one
// state.json for everything; version 2 keeps one file per volume and per snapshot, so an RPC
// rewrites only what it changed (with 1,000 volumes, rewriting all of them on every RPC was
// what a restore of 1,000 claims spent its time on).
const stateVersion = 2

// state is everything the plugin knows, persisted under Root/meta as one small JSON file per
// volume (meta/volumes/ID.json) and per snapshot (meta/snapshots/ID.json).
type state struct {
	Version   int                  `json:"version"`
	Volumes   map[string]*volume   `json:"volumes"`
	Snapshots map[string]*snapshot `json:"snapshots"`

	// onDisk holds, by volume ID, the bytes of each volume record known to be on disk durably:
	// written by saveVolume (the temp file fsynced, renamed, the directory fsynced) or read by
	// loadState (which fsyncs the directory after reading). saveVolume does not write a record
	// whose bytes are these again (see saveVolume). A volume whose last write failed has no
	// entry, so its next save writes.
	onDisk map[string][]byte
}

// volume is one directory under Root/volumes and what the orchestrator did with it.
type volume struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Capacity   int64             `json:"capacity_bytes"`
	Parameters map[string]string `json:"parameters,omitempty"`
	// SourceSnapshot or SourceVolume is set when the volume was created as a copy.
	SourceSnapshot string    `json:"source_snapshot,omitempty"`
	SourceVolume   string    `json:"source_volume,omitempty"`
	CreatedAt      time.Time `json:"created_at"`

	// NodeCapacity is the size NodeExpandVolume last recorded.
	NodeCapacity int64 `json:"node_capacity_bytes,omitempty"`
	// Attachments are ControllerPublishVolume's records, by node ID.
	Attachments map[string]attachment `json:"attachments,omitempty"`
	// Staging is where NodeStageVolume mounted the volume; one per volume, as CSI says.
	Staging *staging `json:"staging,omitempty"`
	// Targets are NodePublishVolume's mounts, by target path.
	Targets map[string]publication `json:"targets,omitempty"`
}

// attachment is one ControllerPublishVolume: the token handed out in the publish_context.
type attachment struct {
	Token string `json:"token"`
}

// staging records one NodeStageVolume.
type staging struct {
	Path       string `json:"path"`
	Capability string `json:"capability"`
}

// publication records one NodePublishVolume.
type publication struct {
	Readonly   bool   `json:"readonly"`
	Capability string `json:"capability"`
}

// snapshot is one directory under Root/snapshots: a copy of a volume at one moment.
type snapshot struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	SourceVolume string    `json:"source_volume"`
	Size         int64     `json:"size_bytes"`
	CreatedAt    time.Time `json:"created_at"`
}

func newState() *state {
	return &state{Version: stateVersion, Volumes: map[string]*volume{}, Snapshots: map[string]*snapshot{}, onDisk: map[string][]byte{}}
}

// The metadata layout under Root.
const (
	legacyStateFile = "state.json" // version 1
	metaDir         = "meta"
	versionFile     = "VERSION"
)

// loadState reads the metadata under root, or starts empty when there is none yet, migrating a
// version 1 state.json into per-object files. Every ID is validated, since IDs become path
// components and the files are only as trustworthy as the disk.
func loadState(root string) (*state, error) {
	st := newState()
	meta := filepath.Join(root, metaDir)
	if err := st.loadLegacy(root); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(meta, versionFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err == nil && versionUnwritten(b):
		// An older plugin wrote VERSION in place, unsynced: a power loss after its first save
		// left the file empty, and every start after refused the root as "version ,"
		// (TestVersionLeftEmptyByAPowerLossIsNoRefusal). No version writes an empty file.
	case err != nil:
		return nil, fmt.Errorf("reading state: %w", err)
	case strings.TrimSpace(string(b)) != strconv.Itoa(stateVersion):
		return nil, fmt.Errorf("reading state %q: version %s, this volctl reads version %d", meta, strings.TrimSpace(string(b)), stateVersion)
	}
	volumes := filepath.Join(meta, "volumes")
	if err := loadEntries(volumes, "volume", st.Volumes, st.onDisk, isVolumeID, func(v *volume) string { return v.ID }); err != nil {
		return nil, err
	}
	if len(st.onDisk) > 0 {
		// Every record was written by saveObject, its content fsynced before its rename; a
		// writer that died between the rename and the directory's fsync may have left the
		// rename alone not durable. This fsync makes the records read here durable as read, so
		// onDisk may say so.
		if err := syncDir(volumes); err != nil {
			return nil, fmt.Errorf("reading state: %w", err)
		}
	}
	if err := loadEntries(filepath.Join(meta, "snapshots"), "snapshot", st.Snapshots, nil, isSnapshotID, func(sn *snapshot) string { return sn.ID }); err != nil {
		return nil, err
	}
	return st, nil
}

// adoptEntries takes the entries of one kind from a legacy state file at path into into, each
// saved in a file of its own; a nil entry, or one under another ID or an invalid one, is malformed.
func adoptEntries[T any](path, kind string, old, into map[string]*T, isID func(string) bool, idOf func(*T) string, save func(id string) error) error {
	for id, e := range old {
		if e == nil || idOf(e) != id || !isID(id) {
			return fmt.Errorf("reading state %q: malformed %s entry %q", path, kind, id)
		}
		into[id] = e
		if err := save(id); err != nil {
			return err
		}
	}
	return nil
}

// loadEntries reads each entry of dir, the JSON of one T whose ID (idOf) is its file name, into
// into, and its bytes as read into raw unless raw is nil; an entry that does not decode, or
// names another ID, is a malformed kind entry.
func loadEntries[T any](dir, kind string, into map[string]*T, raw map[string][]byte, isID func(string) bool, idOf func(*T) string) error {
	return loadDir(dir, isID, func(id string, b []byte) error {
		e := new(T)
		if err := json.Unmarshal(b, e); err != nil || idOf(e) != id {
			return fmt.Errorf("malformed %s entry %q", kind, id)
		}
		into[id] = e
		if raw != nil {
			raw[id] = b
		}
		return nil
	})
}

// loadLegacy migrates a version 1 state.json: every object is written to its own file, then the
// old file is removed, so a crash halfway leaves the old file to migrate again.
func (s *state) loadLegacy(root string) error {
	path := filepath.Join(root, legacyStateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading state: %w", err)
	}
	old := struct {
		Version   int                  `json:"version"`
		Volumes   map[string]*volume   `json:"volumes"`
		Snapshots map[string]*snapshot `json:"snapshots"`
	}{}
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("reading state %q: %w", path, err)
	}
	if old.Version != 1 {
		return fmt.Errorf("reading state %q: version %d, this volctl reads version %d", path, old.Version, stateVersion)
	}
	if err := adoptEntries(path, "volume", old.Volumes, s.Volumes, isVolumeID, func(v *volume) string { return v.ID },
		func(id string) error { return s.saveVolume(root, id) }); err != nil {
		return err
	}
	if err := adoptEntries(path, "snapshot", old.Snapshots, s.Snapshots, isSnapshotID, func(sn *snapshot) string { return sn.ID },
		func(id string) error { return s.saveSnapshot(root, id) }); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("migrating state: %w", err)
	}
	return syncDir(root)
}

// readRecord reads a record, without the blanks a save into the reserve padded it with
// (saveIntoReserve).
func readRecord(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	return bytes.TrimRight(b, " "), err
}

// loadDir reads every ID.json in dir through add.
func loadDir(dir string, valid func(string) bool, add func(id string, b []byte) error) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading state: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue // a temp file a crash left behind
		}
		if !valid(id) {
			return fmt.Errorf("reading state %q: malformed entry %q", dir, e.Name())
		}
		b, err := readRecord(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("reading state: %w", err)
		}
		if err := add(id, b); err != nil {
			return fmt.Errorf("reading state %q: %w", dir, err)
		}
	}
	return nil
}

// current returns volume id as its record on disk has it, or false when there is none. The
// copy in s is kept when the record's bytes are the ones s last wrote or read at start
// (onDisk); otherwise the record is read (another plugin process serving the same root wrote
// it since), and s takes it. Its bytes are then not onDisk's (the directory was not fsynced
// after this read, as loadState does), so its next save writes it. A record that is gone was
// deleted by the other process (s removes a volume's record only with the volume, and a
// failed write leaves the one before), and the volume goes from s too; one that cannot be
// read leaves s's copy as it is.
func (s *state) current(root, id string) (*volume, bool) {
	if !isVolumeID(id) { // IDs become path components
		return nil, false
	}
	mine, inMemory := s.Volumes[id]
	b, err := readRecord(filepath.Join(root, metaDir, "volumes", id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		// Forgotten only while the records' directory is there: a root moved away (between a
		// caller's checkRoot and this read) is no volume deleted by another process.
		if recordsGone(root, "volumes") {
			return nil, false
		}
		delete(s.Volumes, id)
		delete(s.onDisk, id)
		return nil, false
	}
	if err != nil {
		return mine, inMemory
	}
	if old, ok := s.onDisk[id]; ok && inMemory && bytes.Equal(old, b) {
		return mine, true
	}
	v := new(volume)
	if json.Unmarshal(b, v) != nil || v.ID != id {
		return mine, inMemory
	}
	s.Volumes[id] = v
	delete(s.onDisk, id)
	return v, true
}

// currentSnapshot returns snapshot id as its record on disk has it, or false when there is
// none, as current does for a volume: another process serving the root may have made or
// deleted it since this one last read its records (before, a DeleteSnapshot of one the other
// made answered OK and deleted nothing, TestSnapshotOfAnotherProcessOnTheRootIsServed). A
// snapshot's record never changes once written, so the copy in s is kept while the record is
// there; one that cannot be read leaves s as it is.
func (s *state) currentSnapshot(root, id string) (*snapshot, bool) {
	if !isSnapshotID(id) { // IDs become path components
		return nil, false
	}
	b, err := readRecord(filepath.Join(root, metaDir, "snapshots", id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		if recordsGone(root, "snapshots") {
			return nil, false // the root moved: not deleted (current)
		}
		delete(s.Snapshots, id)
		return nil, false
	}
	mine, inMemory := s.Snapshots[id]
	if err != nil || inMemory {
		return mine, inMemory
	}
	sn := new(snapshot)
	if json.Unmarshal(b, sn) != nil || sn.ID != id {
		return nil, false
	}
	s.Snapshots[id] = sn
	return sn, true
}

// saveVolume writes one volume's record, or removes it when the volume is gone from s.
//
// A record whose bytes are those onDisk holds for it is not written again: the disk holds
// exactly them, durably, so the write would change nothing there, and a crash or power loss
// right after leaves the same record either way. This is what restoring mounts after a reboot
// asks for: NodeStageVolume and NodePublishVolume of the staging path and targets the records
// already name, each of which used to rewrite and fsync an unchanged record under the
// plugin's one lock.
func (s *state) saveVolume(root, id string) error {
	v := s.Volumes[id]
	if v == nil {
		delete(s.onDisk, id)
		return saveObject(root, "volumes", id, nil)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	if old, ok := s.onDisk[id]; ok && bytes.Equal(old, b) {
		return nil
	}
	delete(s.onDisk, id) // until the write is known to be durable
	if err := saveObject(root, "volumes", id, b); err != nil {
		return err
	}
	s.onDisk[id] = b
	return nil
}

// The root's file system is the one its volumes' data is on: a consumer filling its volume
// fills it, and a record, written beside its old one and renamed over it (atomicfile), then
// finds no room for its new copy. A create or a publish may fail then; a teardown (a target, the
// staging, an attachment gone) must not, or no consumer can let go of a volume until someone
// frees space by hand (TestTeardownsSucceedOnAFullRoot). The reserve holds room for it: slot
// files in meta/ (reserveSlots, 96 KiB in all) allocated at start and at each create
// (keepReserve). A teardown's save that finds the file system full writes the record into the
// smallest slot that holds it, padded with blanks to the slot's length (JSON allows trailing
// white space; the readers trim it), and exchanges the two names (saveIntoReserve): the
// record's old file, blocks and all, is that slot from then on. Nothing is truncated, so no
// byte passes through the file system's free space, where a consumer still writing would take
// it; a slot shrinks only by what the record outgrew its old file, and the other slots are kept
// whole, so the next teardown still finds a slot for a record up to the largest slot's size
// (TestALargeRecordsTeardownFollowsSmallOnesOnAFullRoot). keepReserve takes each slot back to
// its size when there is room. Before, the reserve was one file, removed and the save tried
// again: the consumers still writing ate the 64 KiB so freed, and the next teardown found
// neither room nor reserve (TestTeardownsSucceedWhileAConsumerKeepsWriting); then it was
// truncated to the record's length, and the next teardown of a record larger than a page found
// no room. Where the names cannot be exchanged (a file system without RENAME_EXCHANGE, or one
// that writes every block anew, as btrfs does), slots are given up, smallest first, until the
// save finds room.
const (
	reserveFile = ".reserve"
	reserveSize = 64 << 10
)

// reserveSlots are the reserve's files in meta/ and the bytes each is kept at: the first,
// .reserve as it always was, holds a record up to reserveSize (a volume's parameters may take
// 64 KiB), the others records of a page or a few, the most a teardown writes.
var reserveSlots = []struct {
	name string
	size int64
}{
	{reserveFile, reserveSize},
	{reserveFile + "-1", 16 << 10},
	{reserveFile + "-2", 8 << 10},
	{reserveFile + "-3", 4 << 10},
	{reserveFile + "-4", 4 << 10},
}

// keepReserve makes each of the reserve's slots hold at least its size allocated, when there is
// room: a slot with none does not keep the smaller ones after it from being taken back.
func keepReserve(root string) error {
	var first error
	for _, slot := range reserveSlots {
		if err := keepSlot(filepath.Join(root, metaDir, slot.name), slot.size); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func keepSlot(path string, size int64) error {
	f, err := openReserve(path, os.O_CREATE)
	if err != nil {
		return fmt.Errorf("keeping room for teardowns in %s: %w", path, err)
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) { // a file system without fallocate: the bytes written
		err = padTo(f, 0, size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keeping room for teardowns in %s: %w", path, err)
	}
	return nil
}

// padTo writes blanks into f from offset from up to offset to.
func padTo(f *os.File, from, to int64) error {
	if to <= from {
		return nil
	}
	_, err := f.WriteAt(bytes.Repeat([]byte{' '}, int(to-from)), from)
	return err
}

// openReserve opens the reserve's slot at path for writing (flag: os.O_CREATE to make it when
// missing) and takes its lock, which the caller's Close releases. Two plugin processes may serve
// one root: the lock keeps one from writing a slot while the other fills or uses it, and a slot
// whose name was exchanged with a record while this one waited for its lock (it is that record
// now) is let go and the new one opened.
func openReserve(path string, flag int) (*os.File, error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_RDWR|flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		held, herr := f.Stat()
		named, nerr := os.Lstat(path)
		if herr == nil && nerr == nil && os.SameFile(held, named) && held.Mode().IsRegular() {
			return f, nil
		}
		f.Close()
		if herr != nil {
			return nil, herr
		}
		if nerr != nil && !errors.Is(nerr, fs.ErrNotExist) {
			return nil, nerr
		}
	}
	return nil, fmt.Errorf("%s was replaced each time it was opened", path)
}

// saveTeardown is saveVolume of a teardown's change: when the file system has no room for the
// record's new copy, it is written into a slot of the reserve (saveIntoReserve); where that
// cannot be, slots are given up, smallest first, and the save tried again after each.
func (s *state) saveTeardown(root, id string) error {
	err := s.saveVolume(root, id)
	if !noRoom(err) {
		return err
	}
	if s.saveIntoReserve(root, id) == nil {
		return nil
	}
	for giveUpReserve(root) {
		err = s.saveVolume(root, id)
		if !noRoom(err) {
			return err
		}
	}
	return err // no room kept (given up already, by this process or another)
}

// giveUpReserve removes the reserve's smallest slot, under its lock, and says whether it did:
// another process serving the root may be writing a record into it, and exchanges the slot's
// name with the record's, by name. Removed under it, and another slot made there since, that
// exchange would put the new slot's bytes under the record's name.
func giveUpReserve(root string) bool {
	for _, path := range slotsBySize(root) {
		f, err := openReserve(path, 0)
		if err != nil {
			continue
		}
		removed := os.Remove(f.Name()) == nil
		f.Close()
		if removed {
			return true
		}
	}
	return false
}

// slotsBySize returns the paths of the reserve's slots there are, the smallest first.
func slotsBySize(root string) []string {
	type slot struct {
		path string
		size int64
	}
	var slots []slot
	for _, rs := range reserveSlots {
		path := filepath.Join(root, metaDir, rs.name)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			slots = append(slots, slot{path, fi.Size()})
		}
	}
	slices.SortStableFunc(slots, func(a, b slot) int { return cmp.Compare(a.size, b.size) })
	paths := make([]string, len(slots))
	for i, sl := range slots {
		paths[i] = sl.path
	}
	return paths
}

// saveIntoReserve saves volume id's record, which has one on disk, by writing it over the
// smallest reserve slot that holds it, padded with blanks to the slot's length, synced, and
// exchanging the two names (renameat2's RENAME_EXCHANGE, atomic: a crash leaves the old record
// or the new one under the record's name), then syncing both directories. The old record's file
// is that slot from then on. Nothing is allocated on a file system that writes in place, and
// nothing freed.
func (s *state) saveIntoReserve(root, id string) error {
	v := s.Volumes[id]
	if v == nil {
		return errors.New("no record to save")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for _, path := range slotsBySize(root) {
		f, err := openReserve(path, 0)
		if err != nil {
			continue
		}
		err = s.exchangeWithSlot(root, id, b, f)
		f.Close() // held locked until the names are exchanged
		if !errors.Is(err, errSlotTooSmall) {
			return err
		}
	}
	return fmt.Errorf("no slot of the reserve holds the record's %d bytes", len(b))
}

var errSlotTooSmall = errors.New("the reserve's slot is smaller than the record")

// exchangeWithSlot writes b, volume id's record, into the locked slot f and exchanges their names.
func (s *state) exchangeWithSlot(root, id string, b []byte, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < int64(len(b)) {
		return errSlotTooSmall
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	if err := padTo(f, int64(len(b)), fi.Size()); err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if err := syncFile(f); err != nil {
		return err
	}
	delete(s.onDisk, id) // until the exchange is known to be durable
	meta := filepath.Join(root, metaDir)
	dir := filepath.Join(meta, "volumes")
	if err := exchangeNames(f.Name(), filepath.Join(dir, id+".json")); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if err := syncDir(meta); err != nil {
		return err
	}
	s.onDisk[id] = b
	return nil
}

// saveSnapshot writes one snapshot's record, or removes it when the snapshot is gone from s.
func (s *state) saveSnapshot(root, id string) error {
	sn := s.Snapshots[id]
	if sn == nil {
		return saveObject(root, "snapshots", id, nil)
	}
	b, err := json.Marshal(sn)
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	return saveObject(root, "snapshots", id, b)
}

// saveObject writes b to meta/KIND/ID.json atomically (atomicfile: a crash leaves either the old
// or the new record), or removes it when b is nil.
func saveObject(root, kind, id string, b []byte) error {
	meta := filepath.Join(root, metaDir)
	dir := filepath.Join(meta, kind)
	path := filepath.Join(dir, id+".json")
	if b == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("saving state: %w%s", err, readOnlyRoot(root, err))
		}
		return syncDir(dir)
	}
	if err := ensureMetaDir(meta, dir); err != nil {
		return fmt.Errorf("%w%s", err, readOnlyRoot(root, err))
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("saving state: %w%s", err, readOnlyRoot(root, err))
	}
	return nil
}

// readOnlyRoot says, for an error of a write under root that its file system is read-only
// (EROFS: mounted so, or turned so by the kernel after a disk error, errors=remount-ro), what
// that means and what to do; "" for any other error. Before, a request failing so said only
// "open .../meta/volumes/.volctl-tmp-...: read-only file system"
// (TestTeardownOnAReadOnlyRootSaysWhatToDo).
func readOnlyRoot(root string, err error) string {
	if !errors.Is(err, unix.EROFS) {
		return ""
	}
	return fmt.Sprintf(" (the plugin's root %s is on a read-only file system, where nothing can be created or recorded: "+
		"mount it read-write again, after fsck when the kernel turned it read-only after a disk error (see dmesg), "+
		"then send the request again)", root)
}

// noRoom says whether err is a write that found no room: the file system full (ENOSPC) or a
// quota reached (EDQUOT).
func noRoom(err error) bool { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }

// ensureMetaDir creates meta/KIND (and meta/VERSION) the first time something is saved.
// VERSION is written whole and synced (atomicfile) before the directory is made: written in
// place and unsynced, as it was, a power loss left it empty beside records already on disk.
func ensureMetaDir(meta, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(meta, 0o700); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	version := filepath.Join(meta, versionFile)
	if b, err := os.ReadFile(version); errors.Is(err, fs.ErrNotExist) || (err == nil && versionUnwritten(b)) {
		if err := atomicfile.Write(version, []byte(strconv.Itoa(stateVersion)+"\n"), 0o600); err != nil {
			return fmt.Errorf("saving state: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	return syncDir(meta)
}

// versionUnwritten says whether VERSION's content is what a power loss leaves of a write never
// synced: nothing, or blanks.
func versionUnwritten(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %q: %w", dir, err)
	}
	defer d.Close()
	if err := syncFile(d); err != nil {
		return fmt.Errorf("syncing %q: %w", dir, err)
	}
	return nil
}

// exchangeNames swaps the files two paths name, atomically; tests make it fail, as a file
// system without RENAME_EXCHANGE does.
var exchangeNames = func(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// syncFile is (*os.File).Sync; tests record what is synced, and when.
var syncFile = (*os.File).Sync

// volumeByName finds a volume by its CreateVolume name, for idempotent creates.
func (s *state) volumeByName(name string) *volume {
	for _, v := range s.Volumes {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// snapshotByName finds a snapshot by its CreateSnapshot name.
func (s *state) snapshotByName(name string) *snapshot {
	for _, sn := range s.Snapshots {
		if sn.Name == name {
			return sn
		}
	}
	return nil
}

// attachedCount is how many volumes are controller-published to node.
func (s *state) attachedCount(node string) int {
	n := 0
	for _, v := range s.Volumes {
		if _, ok := v.Attachments[node]; ok {
			n++
		}
	}
	return n
}

// targetOwner returns the volume that records target as one of its publications, if any.
func (s *state) targetOwner(target string) *volume {
	for _, v := range s.Volumes {
		if _, ok := v.Targets[target]; ok {
			return v
		}
	}
	return nil
}

// recordsGone reports whether the directory of root's records of kind ("volumes",
// "snapshots") is not there: the root moved or removed (or replaced by a file), not a record
// deleted.
func recordsGone(root, kind string) bool {
	_, err := os.Lstat(filepath.Join(root, metaDir, kind))
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
