package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// CSI size limits. The CSI spec ("Field Requirements" > "Size Limits") says: a string field
// SHALL NOT exceed 128 bytes and a map<string, string> field 4 KiB, unless the field's own
// description overrides that; mount_flags (a repeated string) is overridden to 4 KiB in total.
// The spec limits a map as a whole, not each key or value, so long map values (a certificate in
// secrets, say) are fine as long as the whole map fits: volctl checks the total of keys and
// values. Topology segments carry their own, stricter rules (see checkSegments).
const (
	MaxCSIString    = 128
	MaxCSIMap       = 4 << 10
	MaxCSIMountOpts = 4 << 10
	maxSegmentPart  = 63

	// maxCSIMapEntries is the most entries a map within MaxCSIMap can hold: one empty key,
	// the others a byte each. A map of more is refused before its values are evaluated
	// (HCL's numbers are slow to make strings of: a spec of 200,000 took seconds).
	maxCSIMapEntries = MaxCSIMap + 1
	// maxMountFlags is the most mount flags MaxCSIMountOpts holds, a byte each.
	maxMountFlags = MaxCSIMountOpts

	// MaxPluginString and MaxPluginMap bound what volctl takes from a plugin past the CSI
	// spec's bounds (a string, a map), four times them: a volume_context a plugin's CreateVolume
	// answers with, a topology segment's key and value and a topology's segments it or
	// NodeGetInfo answers with, GetPluginInfo's manifest (csi refuses each past them). A register
	// spec's context and topology_request.required are the plugin's too, copied from what it
	// answered (`volctl export nomad` writes them so), and are held to the same bounds
	// (checkContext, checkPluginSegments): past the CSI spec's a warning, past these an error.
	// Before, a register spec was held to the CSI spec's, and the export of a volume whose
	// plugin answered more failed its own check of the spec it wrote.
	MaxPluginString = 4 * MaxCSIString
	MaxPluginMap    = 4 * MaxCSIMap
	// maxPluginMapEntries is maxCSIMapEntries of a map a plugin made.
	maxPluginMapEntries = MaxPluginMap + 1
)

// checkCSIString applies the general CSI string rules to a field sent to plugins: at most 128
// bytes, and (as the spec says of CreateVolume's name) no control characters other than the
// common whitespace ones.
func (d *decoder) checkCSIString(field, value string, rng hcl.Range) {
	if len(value) > MaxCSIString {
		d.errorf(rng, "Value too long", "%s is %d bytes long; the CSI spec limits string fields to %d bytes.", field, len(value), MaxCSIString)
	}
	d.checkControl(field, value, rng)
}

// checkPluginID applies checkCSIString's rules to an ID a plugin made (a volume's external_id,
// a snapshot_id, a clone_id): past 128 bytes is a warning, not an error. Plugins exceed the
// spec's limit (Azure's disk IDs are resource paths of 150 bytes and more), volctl stores and
// sends back what they answered, and `volctl export` writes it: a spec refusing it could not
// register again a volume volctl itself created.
func (d *decoder) checkPluginID(field, value string, rng hcl.Range) {
	if len(value) > MaxCSIString {
		d.warnf(rng, "Value longer than the CSI spec allows", "%s is %d bytes long, past the %d bytes the CSI spec allows a string field; it is the plugin's own ID, which some plugins make longer, so volctl sends it back as it is.", field, len(value), MaxCSIString)
	}
	d.checkControl(field, value, rng)
}

// checkControl refuses control characters other than the common whitespace ones.
func (d *decoder) checkControl(field, value string, rng hcl.Range) {
	if r, ok := ControlIn(value); ok {
		d.errorf(rng, "Invalid character", "%s contains the control character %U, which the CSI spec does not allow.", field, r)
	}
}

// ControlIn returns the first control character of s a spec's string may not hold (checkControl:
// C0 but tab, newline and carriage return, DEL, C1), and whether there is one. csi refuses a
// plugin's ID holding one, which no spec could name.
func ControlIn(s string) (rune, bool) {
	for _, r := range s {
		if r <= 0x1f && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r <= 0x9f {
			return r, true
		}
	}
	return 0, false
}

