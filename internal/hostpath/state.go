package hostpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// stateVersion is bumped when the metadata file changes incompatibly.
const stateVersion = 1

// state is everything the plugin knows, persisted as one small JSON file under Root.
type state struct {
	Version   int                  `json:"version"`
	Volumes   map[string]*volume   `json:"volumes"`
	Snapshots map[string]*snapshot `json:"snapshots"`
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
	return &state{Version: stateVersion, Volumes: map[string]*volume{}, Snapshots: map[string]*snapshot{}}
}

// loadState reads the metadata file, or starts empty when there is none yet. Every ID in it is
// validated, since IDs become path components and the file is only as trustworthy as the disk.
func loadState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	st := newState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("reading state %q: %w", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("reading state %q: version %d, this volctl reads version %d", path, st.Version, stateVersion)
	}
	if st.Volumes == nil {
		st.Volumes = map[string]*volume{}
	}
	if st.Snapshots == nil {
		st.Snapshots = map[string]*snapshot{}
	}
	for id, v := range st.Volumes {
		if v == nil || v.ID != id || !isVolumeID(id) {
			return nil, fmt.Errorf("reading state %q: malformed volume entry %q", path, id)
		}
	}
	for id, s := range st.Snapshots {
		if s == nil || s.ID != id || !isSnapshotID(id) {
			return nil, fmt.Errorf("reading state %q: malformed snapshot entry %q", path, id)
		}
	}
	return st, nil
}

// save writes the state atomically: a temp file in the same directory, fsynced, renamed over
// the old one, and the directory fsynced, so a crash leaves either the old or the new state.
func (s *state) save(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".state-*.json")
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("saving state: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("saving state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %q: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %q: %w", dir, err)
	}
	return nil
}

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

// volumeIDs returns the volume IDs in order, which is what pagination tokens point into.
func (s *state) volumeIDs() []string {
	ids := make([]string, 0, len(s.Volumes))
	for id := range s.Volumes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// snapshotIDs returns the snapshot IDs in order.
func (s *state) snapshotIDs() []string {
	ids := make([]string, 0, len(s.Snapshots))
	for id := range s.Snapshots {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
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
