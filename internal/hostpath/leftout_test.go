package hostpath

import "testing"

// TestWalkLeavesOutMountsNotDevices: a walk (a snapshot's copy, the stats) leaves out the roots
// of mounts inside a volume, as statx says where the kernel can; a directory on a device of its
// own that is no mount (a btrfs subvolume a consumer made in its volume, which needs no
// privilege; an overlayfs directory from another layer's file system) is the volume's data and
// is walked. Going by the device alone, the subvolume was left out of every snapshot, the
// copy reported whole. On a kernel that cannot say (before 5.8) the device is all there is.
func TestWalkLeavesOutMountsNotDevices(t *testing.T) {
	for _, tt := range []struct {
		name             string
		mountRoot, known bool
		dev, rootDev     uint64
		want             bool
	}{
		{"a mount inside the volume", true, true, 7, 5, true},
		{"a bind mount of the volume's own file system", true, true, 5, 5, true},
		{"a btrfs subvolume: another device, no mount", false, true, 7, 5, false},
		{"a plain directory", false, true, 5, 5, false},
		{"another device, the kernel unable to say", false, false, 7, 5, true},
		{"the same device, the kernel unable to say", false, false, 5, 5, false},
	} {
		if got := leftOut(tt.mountRoot, tt.known, tt.dev, tt.rootDev); got != tt.want {
			t.Errorf("%s: left out = %v, want %v", tt.name, got, tt.want)
		}
	}
}