// checkCSIMap applies the CSI limit on a whole map: keys and values together at most 4 KiB.
func (d *decoder) checkCSIMap(m *stringMap) {
	if m == nil {
		return
	}
	if total := m.size(); total > MaxCSIMap {
		d.errorf(m.nameRange, "Map too large", "%s holds %d bytes of keys and values; the CSI spec limits a map to %d bytes (4 KiB).", m.name, total, MaxCSIMap)
	}
}

// checkContext applies MaxPluginMap to a register spec's context: past the CSI spec's
// 4 KiB a warning, past MaxPluginMap an error.
func (d *decoder) checkContext(m *stringMap) {
	if m == nil {
		return
	}
	for _, e := range m.entries {
		if IsPlaceholder(e.value) {
			// The context is the plugin's: one may answer the placeholder itself (a plugin
			// that redacts what it echoes), and the volume is then recorded with it, so it is
			// a warning, not a refusal (`volctl export nomad --include-secrets` writes it).
			d.warnf(e.valueRange, PlaceholderSummary, "The value of context %q is %s, the placeholder volctl export nomad writes without --include-secrets "+
				"for a context value that holds a secret (its plugin echoed one there): if it stands for one, write the real value here, or export the volume "+
				"again with --include-secrets; if the plugin itself gave this value, it is read as written.", e.key, Redacted)
		}
	}
	switch total := m.size(); {
	case total > MaxPluginMap:
		d.errorf(m.nameRange, "Map too large", "%s holds %d bytes of keys and values; volctl takes a volume's context of up to %d bytes (16 KiB), "+
			"the most it takes from a plugin's CreateVolume (the CSI spec limits a map to %d bytes).", m.name, total, MaxPluginMap, MaxCSIMap)
	case total > MaxCSIMap:
		d.warnf(m.nameRange, "Map larger than the CSI spec allows", "%s holds %d bytes of keys and values, past the %d bytes (4 KiB) the CSI spec allows a map; "+
			"it is the plugin's own context, which some plugins make larger, so volctl sends it back as it is (it takes up to %d bytes).", m.name, total, MaxCSIMap, MaxPluginMap)
	}
}

// checkPluginSegments is checkSegments for a register spec's topology_request.required: the
// accessible topology of an existing volume, as its plugin answered it, which the CSI spec's
// rules on a segment (checkSegments) a plugin may break and volctl takes (matching it as it
// is): past them a warning, past MaxPluginString a key or value and MaxPluginMap the segments,
// the bounds volctl takes a plugin's topology to, an error.
func (d *decoder) checkPluginSegments(m *stringMap) {
	const own = "it is the volume's accessible topology as its plugin answered it, which volctl matches as it is"
	seen := map[string]string{}
	for _, e := range m.entries {
		switch {
		case len(e.key) > MaxPluginString:
			d.errorf(e.keyRange, "Invalid topology segment", "Segment key %q is %d bytes long; volctl takes a plugin's topology segment of up to %d bytes.", Cut(e.key, 64), len(e.key), MaxPluginString)
		case len(e.value) > MaxPluginString:
			d.errorf(e.valueRange, "Invalid topology segment", "Segment value %q (for %q) is %d bytes long; volctl takes a plugin's topology segment of up to %d bytes.", Cut(e.value, 64), Cut(e.key, 64), len(e.value), MaxPluginString)
		default:
			if why := segmentKeyProblem(e.key); why != "" {
				d.warnf(e.keyRange, "Topology segment the CSI spec does not allow", "Segment key %q is not one the CSI spec allows: %s; %s.", e.key, why, own)
			}
			if why := segmentNameProblem(e.value); why != "" {
				d.warnf(e.valueRange, "Topology segment the CSI spec does not allow", "Segment value %q (for %q) is not one the CSI spec allows: it %s; %s.", e.value, e.key, why, own)
			}
		}
		if prev, ok := seen[strings.ToLower(e.key)]; ok {
			d.warnf(e.keyRange, "Topology segment the CSI spec does not allow", "Segment keys %q and %q differ only in case, which the CSI spec does not allow (its topology keys are case-insensitive); %s.", Cut(prev, 64), Cut(e.key, 64), own)
		}
		seen[strings.ToLower(e.key)] = e.key
	}
	switch total := m.size(); {
	case total > MaxPluginMap:
		d.errorf(m.nameRange, "Map too large", "%s holds %d bytes of keys and values; volctl takes a plugin's topology of up to %d bytes (16 KiB).", m.name, total, MaxPluginMap)
	case total > MaxCSIMap:
		d.warnf(m.nameRange, "Map larger than the CSI spec allows", "%s holds %d bytes of keys and values, past the %d bytes (4 KiB) the CSI spec allows a map; %s.", m.name, total, MaxCSIMap, own)
	}
}

