package nomad

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// Difference is one field in which Nomad's copy of a volume differs from volctl's, with what
// each side has, in words: so that a difference can be judged without reading both copies.
type Difference struct {
	// Field is the field's name, as Differing names it.
	Field string `json:"field"`
	// Nomad is what Nomad's copy has, Volctl what volctl's volume has (or, for topology and
	// topology_request, what a registration of it sends); "none" for nothing.
	Nomad  string `json:"nomad"`
	Volctl string `json:"volctl"`
}

// Sized lists "capacity_bytes" when Nomad's copy of volume info has a capacity other than the
// one volctl records for it (both known): Nomad expands a registered volume through its
// plugin when a registration asks a larger capacity_min than it has (`nomad volume register`),
// and keeps that capacity whatever a registration asking less sends, so volctl's record of
// the storage's size is behind, and no registration of volctl's changes either.
func Sized(have VolumeState, info engine.VolumeInfo) []string {
	if have.Capacity > 0 && info.CapacityBytes > 0 && have.Capacity != info.CapacityBytes {
		return []string{"capacity_bytes"}
	}
	return nil
}

// Differing names every field in which Nomad's copy have of volume info differs from volctl's
// (registered as RegisterSpec makes it), in a fixed order: those a registration would change
// (Changes), those Nomad refuses to change (Refused) or keeps whatever is sent (Kept), and the
// capacity Nomad has when it is not volctl's record (Sized). The one list `volctl nomad
// status` names and `volctl nomad register --dry-run` words (Differences).
func Differing(have VolumeState, info engine.VolumeInfo) []string {
	want := RegisterSpec(info)
	return slices.Concat(Changes(have, want), Refused(have, want), Kept(have, want), Sized(have, info))
}

// Differences words each of fields (named by Differing) as Nomad's copy
// have and volctl's volume info (registered as RegisterSpec makes it) have it; a field it does
// not know is left out.
func Differences(have VolumeState, info engine.VolumeInfo, fields []string) []Difference {
	want := RegisterSpec(info)
	out := make([]Difference, 0, len(fields))
	for _, f := range fields {
		d := Difference{Field: f}
		switch f {
		case "external_id":
			d.Nomad, d.Volctl = fmt.Sprintf("%q", have.ExternalID), fmt.Sprintf("%q", want.ExternalID)
		case "plugin_id":
			d.Nomad, d.Volctl = fmt.Sprintf("%q", have.PluginID), fmt.Sprintf("%q", want.PluginID)
		case "name":
			d.Nomad, d.Volctl = fmt.Sprintf("%q", have.Name), fmt.Sprintf("%q", want.Name)
		case "capabilities":
			d.Nomad, d.Volctl = capabilities(have.Capabilities), capabilities(want.Capabilities)
		case "mount_options":
			fs, n := "", 0
			if mo := want.MountOptions; mo != nil {
				fs, n = mo.FSType, len(mo.MountFlags)
			}
			d.Nomad, d.Volctl = mountOptionWords(have.FSType, have.MountFlags), mountOptionWords(fs, n)
		case "context":
			d.Nomad, d.Volctl = mapWords(have.Context), mapWords(want.Context)
		case "parameters":
			d.Nomad, d.Volctl = mapWords(have.Parameters), mapWords(want.Parameters)
		case "capacity":
			d.Nomad, d.Volctl = capacityWords(have.CapacityMin, have.CapacityMax), capacityWords(want.CapacityMin, want.CapacityMax)
		case "capacity_max":
			d.Nomad, d.Volctl = "capacity "+spec.FormatSize(have.Capacity), "max "+spec.FormatSize(want.CapacityMax)
		case "capacity_bytes":
			d.Nomad, d.Volctl = spec.FormatSize(have.Capacity), spec.FormatSize(info.CapacityBytes)
		case "topology_request":
			d.Nomad, d.Volctl = topologyRequestWords(have.TopologyRequest), topologyRequestWords(sentTopologyRequest(want))
		case "topology":
			var sent []spec.Topology
			if tr := sentTopologyRequest(want); tr != nil {
				sent = tr.Required
			}
			d.Nomad, d.Volctl = topologyList(have.Topologies), topologyList(sent)
		default:
			continue
		}
		out = append(out, d)
	}
	return out
}

// mapWords words a map (a context, parameters, a topology's segments) by its keys, sorted:
// {"k"="v" ...}; "none" when empty.
func mapWords(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%q=%q", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// capacityWords words a requested capacity: "min 10MiB, max none"; "none" for neither.
func capacityWords(lo, hi int64) string {
	if lo == 0 && hi == 0 {
		return "none"
	}
	size := func(n int64) string {
		if n == 0 {
			return "none"
		}
		return spec.FormatSize(n)
	}
	return fmt.Sprintf("min %s, max %s", size(lo), size(hi))
}

// mountOptionWords words mount options as Nomad answers them: the file system type, and
// whether there are mount flags (Nomad answers any number as one "[REDACTED]").
func mountOptionWords(fsType string, flags int) string {
	with := "no mount flags"
	if flags > 0 {
		with = "mount flags"
	}
	return fmt.Sprintf("fs_type %q, %s", fsType, with)
}

// topologyRequestWords words a topology request by its required and preferred topologies;
// "none" for none.
func topologyRequestWords(tr *spec.TopologyRequest) string {
	if tr == nil {
		return "none"
	}
	return fmt.Sprintf("required %s, preferred %s", topologyList(tr.Required), topologyList(tr.Preferred))
}
