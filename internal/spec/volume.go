package spec

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// hostOnly are the arguments and blocks of Nomad host volume specs. In a CSI spec they get a
// pointed message instead of a bare "unsupported".
var hostOnly = map[string]string{
	"node_id":    hostHint("node_id"),
	"host_path":  hostHint("host_path"),
	"node_pool":  hostHint("node_pool"),
	"constraint": hostHint("constraint"),
	"capacity":   hostHint("capacity") + ` For a CSI volume, use capacity_min and capacity_max.`,
}

func hostHint(name string) string {
	return fmt.Sprintf("%s belongs to Nomad host volume specs; volctl handles CSI volumes only.", name)
}

var volumeSchema = &schema{
	what: "a volume spec",
	attrs: []string{
		"id", "name", "type", "namespace", "plugin_id", "external_id", "snapshot_id", "clone_id",
		"capacity_min", "capacity_max", "access_mode", "attachment_mode",
	},
	blocks: []blockSchema{{name: "capability"}, {name: "mount_options"}, {name: "topology_request"}},
	maps:   []string{"secrets", "parameters", "context"},
	hints:  hostOnly,
}

var capabilitySchema = &schema{
	what:  "a capability block",
	attrs: []string{"access_mode", "attachment_mode"},
}

var mountOptionsSchema = &schema{
	what:  "a mount_options block",
	attrs: []string{"fs_type", "mount_flags"},
}

var topologyRequestSchema = &schema{
	what:   "a topology_request block",
	blocks: []blockSchema{{name: "required"}, {name: "preferred"}},
}

var topologyListSchema = &schema{
	what:   "a required or preferred block",
	blocks: []blockSchema{{name: "topology"}},
}

var topologySchema = &schema{
	what: "a topology block",
	maps: []string{"segments"},
}

// hostVolume reports whether body declares type = "host", and where. It looks at nothing else,
// so a host spec gets one clear message rather than one per host-only field.
func hostVolume(body hcl.Body) (hcl.Range, bool) {
	c, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type"}}})
	attr := c.Attributes["type"]
	if attr == nil {
		return hcl.Range{}, false
	}
	v, diags := value(attr.Expr)
	if diags.HasErrors() || v.IsNull() || !v.IsWhollyKnown() {
		return hcl.Range{}, false
	}
	s, ok := toString(v)
	return attr.Expr.Range(), ok && strings.ToLower(s) == "host" // as Nomad reads it
}

// apiNames are top-level keys only Nomad's HTTP API form of a volume has: the request body of
// PUT /v1/volume/csi/:id ({"Volumes": [...]}), a snapshot's ({"Volume": ...}), or what
// "nomad volume status -json" prints (CamelCase fields). None is a spec field or a near
// spelling of one.
var apiNames = []string{"Volumes", "Volume", "PluginID", "RequestedCapabilities", "ExternalID", "RequestedCapacityMin", "RequestedCapacityMax"}

// apiVolume reports whether body is a volume in Nomad's API form rather than its spec form,
// and where the first API key is. Decoded as a spec it would get one error per API key and
// one per spec field "missing", none saying what is wrong with the file.
func apiVolume(body hcl.Body) (hcl.Range, string, bool) {
	s := &hcl.BodySchema{}
	for _, n := range apiNames {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: n})
	}
	c, _, _ := body.PartialContent(s)
	var first *hcl.Attribute
	for _, a := range c.Attributes {
		if first == nil || a.NameRange.Start.Byte < first.NameRange.Start.Byte {
			first = a
		}
	}
	if first == nil {
		return hcl.Range{}, "", false
	}
	return first.NameRange, first.Name, true
}