// size is a map's keys and values in bytes, as the CSI spec measures a map.
func (m *stringMap) size() int {
	n := 0
	for _, e := range m.entries {
		n += len(e.key) + len(e.value)
	}
	return n
}

// validSecretKey applies the CSI secrets rule: letters, digits, '-', '_' or '.'.
func validSecretKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MinScrubLen is the shortest secret value or mount flag volctl scrubs from a plugin's
// messages wherever it is (csi's scrub, which says why; a shorter secret only where it stands
// as a word); a spec's shorter secret gets a warning.
const MinScrubLen = 3

// MinFoldLen is the shortest secret value or mount flag volctl scrubs in any case of its ASCII
// letters (csi's scrub, the Nomad client's answers): a token or a password a person chose to be
// one, whose letters are the secret to whoever reads them upper- or lower-cased, not a word
// ("Volume", "ext4-fs") an honest message holds in another case than a short value's.
const MinFoldLen = 8

// checkSecrets validates secret keys and warns of values too short to scrub. Values are
// never printed.
func (d *decoder) checkSecrets(m *stringMap) {
	if m == nil {
		return
	}
	for _, e := range m.entries {
		if !validSecretKey(e.key) {
			d.errorf(e.keyRange, "Invalid secret key", "Secret key %q is not valid: the CSI spec allows only letters, digits, \"-\", \"_\" and \".\" in secret keys.", e.key)
		}
		if IsPlaceholder(e.value) || PlaceholderSpelling(e.value) { // the name is made only then
			d.checkPlaceholder(e.valueRange, e.value, PlaceholderWhat(e.key, 0), "a secret value")
		}
		if n := len(e.value); n > 0 && n < MinScrubLen {
			d.warnf(e.valueRange, "Secret too short to scrub", "The value of secret %q is %d bytes long. volctl never prints it from its own records, and "+
				"scrubs it from a plugin's answer to a request carrying it where it stands as a word of its own, but a value under %d bytes is too common to "+
				"scrub everywhere (it would mask ordinary text): inside other text, in an encoded form or in data a plugin returns, it is shown. "+
				"A value this short keeps nothing secret: use a longer one.", e.key, n, MinScrubLen)
		}
	}
	d.checkCSIMap(m)
}

// checkSecretsInNames warns of a secret value that is part of a name of the volume's (its ID,
// name, namespace, plugin ID or external ID, in names' order; scrubbedIn): volctl scrubs every secret value of the
// state from all it prints, whatever holds it (a plugin may echo a secret into any field), so
// that name prints with [REDACTED] in it everywhere: the volume's own ID in volume status, in
// events and errors. The secrets are the secrets map's values and the mount flags' (each flag
// whole, and the values of its items whose key names a secret: MountFlagSecrets, as
// store.Tx.SecretValues takes them), flags the ones read at flagsAt. The value is not named,
// nor the name's text. Another volume's secrets, which mask this one's names as well, are not
// looked at: a spec is read alone (docs/specs.md says so).
func (d *decoder) checkSecretsInNames(m *stringMap, flags []string, flagsAt *hcl.Range, names [][2]string) {
	warn := func(what, value string, at hcl.Range) {
		if len(value) < MinScrubLen {
			return // not scrubbed from what volctl prints (checkSecrets warns)
		}
		for _, n := range names {
			if n[1] != "" && scrubbedIn(n[1], value) {
				d.warnf(at, "Secret in the volume's names", "The value of %s is part of the volume's %s. volctl masks every secret value "+
					"wherever it prints one, as [REDACTED], since a plugin may echo a secret into anything it returns: the volume's %s will print masked too "+
					"(in volume status, events and errors), and anything else that holds the value. Use a secret value that is no part of the volume's names.", what, n[0], n[0])
				return
			}
		}
	}
	if m != nil {
		for _, e := range m.entries {
			warn(fmt.Sprintf("secret %q", e.key), e.value, e.valueRange)
		}
	}
	for i, f := range flags {
		if flagsAt == nil || ShownMountFlag(f) {
			continue
		}
		for _, v := range append([]string{f}, MountFlagSecrets(f)...) {
			warn(string(PlaceholderWhat("", i)), v, *flagsAt)
		}
	}
}

