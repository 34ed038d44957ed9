package spec

import (
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/text/unicode/norm"

	"github.com/volctl/volctl/internal/shellquote"
)

// The placeholders a volume_mount destination may hold; the engine substitutes them per alloc.
const (
	PlaceholderIndex = "{index}" // the alloc's index: 0, 1, ...
	PlaceholderAlloc = "{alloc}" // the alloc's name: web[0], web[1], ...
)

var groupFileSchema = &schema{
	what:   "a group spec",
	blocks: []blockSchema{{name: "group", labels: []string{"name"}}},
}

var groupSchema = &schema{
	what:   "a group block",
	attrs:  []string{"count"},
	blocks: []blockSchema{{name: "volume", labels: []string{"name"}}, {name: "volume_mount"}},
}

var volumeRequestSchema = &schema{
	what:   "a group's volume block",
	attrs:  []string{"type", "source", "per_alloc", "read_only", "access_mode", "attachment_mode"},
	blocks: []blockSchema{{name: "mount_options"}},
}

var volumeMountSchema = &schema{
	what:  "a volume_mount block",
	attrs: []string{"volume", "destination", "read_only", "propagation_mode"},
}

var propagationModes = []string{PropagationPrivate, PropagationHostToTask, PropagationBidirectional}

// placeholderRE finds {...} in a destination; compiled on first use, not by every process.
var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{[^{}]*\}`) })

func (d *decoder) group(body hcl.Body) *Group {
	c := d.content(body, groupFileSchema)
	blocks := blocksOf(c, "group")
	if len(blocks) == 0 {
		d.errorf(c.MissingItemRange, "Missing group block", `A group spec needs one group block, e.g. group "web" { count = 1 volume "data" { ... } }.`)
		return nil
	}
	for _, b := range blocks[1:] {
		d.errorf(d.at(b), "Duplicate group block", "A group spec holds exactly one group block; put each group in its own file.")
	}
	b := blocks[0]
	// The name is read in NFC, as the plugin's label is (plugin.go) and as the command line
	// reads a typed group name: the label is kept as written by HCL, and a name stored
	// decomposed would be found by no command.
	g := &Group{Name: norm.NFC.String(b.Labels[0]), Count: 1}
	nameOK := d.checkNewID(b.LabelRanges[0], "group name", "Invalid group name", g.Name)
	gc := d.content(b.Body, groupSchema)
	if a := gc.Attributes["count"]; a != nil {
		if v, diags := value(a.Expr); !diags.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.Number && v.AsBigFloat().Sign() == 0 {
			// Nomad's way to keep a group with no allocs; volctl's is a stop.
			d.errorf(a.Expr.Range(), "Invalid count", "count must be at least 1, not 0: a group of no allocs claims nothing. To release every alloc's claims, as Nomad's count = 0 does, run `%s`; a `group run` of the spec again claims them back.",
				shellquote.Command("volctl group stop", g.Name))
		} else if n, ok := d.integer(a, 1, math.MaxInt32, "Invalid count"); ok {
			g.Count = n
			if nameOK {
				d.checkNewID(a.Expr.Range(), "alloc name", "Invalid count", AllocName(g.Name, n-1))
			}
		}
	}

	reqs := map[string]*VolumeRequest{}
	// claimed: the blocks that claim a volume, for the check that no two claim one (sameVolume).
	var claimed []*VolumeRequest
	vblocks := blocksOf(gc, "volume")
	if len(vblocks) == 0 {
		d.errorf(d.at(b), "Missing volume block", `A group needs at least one volume block, e.g. volume "data" { type = "csi" source = "db" ... }.`)
	}
	// HCL reads a quoted string in an expression (volume_mount's volume) in Unicode normal form
	// C, and a block label as written: the group's volumes are named, and found, in NFC, so a
	// label written decomposed is found, and two labels written differently are one name.
	for _, vb := range vblocks {
		r, ok := d.volumeRequest(vb, g.Count)
		key := norm.NFC.String(r.Name)
		if prev, dup := reqs[key]; dup {
			if prev.Name == r.Name {
				d.errorf(vb.LabelRanges[0], "Duplicate volume block", "The group already has a volume named %q.", r.Name)
			} else {
				d.errorf(vb.LabelRanges[0], "Duplicate volume block", "The group already has a volume named %+q, which differs from %+q only in Unicode normalisation: a volume_mount cannot tell them apart.", prev.Name, r.Name)
			}
			continue
		}
		if ok {
			g.Volumes = append(g.Volumes, *r)
			if r.Source != "" {
				if prev, alloc := sameVolume(claimed, r, g); prev != nil {
					d.errorf(d.at(vb), "Volume claimed twice", "%s, and an alloc holds one claim of a volume, in one mode (a second claim of it is refused at every run): "+
						"use one volume block for it, with a volume_mount block for each destination.", bothClaim(prev, r, alloc, g.Name))
				}
				claimed = append(claimed, r)
			}
		}
		reqs[key] = r
	}
	var mountBlocks []*hcl.Block // each of g.Mounts' block
	for _, mb := range blocksOf(gc, "volume_mount") {
		if m, ok := d.volumeMount(mb, g.Name, g.Count, reqs); ok {
			// Compared as bound: cleaned ("/srv/a/" is "/srv/a"), one path being one mount, and
			// with the placeholders each alloc's ("/srv/{alloc}" and "/srv/web[{index}]" are one
			// path in group web; "/srv/{index}1" and "/srv/1{index}" for web[1]): before, they
			// were compared as written, and every run refused the allocs so bound
			// (TestVolumeMountsOnePathForAnAllocAreRefused).
			for _, prev := range g.Mounts {
				switch i := sharedAlloc(prev.Destination, m.Destination, g.Name, g.Count); {
				case i < 0:
				case path.Clean(prev.Destination) == path.Clean(m.Destination):
					d.errorf(d.at(mb), "Duplicate destination", "Another volume_mount already mounts at %q.", prev.Destination)
				case boundTemplate(prev.Destination, g.Name) == boundTemplate(m.Destination, g.Name):
					d.errorf(d.at(mb), "Duplicate destination", "Another volume_mount's destination, %q, and this one, %q, are one path for every alloc (for alloc %s: %s). "+
						"Give each volume_mount a path of its own.", prev.Destination, m.Destination, AllocName(g.Name, i), boundFor(m.Destination, g.Name, i))
				default:
					d.errorf(d.at(mb), "Duplicate destination", "Another volume_mount's destination, %q, and this one, %q, are one path for alloc %s: %s. "+
						"Give each volume_mount a path of its own for every alloc.", prev.Destination, m.Destination, AllocName(g.Name, i), boundFor(m.Destination, g.Name, i))
				}
			}
			g.Mounts = append(g.Mounts, *m)
			mountBlocks = append(mountBlocks, mb)
		}
	}
	// Across allocs: one alloc's destination that is, or lies in, another's, which every run
	// bound one of and refused the other, and which validate called valid
	// (TestValidateRefusesAGroupWhoseAllocsDestinationsOverlap).
	if !d.diags.HasErrors() {
		if first, second, how, ok := AllocsOverlap(*g); ok {
			d.errorf(d.at(mountBlocks[second.Mount]), "Destinations overlap across allocs", "%s", first.Overlap(second, how))
		}
	}
	return g
}

// MaxOverlapChecked bounds the destinations AllocsOverlap compares: past it (a count of
// thousands with several volume_mounts each), the engine's admission, alloc by alloc, stands
// alone.
const MaxOverlapChecked = 100_000

// BoundMount is volume_mount Mount (an index of a group's Mounts) of one alloc, its
// destination as bound: placeholders replaced, cleaned.
type BoundMount struct {
	Path, Alloc, Volume string
	Mount               int
}

// Overlap words b, which is (how "is") or lies in (how "lies in") m's destination, another
// alloc's: what a spec so written can never run.
func (m BoundMount) Overlap(b BoundMount, how string) string {
	return fmt.Sprintf("alloc %q's volume_mount of volume %q at %s %s alloc %q's of volume %q at %s: the group's volume_mount destinations overlap across its allocs, "+
		"so a run would bind one and refuse the other; give each alloc destinations of its own (%s or %s in a component of its own, not below another alloc's)",
		b.Alloc, b.Volume, b.Path, how, m.Alloc, m.Volume, m.Path, PlaceholderIndex, PlaceholderAlloc)
}

// AllocsOverlap returns two volume_mounts of different allocs of g whose destinations, as
// bound, are one path (how "is") or the second inside the first ("lies in"); ok false when
// none, or past MaxOverlapChecked destinations. One alloc's own may nest (they are bound
// outermost first); one path twice in one alloc is the decoder's "Duplicate destination".
func AllocsOverlap(g Group) (first, second BoundMount, how string, ok bool) {
	count := max(g.Count, 1)
	if len(g.Mounts) == 0 || len(g.Mounts)*count > MaxOverlapChecked {
		return first, second, "", false
	}
	all := make([]BoundMount, 0, len(g.Mounts)*count)
	for i := 0; i < count; i++ {
		alloc := AllocName(g.Name, i)
		r := strings.NewReplacer(PlaceholderIndex, strconv.Itoa(i), PlaceholderAlloc, alloc)
		for j, m := range g.Mounts {
			all = append(all, BoundMount{Path: path.Clean(r.Replace(m.Destination)), Alloc: alloc, Volume: m.Volume, Mount: j})
		}
	}
	slices.SortStableFunc(all, func(a, b BoundMount) int { return strings.Compare(a.Path, b.Path) })
	for i, a := range all {
		for _, b := range all[i+1:] {
			if !strings.HasPrefix(b.Path, a.Path) {
				break // sorted: the paths a is a prefix of, those below it among them, come first
			}
			below := b.Path != a.Path && (a.Path == "/" || strings.HasPrefix(b.Path, a.Path+"/"))
			if b.Alloc == a.Alloc || b.Path != a.Path && !below {
				continue
			}
			if b.Path == a.Path {
				return a, b, "is", true
			}
			return a, b, "lies in", true
		}
	}
	return first, second, "", false
}

// boundTemplate is destination dest as the engine binds it, cleaned, with {alloc} written as
// the alloc's name around {index} ("web[{index}]"): what is left to fill in is the index alone.
// A placeholder's component becomes a name with a digit in it, never "." or "..", so cleaning
// it with the placeholder in it does what cleaning each alloc's path does.
// A {index} in the group's name is text there, as the engine's one pass of replacements keeps
// it: it is written as nameIndex, which no destination holds, and read back by boundFor. Taken
// for the index, group "g{index}" had "/srv/{alloc}" and "/srv/g{index}[{index}]" refused as
// one path, which the engine binds at /srv/g{index}[0] and /srv/g0[0]
// (TestGroupNameHoldingAPlaceholderKeepsItAsText).
func boundTemplate(dest, group string) string {
	name := strings.ReplaceAll(group, PlaceholderIndex, nameIndex)
	return path.Clean(strings.ReplaceAll(dest, PlaceholderAlloc, name+"["+PlaceholderIndex+"]"))
}

// nameIndex stands for a {index} of the group's name in boundTemplate: with NULs, which no
// destination holds (volumeMount refuses one: no path can).
const nameIndex = "\x00index\x00"

// boundFor is dest as the engine binds it for alloc index i.
func boundFor(dest, group string, i int) string {
	bound := strings.ReplaceAll(boundTemplate(dest, group), PlaceholderIndex, strconv.Itoa(i))
	if strings.Contains(group, PlaceholderIndex) {
		bound = strings.ReplaceAll(bound, nameIndex, PlaceholderIndex)
	}
	return bound
}

// sharedAlloc returns the smallest index below count of an alloc for which destinations a and
// b are one path, or -1 for none. With D the index's digits, the two are strings of text and D:
// for each number of digits the index may have, either their lengths differ for every index of
// that many digits, or each byte of one must equal the other's at its place, which ties each
// digit of D to a byte or to other digits; the smallest D meeting those ties is the smallest
// such index, if below count. Exact, for any count, in a pass per number of digits.
func sharedAlloc(a, b, group string, count int) int {
	ta := strings.Split(boundTemplate(a, group), PlaceholderIndex)
	tb := strings.Split(boundTemplate(b, group), PlaceholderIndex)
	lits := func(t []string) int {
		n := 0
		for _, s := range t {
			n += len(s)
		}
		return n
	}
	for digits := 1; digits <= len(strconv.Itoa(max(count, 1)-1)); digits++ {
		if lits(ta)+(len(ta)-1)*digits != lits(tb)+(len(tb)-1)*digits {
			continue
		}
		if i, ok := smallestIndex(expandSymbols(ta, digits), expandSymbols(tb, digits), digits); ok && i < count {
			return i
		}
	}
	return -1
}

// expandSymbols writes template t (its text between the index's places) with each place as
// the index's digits: a byte b >= 0 stands for itself, -1-k for the index's digit k.
func expandSymbols(t []string, digits int) []int {
	var out []int
	for j, s := range t {
		if j > 0 {
			for k := range digits {
				out = append(out, -1-k)
			}
		}
		for i := range len(s) {
			out = append(out, int(s[i]))
		}
	}
	return out
}

// smallestIndex returns the smallest number of the given count of digits (no leading zero but
// for 0 itself) for which symbol strings a and b, of one length, are equal, if any.
func smallestIndex(a, b []int, digits int) (int, bool) {
	parent := make([]int, digits)
	value := make([]int, digits) // the byte a digit is tied to, -1 when none
	for k := range parent {
		parent[k], value[k] = k, -1
	}
	var find func(int) int
	find = func(k int) int {
		if parent[k] != k {
			parent[k] = find(parent[k])
		}
		return parent[k]
	}
	tie := func(k, c int) bool { // digit k is byte c
		if c < '0' || c > '9' {
			return false
		}
		r := find(k)
		if value[r] >= 0 && value[r] != c {
			return false
		}
		value[r] = c
		return true
	}
	for i := range a {
		x, y := a[i], b[i]
		switch {
		case x >= 0 && y >= 0:
			if x != y {
				return 0, false
			}
		case x >= 0:
			if !tie(-1-y, x) {
				return 0, false
			}
		case y >= 0:
			if !tie(-1-x, y) {
				return 0, false
			}
		default:
			rx, ry := find(-1-x), find(-1-y)
			if rx == ry {
				continue
			}
			if value[rx] >= 0 && value[ry] >= 0 && value[rx] != value[ry] {
				return 0, false
			}
			parent[rx] = ry
			value[ry] = max(value[ry], value[rx])
		}
	}
	n := 0
	for k := range digits {
		c := value[find(k)]
		if c < 0 {
			c = '0'
			if find(k) == find(0) && digits > 1 {
				c = '1'
			}
			value[find(k)] = c // one choice for the digits tied together
		}
		if k == 0 && c == '0' && digits > 1 {
			return 0, false
		}
		n = n*10 + c - '0'
	}
	return n, true
}

// sameVolume returns the block among claimed that claims a volume r claims too, for some
// alloc of g: the same source (per_alloc both or neither), or a per_alloc source and another's
// that names one of its volumes ("db" per_alloc, "db[1]" with count 2 or more). alloc is the
// index of the first alloc both claim it for (-1: every alloc). Sources are compared as HCL
// reads them, in NFC, as volume IDs are stored.
func sameVolume(claimed []*VolumeRequest, r *VolumeRequest, g *Group) (prev *VolumeRequest, alloc int) {
	for _, p := range claimed {
		switch {
		case p.PerAlloc == r.PerAlloc && p.Source == r.Source:
			return p, -1
		case p.PerAlloc && !r.PerAlloc:
			if n := allocOf(p.Source, r.Source, g.Count); n >= 0 {
				return p, n
			}
		case r.PerAlloc && !p.PerAlloc:
			if n := allocOf(r.Source, p.Source, g.Count); n >= 0 {
				return p, n
			}
		}
	}
	return nil, -1
}

// allocOf is the index of the alloc, below count, whose per_alloc volume of source perAlloc
// is id ("db", "db[1]": 1), or -1.
func allocOf(perAlloc, id string, count int) int {
	rest, ok := strings.CutPrefix(id, perAlloc+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	if err != nil || n < 0 || n >= count || AllocName(perAlloc, n) != id {
		return -1
	}
	return n
}

// bothClaim says which volume two blocks both claim (sameVolume), and for which allocs.
func bothClaim(prev, r *VolumeRequest, alloc int, group string) string {
	switch {
	case alloc >= 0:
		per, plain := prev, r
		if r.PerAlloc {
			per, plain = r, prev
		}
		return fmt.Sprintf("Volume block %q claims volume %q, which per_alloc volume block %q claims for alloc %s",
			plain.Name, plain.Source, per.Name, AllocName(group, alloc))
	case r.PerAlloc:
		return fmt.Sprintf("Volume blocks %q and %q both claim volume %q for each alloc (per_alloc: %s, ...)",
			prev.Name, r.Name, r.Source, AllocName(r.Source, 0))
	}
	return fmt.Sprintf("Volume blocks %q and %q both claim volume %q for each alloc", prev.Name, r.Name, r.Source)
}

// AllocName is the name of a group's alloc: "web[0]", as Nomad names them.
func AllocName(group string, index int) string { return fmt.Sprintf("%s[%d]", group, index) }

// sameForEveryAlloc says whether destination dest names one path for every alloc of a group:
// it holds no placeholder, or only in components its cleaning drops ("/srv/{index}/.."), as
// the engine binds it. A placeholder's component becomes a name with a digit in it, never "."
// or "..", so whether cleaning drops it is the same for every alloc: two allocs tell.
func sameForEveryAlloc(dest string) bool {
	at := func(i int) string {
		return path.Clean(strings.NewReplacer(PlaceholderIndex, strconv.Itoa(i), PlaceholderAlloc, AllocName("g", i)).Replace(dest))
	}
	return at(0) == at(1)
}

// volumeRequest decodes one `volume "NAME" {...}` of a group. ok is false for a request
// that is not a CSI volume request, which gets no further checks.
func (d *decoder) volumeRequest(b *hcl.Block, count int) (*VolumeRequest, bool) {
	r := &VolumeRequest{Name: b.Labels[0]}
	d.checkNewID(b.LabelRanges[0], "volume name", "Invalid volume name", r.Name)
	c := d.content(b.Body, volumeRequestSchema)
	attr := func(name string) *hcl.Attribute { return c.Attributes[name] }

	if s, ok := d.str(attr("type")); ok {
		r.Type = s
		switch s {
		case "csi":
		case "host":
			d.errorf(attr("type").Expr.Range(), "Host volumes are not supported",
				`volctl handles CSI volumes only (type = "csi"); host volumes are Nomad's own, used by Nomad jobs.`)
			return r, false
		default:
			d.errorf(attr("type").Expr.Range(), "Invalid volume type", "%q is not a volume type volctl handles: it manages CSI volumes, type = \"csi\".", s)
		}
	} else if attr("type") == nil {
		d.missing(d.at(b), "type", `The argument "type" is required; volctl handles CSI volumes: type = "csi".`)
	}
	if a := attr("per_alloc"); a != nil {
		r.PerAlloc, _ = d.boolean(a)
	}
	if a := attr("read_only"); a != nil {
		r.ReadOnly, _ = d.boolean(a)
	}
	if s, ok := d.str(attr("source")); ok {
		r.Source = s
		if d.checkID(attr("source").Expr.Range(), "volume source", "Invalid volume source", s) && r.PerAlloc {
			d.checkID(attr("source").Expr.Range(), "per-alloc volume ID", "Invalid volume source", AllocName(s, count-1))
		}
	} else if attr("source") == nil {
		d.missing(d.at(b), "source", `The argument "source" is required: the ID of the volume to claim.`)
	}

	var modeOK, attachOK bool
	if a := attr("access_mode"); a != nil {
		r.AccessMode, modeOK = d.accessMode(a)
	} else {
		d.missing(d.at(b), "access_mode", "")
	}
	if a := attr("attachment_mode"); a != nil {
		r.AttachmentMode, attachOK = d.attachmentMode(a)
	} else {
		d.missing(d.at(b), "attachment_mode", "")
	}
	if modeOK {
		modeRange := attr("access_mode").Expr.Range()
		if r.AccessMode.SingleNode() && count > 1 && !r.PerAlloc {
			d.errorf(modeRange, "Single-node volume shared by several allocs",
				"%s lets one alloc at a time use the volume, but the group has count = %d. Set per_alloc = true so each alloc claims its own volume (%s, %s, ...).",
				r.AccessMode, count, AllocName(r.Source, 0), AllocName(r.Source, 1))
		}
		if r.AccessMode.ReaderOnly() && !r.ReadOnly {
			d.errorf(modeRange, "Read-only access mode needs read_only",
				"%s allows readers only: set read_only = true in this volume block.", r.AccessMode)
		}
		// Nomad's job validation refuses this too ("allows only one writer"): every alloc
		// would claim the volume for writing, and all but the first be refused at each run.
		if r.AccessMode == MultiNodeSingleWriter && !r.ReadOnly && count > 1 && !r.PerAlloc {
			d.errorf(modeRange, "Single writer shared by several allocs",
				"%s lets one alloc at a time write the volume, but the group has count = %d and each alloc would claim it for writing (Nomad refuses such a job too). "+
					"Set read_only = true if the allocs only read it, or per_alloc = true so each alloc claims its own volume (%s, %s, ...).",
				r.AccessMode, count, AllocName(r.Source, 0), AllocName(r.Source, 1))
		}
	}
	if mb := d.single(c, "mount_options", "a volume block"); mb != nil {
		writable := ""
		if !r.ReadOnly {
			writable = "this volume block is not read_only, so each alloc claims it to write"
		}
		r.MountOptions = d.mountOptions(mb, writable)
		if attachOK && r.AttachmentMode == BlockDevice {
			d.errorf(mb.TypeRange, "mount_options not allowed for block-device",
				"mount_options apply to file-system volumes; a block-device volume is attached as a raw device. Remove mount_options or use attachment_mode = \"file-system\".")
		}
	}
	return r, true
}

