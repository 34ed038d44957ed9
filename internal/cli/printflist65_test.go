package cli

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// TestTemplatePrintfOverAVolumeListIsNotRefused (found by helper review65): printfSize
// counts fmt's error words (fmtErrorWords, 64 bytes) (verbs+args) x leaves times, leaves being
// those of the whole list, whatever the verbs are. `volume status -t` over 10,000 volumes (the
// scale BENCHMARKS.md measures) with `printf "%d volumes: %v" (len .) .`, which makes about 2 MB,
// is estimated at 69 MB and refused as "more than 64 MiB of text"; before fmtErrorWords it was
// estimated at 13 MB and ran. docs/json.md: no volctl object comes near the bound.
func TestTemplatePrintfOverAVolumeListIsNotRefused(t *testing.T) {
	untimedFilters(t)
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	vols := make([]engine.VolumeSummary, 0, 10_000)
	for i := range 10_000 {
		id := fmt.Sprintf("vol-%05d", i)
		vols = append(vols, engine.VolumeSummary{ID: id, Namespace: "default", Name: id, PluginID: "hostpath",
			State: "ready", Schedulable: true, CapacityBytes: 1 << 30, CreatedAt: now})
	}
	for _, text := range []string{
		`{{$y := printf "%d volumes: %v" (len .) .}}{{len $y}}`,
		`{{$y := printf "%s %v" "volumes:" .}}{{len $y}}`,
	} {
		tm, err := parseTemplate(text)
		if err != nil {
			t.Fatal(err)
		}
		e := exportFlags{Template: text, tmpl: tm}
		var out bytes.Buffer
		if err := e.Write(context.Background(), &out, vols); err != nil {
			t.Errorf("-t %s over 10,000 volumes: %v; want it printed (it makes a few MB, far under the 64 MiB bound)", text, err)
			continue
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(out.String())); n <= 0 || int64(n) > maxFilterOutput.Load()/16 {
			t.Errorf("-t %s: made %d bytes", text, n)
		}
	}
}