// scrubbedIn reports whether secret value shows in name as volctl's scrubber finds it: as it
// is, and, from MinFoldLen bytes on, in any case of its letters (csi.Scrubber masks the secret
// "postgres" in "Postgres primary"; compared as it was, the name was read with no warning:
// TestSecretInTheVolumesNamesInAnotherCaseIsWarnedOf).
func scrubbedIn(name, value string) bool {
	if strings.Contains(name, value) {
		return true
	}
	if len(value) < MinFoldLen {
		return false
	}
	return strings.Contains(strings.ToLower(name), strings.ToLower(value)) ||
		strings.Contains(strings.ToUpper(name), strings.ToUpper(value))
}

// PlaceholderSummary is the summary of the error that refuses a placeholder (placeholder), and
// of the warning about one in a context (checkContext), for `volctl export nomad` to tell the
// placeholders it wrote on purpose from another error.
const PlaceholderSummary = "Placeholder, not a value"

// PlaceholderAt is the Extra of the error that refuses a placeholder: what holds it
// (`secret "token"`, "mount_flags[0]"), as PlaceholderWhat names it, for `volctl export nomad
// --include-secrets` to tell a value the volume is recorded with (one an older volctl read
// back) from a placeholder it wrote by mistake.
type PlaceholderAt string

// PlaceholderWhat names a secret (secret "KEY") or a mount flag (mount_flags[I]) as the
// placeholder error's PlaceholderAt does.
func PlaceholderWhat(secretKey string, flag int) PlaceholderAt {
	if secretKey != "" {
		return PlaceholderAt(fmt.Sprintf("secret %q", secretKey))
	}
	return PlaceholderAt(fmt.Sprintf("mount_flags[%d]", flag))
}

// IsPlaceholder reports whether v, a secret value or mount flag, is the placeholder Redacted
// that `volctl export nomad` writes (and Nomad answers mount flags as), blanks about it
// included: one pasted with a blank before or after it is no more a value than it is.
func IsPlaceholder(v string) bool { return strings.TrimSpace(v) == Redacted }

// PlaceholderSpelling reports whether v is another spelling of a placeholder for a hidden
// value ("<redacted>", as Nomad's agent shows its own tokens; "[redacted]", as nomad operator
// debug writes flags; "REDACTED", "( redacted )"): no tool writes one in place of a CSI
// secret or mount flag, so it may be a real value, but it is most likely copied from such
// output in place of one.
func PlaceholderSpelling(v string) bool {
	w := strings.TrimSpace(v)
	for _, p := range []string{"[]", "<>", "()", "{}"} {
		if len(w) >= 2 && w[0] == p[0] && w[len(w)-1] == p[1] {
			w = strings.TrimSpace(w[1 : len(w)-1])
			break
		}
	}
	return strings.EqualFold(w, "redacted") && !IsPlaceholder(v)
}

// PlaceholderSpellingSummary is the summary of the warning about another spelling of a
// placeholder (PlaceholderSpelling) as a secret value or mount flag.
const PlaceholderSpellingSummary = "Value that reads as a placeholder"

// checkPlaceholder refuses value, the value of what (a secret value or a mount flag, stands),
// when it is the placeholder (IsPlaceholder), and warns when it is another spelling of one
// (PlaceholderSpelling), which may be the real value: the warning names what holds it, never
// the value. Before, only the placeholder exactly as written was refused, and "<redacted>" or
// "[ REDACTED ]" copied from another tool's output was given to the plugin as the credential
// without a word.
func (d *decoder) checkPlaceholder(rng hcl.Range, value string, what PlaceholderAt, stands string) {
	switch {
	case IsPlaceholder(value):
		d.placeholder(rng, what, stands)
	case PlaceholderSpelling(value):
		// The detail names no spelling of the word: the parser masks the value wherever
		// its diagnostics quote it (hideMasked).
		d.warnf(rng, PlaceholderSpellingSummary, "The value of %s reads as a placeholder that output writes in place of a hidden value "+
			"(as Nomad's agent writes its own tokens, or nomad operator debug its flags), not as one: if it was copied from such output, "+
			"it is not %s, and the plugin would be given it as one; write the real value here. If it is the real value, it is taken as written.",
			string(what), stands)
	}
}