func (d *decoder) volumeMount(b *hcl.Block, group string, count int, reqs map[string]*VolumeRequest) (*VolumeMount, bool) {
	c := d.content(b.Body, volumeMountSchema)
	attr := func(name string) *hcl.Attribute { return c.Attributes[name] }
	m := &VolumeMount{PropagationMode: PropagationPrivate}
	ok := true

	var req *VolumeRequest
	if s, sok := d.str(attr("volume")); sok {
		m.Volume = s
		req = reqs[norm.NFC.String(s)]
		if req != nil {
			m.Volume = req.Name // as its block's label is written
		}
		if req == nil {
			detail := fmt.Sprintf("The group has no volume named %q.", s)
			if sug := suggest(s, slices.Sorted(maps.Keys(reqs))); sug != "" {
				detail += fmt.Sprintf(" Did you mean %q?", sug)
			}
			d.errorf(attr("volume").Expr.Range(), "Unknown volume", "%s volume_mount.volume must name one of the group's volume blocks.", detail)
			ok = false
		}
	} else {
		if attr("volume") == nil {
			d.missing(d.at(b), "volume", `The argument "volume" is required: the name of one of the group's volume blocks.`)
		}
		ok = false
	}

	if s, sok := d.str(attr("destination")); sok {
		m.Destination = s
		rng := attr("destination").Expr.Range()
		switch {
		case !path.IsAbs(s):
			d.errorf(rng, "Invalid destination", "destination %q must be an absolute path.", s)
		case strings.ContainsRune(s, 0):
			d.errorf(rng, "Invalid destination", "destination %q holds a NUL byte, which no path can.", s)
		case count > 1 && sameForEveryAlloc(s):
			d.errorf(rng, "Destination shared by several allocs",
				"The group has count = %d, so every alloc would mount on %q. Put %s or %s in the destination (e.g. \"/srv/data/{index}\"); volctl replaces it with each alloc's index or name.",
				count, s, PlaceholderIndex, PlaceholderAlloc)
		}
		for _, p := range placeholderRE().FindAllString(s, -1) {
			if p != PlaceholderIndex && p != PlaceholderAlloc {
				d.errorf(rng, "Unknown placeholder", "destination uses %s; the placeholders are %s (the alloc's index) and %s (the alloc's name).", p, PlaceholderIndex, PlaceholderAlloc)
			}
		}
		if path.IsAbs(s) {
			d.checkPathLength(rng, s, group, count)
		}
	} else {
		if attr("destination") == nil {
			d.missing(d.at(b), "destination", `The argument "destination" is required: the absolute host path to mount the volume on.`)
		}
		ok = false
	}
	if a := attr("read_only"); a != nil {
		var bok bool
		m.ReadOnly, bok = d.boolean(a)
		if bok && m.ReadOnly && req != nil && !req.ReadOnly && req.AttachmentMode == BlockDevice {
			// A read-only bind of a device file stops no write to the device (the kernel does not
			// apply a mount's read-only flag to device files), and volctl makes that bind: the
			// alloc handed a "read-only" mount wrote the volume
			// (TestReadOnlyVolumeMountOfABlockVolumeIsNotWritable).
			d.errorf(a.Expr.Range(), "Read-only mount of a block device",
				"read_only = true here, but the volume %q is a block device claimed for writing: a read-only mount of a device file does not stop writes to the device, so this mount would not be read-only. "+
					"Set read_only = true in the volume block instead (a read claim, which the plugin must publish as a read-only device), or remove read_only here.", req.Name)
		}
		if bok && !m.ReadOnly && req != nil && req.ReadOnly {
			// The claim is a read, published read-only: the mount cannot write, whatever it says.
			d.warnf(a.Expr.Range(), "Volume mount cannot write",
				"read_only = false here, but the volume %q is requested read_only, so it is claimed to read and published read-only: this mount is read-only all the same. Set read_only = false in the volume block to claim it for writing, or read_only = true here to say what it is.", req.Name)
		}
	}
	if s, sok := d.str(attr("propagation_mode")); sok {
		valid := false
		for _, p := range propagationModes {
			valid = valid || s == p
		}
		if !valid {
			detail := fmt.Sprintf("%q is not a propagation mode.", shown(s))
			if sug := suggest(s, propagationModes); sug != "" {
				detail += fmt.Sprintf(" Did you mean %q?", sug)
			}
			d.errorf(attr("propagation_mode").Expr.Range(), "Invalid propagation mode", "%s Valid modes: %s.", detail, strings.Join(propagationModes, ", "))
		} else {
			m.PropagationMode = s
			if s == PropagationBidirectional && (m.ReadOnly || req != nil && req.ReadOnly) {
				which := "this volume_mount is read_only"
				if req != nil && req.ReadOnly {
					which = fmt.Sprintf("the volume %q is requested read_only", req.Name)
				}
				d.errorf(attr("propagation_mode").Expr.Range(), "Bidirectional propagation needs a read-write volume",
					"bidirectional propagation lets mounts made under the destination flow back to the host, which needs write access, but %s.", which)
			}
		}
	}
	return m, ok
}

// Linux's bounds on a path, which a destination is: a name (one component) of at most nameMax
// bytes, a path of at most pathMax.
const (
	nameMax = 255
	pathMax = 4095
)

// checkPathLength refuses destination dest when, its placeholders replaced for the group's last
// alloc (the longest index and name), a component or the whole is past what Linux can name:
// no such path can be made, and a claim bound there would fail at its bind, after its stage
// and publish.
func (d *decoder) checkPathLength(rng hcl.Range, dest, group string, count int) {
	last := max(count, 1) - 1
	full := strings.NewReplacer(PlaceholderIndex, strconv.Itoa(last), PlaceholderAlloc, AllocName(group, last)).Replace(dest)
	for _, c := range strings.Split(full, "/") {
		if len(c) > nameMax {
			d.errorf(rng, "Destination too long", "destination has a component of %d bytes (%q): a file name has at most %d bytes on Linux.", len(c), shown(c), nameMax)
			return
		}
	}
	if len(full) > pathMax {
		d.errorf(rng, "Destination too long", "destination is %d bytes long (for alloc %s): a path has at most %d bytes on Linux.", len(full), AllocName(group, last), pathMax)
	}
}