func (d *decoder) volume(body hcl.Body, verb Verb) *Volume {
	if rng, ok := hostVolume(body); ok {
		d.errorf(rng, "Host volumes are not supported",
			`This is a Nomad host volume spec (type = "host"). volctl handles CSI volumes only (type = "csi"); host volumes are Nomad's own: use "nomad volume create" (or "nomad volume init -type host" for a template).`)
		return nil
	}
	if rng, name, ok := apiVolume(body); ok {
		d.errorf(rng, "Nomad API form, not a volume spec",
			`%s is a field of Nomad's HTTP API form of a volume (the {"Volumes": [...]} body the API takes, or "nomad volume status -json" output, with CamelCase fields), which neither "nomad volume register" nor volctl reads as a spec. `+
				`Write the volume spec form instead: snake_case fields (id, plugin_id, external_id, capacity_min) and capability blocks; "volctl init volume" writes an example.`, name)
		return nil
	}
	d.hcl1 = !d.json
	c := d.content(body, volumeSchema)

	v := &Volume{Namespace: DefaultNamespace}
	top := c.MissingItemRange
	attr := func(name string) *hcl.Attribute { return c.Attributes[name] }

	// idAttr reads an identifier into *dst, checked; a required one that is absent is missing.
	// check is checkNewID for the IDs the volume is known by, checkID for the plugin it names.
	idAttr := func(name, what string, dst *string, required bool, check func(hcl.Range, string, string, string) bool) {
		if s, ok := d.weakStr(attr(name)); ok {
			check(attr(name).Expr.Range(), what, "Invalid "+what, s)
			*dst = s
		} else if required && attr(name) == nil {
			d.missing(top, name, "")
		}
	}

	// Identity.
	idAttr("id", "volume ID", &v.ID, true, d.checkNewID)
	idAttr("namespace", "namespace", &v.Namespace, false, d.checkNamespace)
	if s, ok := d.str(attr("type")); ok {
		// Lower-cased, as Nomad reads it: "CSI" is registered (not "cſi", which folds to csi).
		v.Type = strings.ToLower(s)
		if v.Type != "csi" {
			d.errorf(attr("type").Expr.Range(), "Invalid volume type", "%q is not a volume type volctl handles: it manages CSI volumes, type = \"csi\".", s)
		}
	} else if attr("type") == nil {
		d.missing(top, "type", `The argument "type" is required; volctl handles CSI volumes: type = "csi".`)
	}
	idAttr("plugin_id", "plugin ID", &v.PluginID, true, d.checkID)
	if s, ok := d.weakStr(attr("name")); ok {
		d.checkCSIString("name", s, attr("name").Expr.Range())
		v.Name = s
	}
	if v.Name == "" && verb == VerbCreate && (attr("name") == nil || d.ok(attr("name"))) {
		rng := top
		if a := attr("name"); a != nil {
			rng = a.Expr.Range()
		}
		d.missing(rng, "name", "name is required to create a volume (the plugin uses it as the volume's name and to make creation idempotent).")
	}

	// Register and create differ in what they take.
	if s, ok := d.weakStr(attr("external_id")); ok {
		d.checkPluginID("external_id", s, attr("external_id").Expr.Range())
		v.ExternalID = s
	}
	switch {
	case verb == VerbRegister && v.ExternalID == "" && (attr("external_id") == nil || d.ok(attr("external_id"))):
		rng := top
		if a := attr("external_id"); a != nil {
			rng = a.Expr.Range()
		}
		d.missing(rng, "external_id", "external_id is required to register a volume (it is the storage provider's ID of the existing volume).")
	case verb == VerbCreate && attr("external_id") != nil:
		d.errorf(attr("external_id").NameRange, "Argument not allowed for create",
			"external_id is only used to register an existing volume; when creating a volume the plugin assigns its ID. Remove external_id, or register the volume instead.")
	}
	for _, name := range []string{"snapshot_id", "clone_id"} {
		a := attr(name)
		s, ok := d.weakStr(a)
		if !ok {
			continue
		}
		d.checkPluginID(name, s, a.Expr.Range())
		if verb == VerbRegister {
			d.errorf(a.NameRange, "Argument not allowed for register",
				"%s is only used to create a volume; a registered volume already exists. Remove %s, or create the volume instead.", name, name)
		}
		if name == "snapshot_id" {
			v.SnapshotID = s
		} else {
			v.CloneID = s
		}
	}
	if attr("snapshot_id") != nil && attr("clone_id") != nil {
		d.errorf(attr("clone_id").NameRange, "Conflicting arguments",
			"snapshot_id and clone_id are mutually exclusive: a volume is created either from a snapshot or as a clone of another volume, not both.")
	}

	// Capacity.
	v.CapacityMin = d.size(attr("capacity_min"))
	v.CapacityMax = d.size(attr("capacity_max"))
	if v.CapacityMin > 0 && v.CapacityMax > 0 && v.CapacityMin > v.CapacityMax {
		d.errorf(attr("capacity_min").Expr.Range(), "Invalid capacity range",
			"capacity_min (%s) is larger than capacity_max (%s).", FormatSize(v.CapacityMin), FormatSize(v.CapacityMax))
	}

	// Capabilities: blocks, or the legacy flat pair.
	for _, b := range blocksOf(c, "capability") {
		bc := d.content(b.Body, capabilitySchema)
		capability, ok := d.capability(bc, d.at(b))
		if ok {
			v.Capabilities = d.addCapability(v.Capabilities, capability, d.at(b))
		}
	}
	flatMode, flatAttach := attr("access_mode"), attr("attachment_mode")
	if flatMode != nil || flatAttach != nil {
		if len(blocksOf(c, "capability")) > 0 {
			first := flatMode
			if first == nil {
				first = flatAttach
			}
			d.errorf(first.NameRange, "Conflicting arguments",
				"access_mode and attachment_mode at the top level are the legacy form of one capability block; they cannot be combined with capability blocks. Move them into a capability block.")
		} else if capability, ok := d.capability(c, top); ok {
			v.Capabilities = append(v.Capabilities, capability)
		}
	} else if len(blocksOf(c, "capability")) == 0 {
		d.errorf(top, "Missing capability",
			`A volume needs at least one capability block, e.g. capability { access_mode = "single-node-writer" attachment_mode = "file-system" }.`)
	}

	var flagsAt *hcl.Range // where the mount flags are, for checkSecretsInNames
	if b := d.single(c, "mount_options", "a volume spec"); b != nil {
		v.MountOptions = d.mountOptions(b, writableBy(v.Capabilities))
		flagsAt = &b.DefRange
	}
	if b := d.single(c, "topology_request", "a volume spec"); b != nil {
		v.TopologyRequest = d.topologyRequest(b, verb)
	}

	// Maps.
	m := d.nomadMap(c, "secrets")
	if m != nil {
		d.checkSecrets(m)
		v.Secrets = Secrets(m.values())
	}
	var flags []string
	if v.MountOptions != nil {
		flags = v.MountOptions.MountFlags
	}
	d.checkSecretsInNames(m, flags, flagsAt, [][2]string{{"ID", v.ID}, {"name", v.Name}, {"namespace", v.Namespace}, {"plugin ID", v.PluginID}, {"external ID", v.ExternalID}})
	if m := d.nomadMap(c, "parameters"); m != nil {
		d.checkCSIMap(m)
		v.Parameters = m.values()
	}
	if m := d.stringMapOf(c, "context", maxPluginMapEntries, d.weakString); m != nil {
		d.checkContext(m)
		v.Context = m.values()
		if verb == VerbCreate {
			d.errorf(m.nameRange, "Argument not allowed for create",
				"context is only used to register an existing volume; when a volume is created, the plugin returns its context. Remove context, or register the volume instead.")
		}
	}
	return v
}

