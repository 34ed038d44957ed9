package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
)

// detailRow is the value of the "Key = value" row key of a volume status ID text.
func detailRow(text, key string) string {
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestVolumeStatusCapacityDoesNotHideAnExpandThatFellShort: a plugin answers an expand of a
// 1GiB volume to 2GiB with 4 KiB less (ControllerExpandVolume OK, capacity 2147479552). The
// expand fails saying so, in exact sizes ("answered ... with 2097148KiB, below the 2GiB asked:
// the expansion is not done (the volume is recorded at 2097148KiB ...)"). `volume status v`
// then shows "Capacity = 2.0 GiB", the size that was asked: display.Bytes rounds 2 GiB - 4 KiB
// to "2.0 GiB", and only --json has the exact size. A capacity that is not a whole number of
// the unit shown must read differently from one that is: exactly, as the engine's own messages
// word it (spec.FormatSize: "2097148KiB"), or with its bytes ("2.0 GiB (2147479552 bytes)").
// Found by helper review74.
func TestVolumeStatusCapacityDoesNotHideAnExpandThatFellShort(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	_, e, eng := serveMem(t, mem)
	createSingleWriter(t, e, "v")
	mem.AnswerExpandWith(2<<30 - 4096) // created at 1GiB (DefaultVolumeSize)
	code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "2GiB")
	if code == ExitOK {
		t.Fatalf("expand answered 4 KiB short: exit 0: %s", errOut)
	}
	v, err := e.Volume(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if v.CapacityBytes != 2<<30-4096 {
		t.Fatalf("recorded capacity %d, want 2147479552 (the answer); expand said: %s", v.CapacityBytes, errOut)
	}
	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: time.Now, ID: "v"}); err != nil {
		t.Fatal(err)
	}
	row := detailRow(out.String(), "Capacity")
	if row == "2.0 GiB" || row == "2 GiB" {
		t.Errorf("Capacity = %q for a volume of 2147479552 bytes, after an expand to 2GiB that fell short (%s): it reads as the size asked", row, strings.TrimSpace(errOut))
	}
}

// exactBytes adds the bytes only where the rounded figure is another size.
func TestExactBytesAddsTheBytesOnlyWhereTheRoundingHidesThem(t *testing.T) {
	for n, want := range map[int64]string{
		1023:          "1023 B",
		1 << 30:       "1.0 GiB",
		3 << 29:       "1.5 GiB",
		2<<30 - 4096:  "2.0 GiB (2147479552 bytes)",
		1000000000:    "954 MiB (1000000000 bytes)",
		100 << 30:     "100 GiB",
		100<<30 + 512: "100 GiB (107374182912 bytes)",
	} {
		if got := exactBytes(n); got != want {
			t.Errorf("exactBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