// placeholder refuses Redacted as the value of what (`secret "token"`, "mount_flags[0]"): the
// placeholder `volctl export nomad` writes, without --include-secrets, for stands (a secret
// value, a mount flag), and Nomad answers a volume's mount flags as. It is not the value: read
// back as one, the volume was recorded with it, its plugin given it as a credential or asked
// to mount with it, and `volctl nomad register` sent it on to Nomad. (A context value is the
// plugin's, which may be the placeholder itself: checkContext warns.)
func (d *decoder) placeholder(rng hcl.Range, what PlaceholderAt, stands string) {
	nomads := ""
	if strings.HasPrefix(string(what), "mount_flags[") {
		nomads = ", and Nomad answers a volume's mount flags as"
	}
	d.errorf(rng, PlaceholderSummary, "The value of %s is %s, the placeholder volctl export nomad writes for %s without --include-secrets%s: "+
		"it is not the value, and the plugin would be given it as one. Write the real value here, or export the volume again with --include-secrets. "+
		"(A %s whose real value is this text cannot be told from the placeholder, by volctl or by whoever reads the file: change it where the storage keeps it.)",
		string(what), Redacted, stands, nomads, strings.TrimPrefix(stands, "a "))
	d.diags[len(d.diags)-1].Extra = what
}

// checkSegments applies the CSI Topology rules: a key is an optional DNS-style prefix (lower
// case, at most 63 characters) and "/" and a name (at most 63, alphanumeric at both ends, with
// "-", "_", "." inside); a value follows the name rule; keys are case-insensitive, so "Zone"
// and "zone" may not both appear.
func (d *decoder) checkSegments(m *stringMap) {
	seen := map[string]string{}
	for _, e := range m.entries {
		if why := segmentKeyProblem(e.key); why != "" {
			d.errorf(e.keyRange, "Invalid topology segment", "Segment key %q is not valid: %s.", e.key, why)
		}
		if why := segmentNameProblem(e.value); why != "" {
			d.errorf(e.valueRange, "Invalid topology segment", "Segment value %q (for %q) is not valid: it %s.", e.value, e.key, why)
		}
		if prev, ok := seen[strings.ToLower(e.key)]; ok {
			d.errorf(e.keyRange, "Duplicate topology segment", "Segment keys %q and %q differ only in case; CSI topology keys are case-insensitive.", prev, e.key)
		}
		seen[strings.ToLower(e.key)] = e.key
	}
	d.checkCSIMap(m)
}

func segmentKeyProblem(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		prefix, name = "", k
	}
	if hasPrefix {
		if prefix == "" {
			return "the prefix before \"/\" is empty"
		}
		if len(prefix) > maxSegmentPart {
			return fmt.Sprintf("the prefix is %d characters long (the limit is %d)", len(prefix), maxSegmentPart)
		}
		lowerAlnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
		if !lowerAlnum(prefix[0]) || !lowerAlnum(prefix[len(prefix)-1]) {
			return "the prefix must begin and end with a lower-case letter or digit"
		}
		for i := 0; i < len(prefix); i++ {
			if c := prefix[i]; !lowerAlnum(c) && c != '-' && c != '.' {
				return "the prefix may contain only lower-case letters, digits, \"-\" and \".\""
			}
		}
	}
	if why := segmentNameProblem(name); why != "" {
		return "the name " + why
	}
	return ""
}

func segmentNameProblem(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > maxSegmentPart:
		return fmt.Sprintf("is %d characters long (the limit is %d)", len(s), maxSegmentPart)
	case !isAlnum(s[0]) || !isAlnum(s[len(s)-1]):
		return "must begin and end with a letter or digit"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return "may contain only letters, digits, \"-\", \"_\" and \".\""
		}
	}
	return ""
}
