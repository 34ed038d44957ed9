package hostpath

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
)

// Generated IDs are a prefix and random hex: safe path components by construction, and
// recognisable, so a pagination token or an ID from a caller can be checked by its shape before
// it is ever looked up or joined to a path.
const (
	volumeIDPrefix   = "vol-"
	snapshotIDPrefix = "snap-"
	idRandomBytes    = 12
)

func newVolumeID() string   { return volumeIDPrefix + randomHex(idRandomBytes) }
func newSnapshotID() string { return snapshotIDPrefix + randomHex(idRandomBytes) }
func newToken() string      { return randomHex(idRandomBytes) }

func randomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never returns an error on Linux (it panics if the kernel fails).
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func isVolumeID(s string) bool   { return hasHexSuffix(s, volumeIDPrefix) }
func isSnapshotID(s string) bool { return hasHexSuffix(s, snapshotIDPrefix) }

// hasHexSuffix reports whether s is prefix followed by exactly the generated number of lower-case
// hex digits: no '/', no "..", nothing a path could be steered with.
func hasHexSuffix(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 2*idRandomBytes {
		return false
	}
	for _, c := range rest {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkPath validates a staging or target path from a request: absolute, already clean, and
// without "..", so the plugin mounts exactly where it was told and nowhere else.
func checkPath(field, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s is required", field)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s %q must be an absolute path", field, p)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%s must not contain NUL", field)
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return "", fmt.Errorf("%s %q must not contain \"..\"", field, p)
		}
	}
	return filepath.Clean(p), nil
}

// requireVolumeID is the first check of every RPC on a volume.
func requireVolumeID(rpc, id string) error {
	if id == "" {
		return invalidArg("%s: volume_id is required", rpc)
	}
	return nil
}

// nodeArgs checks a node RPC's volume ID and its path argument, named field, and returns the
// path cleaned.
func nodeArgs(rpc, id, field, path string) (string, error) {
	if err := requireVolumeID(rpc, id); err != nil {
		return "", err
	}
	clean, err := checkPath(field, path)
	if err != nil {
		return "", invalidArg("%s: volume %q: %v", rpc, id, err)
	}
	return clean, nil
}

// lookupVolume returns the recorded volume id, or NOT_FOUND with prefix in front of the
// message. The caller holds p.mu.
func (p *Plugin) lookupVolume(prefix, id string) (*volume, error) {
	v, ok := p.volume(id)
	if !ok {
		return nil, notFound("%svolume %q not found", prefix, id)
	}
	return v, nil
}

// saveOrUndo saves volume id's record after a change to it. When saving fails, undo (when set)
// puts the change back and the INTERNAL error starts with prefix (naming the root and what to
// free when it found no room). The caller holds p.mu.
func (p *Plugin) saveOrUndo(prefix, id string, undo func()) error {
	return undoFailed(codes.Internal, p.cfg.Root, prefix, id, p.saveVolume(id), undo)
}

// saveAttachmentOrUndo is saveOrUndo for ControllerPublishVolume's new attachment: a root with
// no room for it is RESOURCE_EXHAUSTED, the code CSI gives that RPC for a node that can take
// no more, which the caller does not send again before something is freed. Every other RPC's
// record keeps INTERNAL: CSI gives NodeStageVolume, NodePublishVolume, the expansions and the
// teardowns no RESOURCE_EXHAUSTED, and a caller retries it there as a passing condition
// (volctl did: a claim on a full root was held for reconcile, not rolled back, review26e).
func (p *Plugin) saveAttachmentOrUndo(id string, undo func()) error {
	return undoFailed(codes.ResourceExhausted, p.cfg.Root, "", id, p.saveVolume(id), undo)
}

// saveTeardownOrUndo is saveOrUndo for a teardown's change (a target, the staging or an
// attachment gone): on a root with no room for the record's new copy, it may use the room
// kept for it (state.saveTeardown).
func (p *Plugin) saveTeardownOrUndo(prefix, id string, undo func()) error {
	return undoFailed(codes.Internal, p.cfg.Root, prefix, id, p.state.saveTeardown(p.cfg.Root, id), undo)
}

// undoFailed is what saveOrUndo does with the save's err: code, naming root and what to free,
// when the save found no room (noRoom), else INTERNAL.
func undoFailed(code codes.Code, root, prefix, id string, err error, undo func()) error {
	if err == nil {
		return nil
	}
	if undo != nil {
		undo()
	}
	if noRoom(err) {
		return noRoomStatus(code, root, fmt.Sprintf("%svolume %q: recording the change", prefix, id), "; the change is not recorded", err)
	}
	return internal("%svolume %q: %v", prefix, id, err)
}

// isMountPoint is p.mounter.IsMountPoint for volume id's path, its failure INTERNAL, named rpc.
func (p *Plugin) isMountPoint(rpc, id, path string) (bool, error) {
	mounted, err := p.mounter.IsMountPoint(path)
	if err != nil {
		return false, internal("%s: volume %q: %v", rpc, id, err)
	}
	return mounted, nil
}