// ok reports whether attr evaluates without error, so that a missing-value message is not
// added on top of an evaluation error.
func (d *decoder) ok(attr *hcl.Attribute) bool {
	_, diags := d.eval(attr.Expr)
	return !diags.HasErrors()
}

// size reads capacity_min or capacity_max. An empty string is unset, as Nomad reads it (a
// template whose size variable is empty writes capacity_max = ""); blanks are not. A number is
// read as Nomad reads it: its text as written, as a size (humanize.ParseBytes), which has no
// 0x and no exponent; a fraction of a byte is dropped, so a capacity under 1 byte is unset,
// as in Nomad, with a warning.
func (d *decoder) size(attr *hcl.Attribute) int64 {
	if attr != nil && d.sizeBeyond(attr) {
		return 0
	}
	s, ok := d.str(attr)
	if !ok || s == "" {
		return 0
	}
	if !d.capacityText(attr, s) { // JSON too: Nomad reads its token's text, escapes and all
		return 0
	}
	if t, ok := d.numberLiteral(attr.Expr); ok {
		switch {
		case hexNumber(t):
			d.errorf(attr.Expr.Range(), "Invalid capacity", "%s: Nomad reads a capacity as a size, in decimal, and refuses %q; write %s (bytes) or a size such as \"10GiB\".", attr.Name, t, s)
			return 0
		case strings.ContainsAny(t, "eE"):
			d.errorf(attr.Expr.Range(), "Invalid capacity", "%s: Nomad reads a capacity as a size, which has no exponent, and refuses %q; write %s (bytes) or a size such as \"10GiB\".", attr.Name, t, s)
			return 0
		}
		s = t // 010 is 10 bytes there, not 8
	}
	n, err := ParseSize(s)
	if err != nil {
		d.errorf(attr.Expr.Range(), "Invalid capacity", "%s: %s.", attr.Name, err)
		return 0
	}
	nomad, ok := nomadSize(s)
	if !ok {
		// A size just below 2^63 bytes whose float64 rounds up to 2^63: Nomad's CLI wraps it to
		// a negative capacity, as it wraps one above 8 EiB, which is refused (ParseSize).
		d.errorf(attr.Expr.Range(), "Invalid capacity", "%s: Nomad reads %q as 2^63 bytes or more (it multiplies the number by the unit in floating point), past the largest capacity, and wraps it to a negative number. "+
			"Write a size below it, at most %q (bytes), which both read alike.", attr.Name, s, strconv.FormatInt(MaxNomadSize, 10))
		return 0
	}
	if nomad != n {
		// Nomad multiplies in floating point. volctl keeps the exact bytes written (a volume
		// made or registered from the file before keeps its size: a reading that moved would
		// refuse the same file again as a shrink, and `volume expand --size` reads the same
		// text exactly), and says how to write a size both read alike.
		advice := "no form of it reads alike in both (Nomad holds only some sizes past 2^53 bytes)"
		if f := FormatSize(n); func() bool { m, ok := nomadSize(f); return ok && m == n }() {
			advice = fmt.Sprintf("write %q, which both read as %d bytes", f, n)
		}
		d.warnf(attr.Expr.Range(), "Capacity Nomad reads otherwise", "%s: volctl reads %q as %d bytes, Nomad as %d (it multiplies the number by the unit in floating point and truncates), so `nomad volume create` of this file would ask the plugin for other bytes; %s.", attr.Name, s, n, nomad, advice)
	}
	if n == 0 && strings.ContainsAny(s, "123456789") {
		d.warnf(attr.Expr.Range(), "Capacity under 1 byte", "%s is %q, under 1 byte: a fraction of a byte is dropped, as Nomad drops it, and a capacity of 0 is unset (no %s). Write a size such as \"512MiB\", or remove %s.", attr.Name, s, strings.TrimPrefix(attr.Name, "capacity_")+"imum", attr.Name)
	}
	return n
}

