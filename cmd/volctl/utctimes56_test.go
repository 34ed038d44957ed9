package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Every time volctl prints in JSON is UTC (`...Z`, as every example of docs/json.md). Before,
// `probed_at` of `plugin status --json` and `status --json` was not: `plugin status` probes
// live, and the probe's time was engine.Config.Now's, in the process's local zone. With
// TZ=Asia/Kolkata one object said `"probed_at": "...+05:30"` beside `"fingerprinted_at":
// "...Z"`: a script comparing or sorting the strings (as RFC 3339 UTC strings sort) ordered
// them wrong, and the same field was `Z` when read back.
func TestPluginTimesAreUTCWhateverTheZone(t *testing.T) {
	env := newHostEnv(t)
	for _, args := range [][]string{{"plugin", "status", "--json"}, {"plugin", "status", "hp", "--json"}, {"status", "--json"}} {
		cmd := exec.Command(env.volctl(), args...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1", "TZ=Asia/Kolkata")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		var times []string
		var walk func(k string, v any)
		walk = func(k string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k2, v2 := range v {
					walk(k2, v2)
				}
			case []any:
				for _, v2 := range v {
					walk(k, v2)
				}
			case string:
				if strings.HasSuffix(k, "_at") {
					times = append(times, k+"="+v)
				}
			}
		}
		var doc any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		walk("", doc)
		if len(times) == 0 {
			t.Fatalf("volctl %s printed no time:\n%s", strings.Join(args, " "), out.String())
		}
		for _, kv := range times {
			k, v, _ := strings.Cut(kv, "=")
			ts, err := time.Parse(time.RFC3339Nano, v)
			if err != nil || !strings.HasSuffix(v, "Z") {
				t.Errorf("volctl %s with TZ=Asia/Kolkata: %s is %q (%v), not UTC as every other time volctl prints; %s", strings.Join(args, " "), k, v, err, ts.UTC().Format(time.RFC3339Nano))
			}
		}
	}
}
