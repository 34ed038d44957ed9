package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

func TestZZBigID(t *testing.T) {
	big := strings.Repeat("y", 2<<20)
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) { m.(*csipb.CreateVolumeResponse).Volume.VolumeId = big }})
	v, err := h.e.CreateVolume(h.ctx, volume("v"))
	t.Logf("create: len(ext)=%d err=%.300v len %d", len(v.ExternalID), err, len(errS(err)))
	vs, err := h.e.Volumes(h.ctx)
	t.Logf("vols %d err %v", len(vs), err)
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Times: 1, Answer: func(m proto.Message) { m.(*csipb.CreateSnapshotResponse).Snapshot.SnapshotId = big }})
	h.create(volume("w"))
	s, err := h.e.CreateSnapshot(h.ctx, "w", "s", nil)
	t.Logf("snap: len(id)=%d err=%.300v len %d", len(s.ID), err, len(errS(err)))
}

func errS(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