// sizeBeyond refuses a capacity written as a number that no size holds, negative or past the
// largest (-5e3, 1e30, 10^30, 0x1000000000000000000), saying so: rewritten in any other form
// it is refused as well, so the error does not say how to write it otherwise, as it did (1e30:
// "write 1000000000000000000000000000000 (bytes)"; 10^30 in HCL1: "write it as a string, in
// quotes"), each then refused as too large (TestValueProblemsSayWhatToWrite).
func (d *decoder) sizeBeyond(attr *hcl.Attribute) bool {
	t, ok := d.numberLiteral(attr.Expr)
	if !ok {
		return false
	}
	v, diags := d.eval(attr.Expr)
	if diags.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return false
	}
	bf := v.AsBigFloat()
	switch {
	case bf.Sign() < 0:
		d.errorf(attr.Expr.Range(), "Invalid capacity", "%s: size %q is negative.", attr.Name, t)
	case bf.Cmp(new(big.Float).SetInt64(math.MaxInt64)) > 0:
		d.errorf(attr.Expr.Range(), "Invalid capacity", "%s: size %q is too large (the maximum is %d bytes).", attr.Name, t, int64(math.MaxInt64))
	default:
		return false
	}
	return true
}

// capacityText reports whether Nomad reads the text of a capacity as volctl reads its value
// s, and refuses it otherwise. Nomad parses a capacity's token as written, its quotes
// trimmed (parseCapacityBytes in command/volume_register_csi.go), as a size that starts with
// its digits: a heredoc's text starts with "<<", an escape stays an escape, and a blank before
// the digits leaves none (TestCapacityTextAsNomadReadsIt). So in a JSON spec, where it reads the
// JSON string token's text, escapes and all: an escape there is in the source range's bytes
// as in HCL (TestJSONCapacityTextIsReadAsNomadReadsIt).
func (d *decoder) capacityText(attr *hcl.Attribute, s string) bool {
	rng := attr.Expr.Range()
	if d.src == nil || rng.End.Byte > len(d.src) || rng.Start.Byte >= rng.End.Byte {
		return true
	}
	raw := string(d.src[rng.Start.Byte:rng.End.Byte])
	switch {
	case strings.HasPrefix(raw, "<<"):
		d.errorf(rng, "Invalid capacity", "%s: Nomad reads a capacity's text as written, and the text of a heredoc starts with <<, which is no size: it refuses the file. Write the size in quotes (\"10GiB\") or as a number of bytes.", attr.Name)
		return false
	case !strings.HasPrefix(raw, `"`):
		return true // a number: size reads its text as written
	case strings.Trim(raw, `"`) != s && !strings.Contains(raw, `\`):
		// No escape: HCL2 read the text in Unicode normal form C (the Kelvin sign as K), and
		// Nomad reads it as written. The same size both ways is read (Nomad lower-cases the
		// unit, the Kelvin sign to k); before, it was refused as holding escapes it has none of
		// (TestKelvinSignCapacityErrorDoesNotMisstateNomad).
		written := strings.Trim(raw, `"`)
		if a, err := ParseSize(written); err == nil {
			if b, err := ParseSize(s); err == nil && a == b {
				return true
			}
		}
		d.errorf(rng, "Invalid capacity", "%s: Nomad reads a capacity's text as written, and does not read %s as the size %q, which volctl reads it as (in Unicode normal form C). Write the size in ASCII: digits and a unit (\"10GiB\").", attr.Name, raw, s)
		return false
	case strings.Trim(raw, `"`) != s:
		d.errorf(rng, "Invalid capacity", "%s: Nomad reads a capacity's text as written, escapes and all, and refuses %s. %s", attr.Name, raw, unescapedSize(s))
		return false
	case strings.TrimSpace(s) != "" && strings.TrimLeftFunc(s, unicode.IsSpace) != s:
		d.errorf(rng, "Invalid capacity", "%s: Nomad reads a size from the digits it starts with, and refuses one that starts with a blank. Write %q.", attr.Name, strings.TrimSpace(s))
		return false
	}
	return true
}

// unescapedSize advises how to write the capacity s, read from a string with escapes, so that
// Nomad reads it: s itself, when a character of it needs no escape in quotes ("\u0030" for 0);
// else s without the characters only an escape writes (a tab, a newline, a quote, a
// backslash, a control character), when what is left is a size: advising s quoted would
// repeat the escape the user wrote.
func unescapedSize(s string) string {
	needsEscape := func(r rune) bool { return r == '"' || r == '\\' || !strconv.IsPrint(r) }
	if !strings.ContainsFunc(s, needsEscape) {
		return fmt.Sprintf("Write the size without escapes: %q.", s)
	}
	if left := strings.Map(func(r rune) rune {
		if needsEscape(r) {
			return -1
		}
		return r
	}, s); strings.TrimSpace(left) == left {
		if _, err := ParseSize(left); err == nil {
			return fmt.Sprintf("Write the size without escapes: %q.", left)
		}
	}
	i := strings.IndexFunc(s, needsEscape)
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Sprintf("Its text holds %s, which only an escape writes; write the size as digits and a unit (\"10GiB\") or a number of bytes.", strconv.Quote(string(r)))
}

// capability decodes access_mode and attachment_mode from c (a capability block, or the top
// of a legacy spec); rng is where to point when one is missing.
func (d *decoder) capability(c *hcl.BodyContent, rng hcl.Range) (Capability, bool) {
	var out Capability
	ok := true
	if a := c.Attributes["access_mode"]; a != nil {
		out.AccessMode, ok = d.accessMode(a)
	} else {
		d.missing(rng, "access_mode", "")
		ok = false
	}
	if a := c.Attributes["attachment_mode"]; a != nil {
		var aok bool
		out.AttachmentMode, aok = d.attachmentMode(a)
		ok = ok && aok
	} else {
		d.missing(rng, "attachment_mode", "")
		ok = false
	}
	return out, ok
}

func (d *decoder) addCapability(caps []Capability, c Capability, rng hcl.Range) []Capability {
	for _, have := range caps {
		if have == c {
			d.warnf(rng, "Duplicate capability", "The capability (%s, %s) is listed more than once.", c.AccessMode, c.AttachmentMode)
			return caps
		}
	}
	return append(caps, c)
}

// legacyReader is the spelling of single-node-reader-only that Nomad's own volume template and
// EFS examples use.
const legacyReader = "single-node-reader"

func (d *decoder) accessMode(attr *hcl.Attribute) (AccessMode, bool) {
	s, ok := d.str(attr)
	if !ok {
		return "", false
	}
	m := AccessMode(s)
	switch {
	case m.Valid():
		return m, true
	case s == legacyReader:
		d.warnf(attr.Expr.Range(), "Deprecated access mode",
			"%q is an old spelling of %q; volctl reads it as %q. Write %q to silence this warning.", s, SingleNodeReaderOnly, SingleNodeReaderOnly, SingleNodeReaderOnly)
		return SingleNodeReaderOnly, true
	}
	invalidMode(d, attr.Expr.Range(), "Invalid access mode", "an access mode", s, AccessModes)
	return "", false
}

func (d *decoder) attachmentMode(attr *hcl.Attribute) (AttachmentMode, bool) {
	s, ok := d.str(attr)
	if !ok {
		return "", false
	}
	m := AttachmentMode(s)
	if m.Valid() {
		return m, true
	}
	invalidMode(d, attr.Expr.Range(), "Invalid attachment mode", "an attachment mode", s, AttachmentModes)
	return "", false
}

// invalidMode reports s, which is not a mode (what: "an access mode"), with the nearest valid
// one as a suggestion and every valid one listed.
func invalidMode[M ~string](d *decoder, rng hcl.Range, summary, what, s string, modes []M) {
	detail := fmt.Sprintf("%q is not %s.", shown(s), what)
	if sug := suggest(s, joinable(modes)); sug != "" {
		detail += fmt.Sprintf(" Did you mean %q?", sug)
	}
	d.errorf(rng, summary, "%s Valid modes: %s.", detail, joinStrings(modes))
}

// writableBy says which of caps lets a claim write the volume ("" when none does), as the
// read-only mount flag's warning names it (mountOptions).
func writableBy(caps []Capability) string {
	for _, c := range caps {
		if !c.AccessMode.ReaderOnly() {
			return fmt.Sprintf("its capability %s lets claims write it", c.AccessMode)
		}
	}
	return ""
}

// mountOptions reads a mount_options block. writable, when not "", says how the volume may be
// claimed for writing: a mount flag "ro" then mounts a write claim read-only, which is warned of.
func (d *decoder) mountOptions(b *hcl.Block, writable string) *MountOptions {
	c := d.content(b.Body, mountOptionsSchema)
	out := &MountOptions{}
	if s, ok := d.literalStr(c.Attributes["fs_type"]); ok {
		d.checkCSIString("fs_type", s, c.Attributes["fs_type"].Expr.Range())
		out.FSType = s
	}
	if attr := c.Attributes["mount_flags"]; attr != nil {
		// Counted before they are evaluated: 340,000 numbers took 13 s to make strings of.
		if items, diags := hcl.ExprList(attr.Expr); !diags.HasErrors() && len(items) > maxMountFlags {
			d.errorf(attr.Expr.Range(), "Value too long", "mount_flags holds %d flags; the CSI spec limits them to %d bytes (4 KiB) in total, "+
				"at most %d flags of a byte or more. Pass the plugin fewer.", len(items), MaxCSIMountOpts, maxMountFlags)
			return out
		}
	}
	if flags, ok := d.strList(c.Attributes["mount_flags"]); ok {
		d.literalStrings(c.Attributes["mount_flags"].Expr, flags) // numbers as written, as Nomad reads them
		// Mount flags may carry credentials: report sizes, never the flags themselves.
		total := 0
		for _, f := range flags {
			total += len(f)
		}
		if total > MaxCSIMountOpts {
			d.errorf(c.Attributes["mount_flags"].Expr.Range(), "Value too long",
				"mount_flags hold %d bytes; the CSI spec limits them to %d bytes (4 KiB) in total.", total, MaxCSIMountOpts)
		}
		if slices.ContainsFunc(flags, func(f string) bool { return IsPlaceholder(f) || PlaceholderSpelling(f) }) {
			rngs := mountFlagRanges(c.Attributes["mount_flags"].Expr, len(flags))
			for i, f := range flags {
				d.checkPlaceholder(rngs[i], f, PlaceholderWhat("", i), "a mount flag")
			}
		}
		// mount(8)'s "ro" mounts read-only whatever the claim: a write claim is admitted as the
		// volume's writer (keeping other writers out) and handed a mount it cannot write. Only
		// the flag's place is shown: mount flags are masked in diagnostics, as they may carry
		// credentials (a word as short as this one too, wherever it stands).
		if i := ReadOnlyFlag(flags); i >= 0 && writable != "" {
			d.warnf(mountFlagRanges(c.Attributes["mount_flags"].Expr, len(flags))[i], "Read-only mount flag",
				"This mount flag mounts the volume read-only for every claim, though %s: an alloc that claims it to write "+
					"gets a mount it cannot write, and holds the volume as its writer all the same. Remove the flag, and claim for reading where reading is meant "+
					"(volume claim --read-only; read_only = true in a group's volume block).", writable)
		}
		out.MountFlags = MountFlags(flags)
	}
	return out
}

// ReadOnlyFlag is the index of the first of flags that mounts read-only: "ro", with blanks
// around it or not, as volctl's plugin trims each flag before it mounts, alone or among others
// joined by commas ("noatime,ro"), as mount(8) reads the -o a plugin joins its flags into and
// volctl's plugin splits them; -1 when none does. Before, only "ro" itself was seen: " ro"
// (TestPaddedReadOnlyMountFlagIsWarnedOf) and "noatime,ro" (TestCommaJoinedReadOnlyFlagIsRead)
// mounted a writable volume read-only unwarned, and a write claim asking for it so was refused.
//
// Of "ro" and "rw", the last one given wins, as with mount(8) and volctl's plugin: "ro,rw" (or
// "ro" then "rw") mounts read-write, and is none.
func ReadOnlyFlag(flags []string) int {
	last := -1
	for i, f := range flags {
		for w := range strings.SplitSeq(f, ",") {
			switch strings.TrimSpace(w) {
			case "ro":
				last = i
			case "rw":
				last = -1
			}
		}
	}
	return last
}

// mountFlagRanges are the source ranges of the n mount flags expr lists: each its item's, or
// expr's own when it is not a list of n items written out.
func mountFlagRanges(expr hcl.Expression, n int) []hcl.Range {
	out := make([]hcl.Range, n)
	items, diags := hcl.ExprList(expr)
	for i := range out {
		out[i] = expr.Range()
		if !diags.HasErrors() && len(items) == n {
			out[i] = items[i].Range()
		}
	}
	return out
}

func (d *decoder) topologyRequest(b *hcl.Block, verb Verb) *TopologyRequest {
	c := d.content(b.Body, topologyRequestSchema)
	out := &TopologyRequest{}
	if rb := d.single(c, "required", "a topology_request block"); rb != nil {
		d.jsonList(rb)
		out.Required = d.topologies(rb, verb)
	}
	if pb := d.single(c, "preferred", "a topology_request block"); pb != nil {
		d.jsonList(pb)
		out.Preferred = d.topologies(pb, verb)
		if verb == VerbRegister {
			d.errorf(pb.TypeRange, "Block not allowed for register",
				"topology_request.preferred is only used to create a volume (it guides where the plugin provisions it); a registered volume already exists. Remove the preferred block, or create the volume instead.")
		} else if len(out.Required) > 0 {
			// The CSI spec: with a requisite list, every preferred topology MUST be in it. One
			// that lies within none of the required ones (nor they within it: Nomad's own
			// example prefers {rack=R1, zone=us-east-1a} of a required {rack=R1}) conflicts with
			// them: sent anyway, volctl's own plugin refused it, and one honouring preferred
			// made the volume outside the requisite, which volctl deleted, blaming the plugin
			// (TestCreatePreferringATopologyOutsideItsRequiredIsRefusedBeforeThePlugin).
			for _, p := range out.Preferred {
				if !slices.ContainsFunc(out.Required, func(r Topology) bool {
					return SegmentsWithin(r.Segments, p.Segments) || SegmentsWithin(p.Segments, r.Segments)
				}) {
					d.errorf(pb.TypeRange, "Preferred topology not required",
						"The preferred topology %s is not one of the required ones, nor within one: a plugin is sent the preferred topologies to choose among the required, and the CSI spec has every one of them among those. Add it to required, or remove it from preferred.",
						braced(p))
				}
			}
		}
	}
	return out
}

// SegmentsWithin reports whether every segment of a is in b with the same value: a topology
// {zone=a} lies within {zone=a, rack=1}. The one definition (admission's match, CreateVolume's
// requisite check, a spec's preferred topologies). Keys compare without case, as the CSI spec
// has topology keys ("Keys MUST be case-insensitive"); values as they are. A plugin spelling
// its key "Zone" had its answer {Zone=a} to a requisite {zone=a} refused and the volume
// deleted, and kept, it was never claimable on its node in {zone=a}
// (TestCreateAnsweredWithTheRequisiteTopologyKeyInAnotherCaseIsKept,
// TestCreateKeptForAFoldedTopologyKeyIsClaimableOnTheNodeInIt).
func SegmentsWithin(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; ok {
			if w != v {
				return false
			}
			continue
		}
		found := false
		for bk, bv := range b {
			if strings.EqualFold(k, bk) && bv == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// braced is topology t as a diagnostic names it: "{rack=r2, zone=a}", its keys sorted and each
// key and value as shown shows a spec's value.
func braced(t Topology) string {
	parts := make([]string, 0, len(t.Segments))
	for _, k := range slices.Sorted(maps.Keys(t.Segments)) {
		parts = append(parts, fmt.Sprintf("%q=%q", shown(k), shown(t.Segments[k])))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// jsonList refuses a JSON spec's required or preferred written as one object: Nomad's HCL1
// JSON reader flattens the object into the keys of topology_request, and its CLI, which
// decodes topology_request into lists of maps, finds no list there and sends no topology at
// all ("required": {"topology": [...]} is dropped, "required": [{"topology": ...}] read: checked
// with Nomad v2.0.6-dev, TestJSONTopologyAsNomadReadsIt). volctl would send a topology Nomad
// drops.
func (d *decoder) jsonList(b *hcl.Block) {
	if !d.json || d.src == nil {
		return
	}
	rest := d.src[min(b.TypeRange.End.Byte, len(d.src)):]
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if !bytes.HasPrefix(rest, []byte(":")) {
		return
	}
	if rest = bytes.TrimLeft(rest[1:], " \t\r\n"); !bytes.HasPrefix(rest, []byte("{")) {
		return
	}
	d.errorf(b.TypeRange, "Topology Nomad drops",
		"In a JSON spec, Nomad reads %s only as a list of objects; written as one object, it is dropped and Nomad sends no topology. Write it as a list: \"%s\": [{\"topology\": [{\"segments\": {...}}]}].", b.Type, b.Type)
}

// topologies reads a topology_request's required or preferred: of a register spec (verb), a
// volume's accessible topology as its plugin answered it, held to what volctl takes from a
// plugin (checkPluginSegments), else the CSI spec's rules (checkSegments).
func (d *decoder) topologies(b *hcl.Block, verb Verb) []Topology {
	c := d.content(b.Body, topologyListSchema)
	var out []Topology
	for _, tb := range blocksOf(c, "topology") {
		tc := d.content(tb.Body, topologySchema)
		limit := maxCSIMapEntries
		if verb == VerbRegister {
			limit = maxPluginMapEntries
		}
		m := d.literalMap(tc, "segments", limit)
		if m != nil && m.refused {
			continue // the error says what is wrong with them, and they are there
		}
		if m == nil || len(m.entries) == 0 {
			rng := d.at(tb)
			if m != nil {
				rng = m.nameRange
			}
			d.errorf(rng, "Missing topology segments",
				`Each topology needs at least one segment, e.g. topology { segments { rack = "R1" } }.`)
			continue
		}
		if verb == VerbRegister {
			d.checkPluginSegments(m)
		} else {
			d.checkSegments(m)
		}
		out = append(out, Topology{Segments: m.values()})
	}
	return out
}

func joinable[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
