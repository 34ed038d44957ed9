package csi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// hostileMessage is a plugin message with what a terminal would act on: an SGR colour, an OSC
// window title ended by BEL, a newline and tab, DEL, and C1 CSI and OSC (U+009B, U+009D),
// around non-ASCII letters and a backslash that must come through as they are.
const hostileMessage = "disk \x1b[31mRED\x1b[0m \x1b]0;pwned\x07 line\nnext\ttab del\x7f c1\u009b2J\u009d0;t\u009c Größe ✓ 日本語 C:\\data"

// hostileShown is hostileMessage as it must read: each control character as strconv.Quote
// writes it, the rest (a plugin's own backslashes included) untouched.
const hostileShown = `disk \x1b[31mRED\x1b[0m \x1b]0;pwned\a line\nnext\ttab del\x7f c1\u009b2J\u009d0;t\u009c Größe ✓ 日本語 C:\data`

// controlFree reports the first control character (C0, DEL, C1) in s.
func controlFree(s string) (rune, bool) {
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return r, false
		}
	}
	return 0, true
}

// TestPluginMessageControlCharactersAreEscaped: a plugin's error message reaches terminals
// (status, the TUI) and the store through *csi.Error; its escape sequences must arrive as
// visible text, not be acted on.
func TestPluginMessageControlCharactersAreEscaped(t *testing.T) {
	w := newWorld(t)
	calls := w.calls()
	for _, rpc := range []string{csi.RPCGetPluginInfo, csi.RPCNodePublishVolume, csi.RPCCreateVolume, csi.RPCDeleteVolume} {
		for _, code := range []codes.Code{codes.Internal, codes.Unavailable, codes.NotFound} {
			w.faults.Inject(rpc, csitest.Fault{Code: code, Message: hostileMessage, Times: 1})
			err := calls[rpc](context.Background())
			var e *csi.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s/%v: error %v (%T) is not a *csi.Error", rpc, code, err, err)
			}
			if e.Message != hostileShown {
				t.Errorf("%s/%v: Message\n got %q\nwant %q", rpc, code, e.Message, hostileShown)
			}
			for what, s := range map[string]string{"Message": e.Message, "Error()": err.Error(), "Hint": e.Hint,
				"GRPCStatus": status.Convert(err).Message()} {
				if r, ok := controlFree(s); !ok {
					t.Errorf("%s/%v: %s carries control character %U: %q", rpc, code, what, r, s)
				}
			}
			if !strings.Contains(err.Error(), `\x1b[31mRED`) || !strings.Contains(err.Error(), `\x1b]0;pwned\a`) {
				t.Errorf("%s/%v: Error() %q lacks the visible escapes", rpc, code, err)
			}
			if e.Code != code || e.Class != wantClass(rpc, code) {
				t.Errorf("%s/%v: escaping changed the code or class: %v %v", rpc, code, e.Code, e.Class)
			}
		}
	}
}

// TestValidateMessageControlCharactersAreEscaped: ValidateVolumeCapabilities' unconfirmed
// message is plugin text in an error too.
func TestValidateMessageControlCharactersAreEscaped(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCValidateVolumeCapabilities, func(any) (any, error) {
		return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{}, Message: hostileMessage}, nil
	}))
	err := h.client.ValidateVolumeCapabilities(context.Background(), csi.ValidateVolumeCapabilitiesRequest{
		VolumeID: "vol-1", Capabilities: []csi.VolumeCapability{fsWriter}})
	if !errors.Is(err, csi.ErrNotConfirmed) {
		t.Fatalf("ValidateVolumeCapabilities = %v, want ErrNotConfirmed", err)
	}
	if r, ok := controlFree(err.Error()); !ok {
		t.Errorf("error carries control character %U: %q", r, err)
	}
	if !strings.HasSuffix(err.Error(), ": "+hostileShown) {
		t.Errorf("error %q does not end with the escaped message %q", err, hostileShown)
	}
}
