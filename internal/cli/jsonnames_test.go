package cli

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// jsonOutputs are the values the --json outputs print (docs/json.md).
var jsonOutputs = []any{
	pluginProbeResult{}, statusSummary{},
	engine.PluginInfo{}, engine.VolumeSummary{}, engine.VolumeInfo{}, engine.ClaimInfo{},
	engine.EventInfo{}, engine.GroupInfo{}, engine.ReconcileReport{}, engine.SnapshotList{},
	engine.SnapshotInfo{},
}

// jsonFields collects the JSON field names of t and the types under them, with the Go type of
// each.
func jsonFields(t reflect.Type, seen map[reflect.Type]bool, out map[string][]reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for _, f := range jsonStructFields(t) {
		out[f.name] = append(out[f.name], f.typ)
		jsonFields(f.typ, seen, out)
	}
}

// The JSON outputs name one quantity one way: a duration is a number of milliseconds named
// *_ms everywhere, and no field is another's name without its unit (probe_latency beside
// probe_latency_ms).
func TestJSONFieldNamesAgree(t *testing.T) {
	fields := map[string][]reflect.Type{}
	seen := map[reflect.Type]bool{}
	for _, v := range jsonOutputs {
		jsonFields(reflect.TypeOf(v), seen, fields)
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	durations := []reflect.Type{reflect.TypeFor[engine.Duration](), reflect.TypeFor[time.Duration]()}
	for _, n := range names {
		for _, typ := range fields[n] {
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			for _, d := range durations {
				if typ == d && !strings.HasSuffix(n, "_ms") {
					t.Errorf("%q is a duration (%s): name it %s_ms, as every duration in the JSON outputs", n, typ, n)
				}
			}
		}
		for _, unit := range []string{"_ms", "_bytes", "_ns", "_seconds"} {
			if _, ok := fields[n+unit]; ok {
				t.Errorf("%q and %q both appear in the JSON outputs: one quantity, two names", n, n+unit)
			}
		}
	}
}
