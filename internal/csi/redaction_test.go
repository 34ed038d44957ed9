package csi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

const (
	sentinelSecret = "s3cr3t-SENTINEL-4711"
	sentinelFlag   = "password=FLAG-SENTINEL-0815"
)

func sensitiveCapability() csi.VolumeCapability {
	return csi.VolumeCapability{
		Capability:   spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", sentinelFlag}},
	}
}

// sensitiveCalls sends the sentinels through every RPC that carries secrets or mount flags.
func sensitiveCalls(c *csi.Client, dir string) map[string]func(context.Context) error {
	sec := spec.Secrets{"password": sentinelSecret}
	vc := sensitiveCapability()
	staging := filepath.Join(dir, "staging")
	return map[string]func(context.Context) error{
		csi.RPCCreateVolume: func(ctx context.Context) error {
			_, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "s", Capabilities: []csi.VolumeCapability{vc}, Secrets: sec})
			return err
		},
		csi.RPCValidateVolumeCapabilities: func(ctx context.Context) error {
			return c.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{VolumeID: "vol-1", Capabilities: []csi.VolumeCapability{vc}, Secrets: sec})
		},
		csi.RPCControllerPublishVolume: func(ctx context.Context) error {
			_, err := c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: "vol-1", NodeID: "mem-node-1", Capability: vc, Secrets: sec})
			return err
		},
		csi.RPCNodeStageVolume: func(ctx context.Context) error {
			return c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: "vol-1", StagingPath: staging, Capability: vc, Secrets: sec,
				PublishContext: map[string]string{"device": "/dev/mem/vol-1"}})
		},
		csi.RPCNodePublishVolume: func(ctx context.Context) error {
			return c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: "vol-1", StagingPath: staging, TargetPath: filepath.Join(dir, "target"),
				Capability: vc, Secrets: sec, PublishContext: map[string]string{"device": "/dev/mem/vol-1"}})
		},
		csi.RPCGetCapacity: func(ctx context.Context) error {
			_, err := c.GetCapacity(ctx, csi.GetCapacityRequest{Capabilities: []csi.VolumeCapability{vc}})
			return err
		},
		csi.RPCControllerExpandVolume: func(ctx context.Context) error {
			_, err := c.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{VolumeID: "vol-1", CapacityMin: 2 << 30, Capability: &vc, Secrets: sec})
			return err
		},
		csi.RPCNodeExpandVolume: func(ctx context.Context) error {
			_, err := c.NodeExpandVolume(ctx, csi.NodeExpandVolumeRequest{VolumeID: "vol-1", VolumePath: staging, Capability: &vc, Secrets: sec})
			return err
		},
		csi.RPCCreateSnapshot: func(ctx context.Context) error {
			_, err := c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: "vol-1", Name: "snap", Secrets: sec})
			return err
		},
		csi.RPCListSnapshots: func(ctx context.Context) error {
			_, err := c.ListSnapshots(ctx, csi.ListSnapshotsRequest{Secrets: sec})
			return err
		},
		csi.RPCControllerUnpublishVolume: func(ctx context.Context) error {
			return c.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{VolumeID: "vol-1", NodeID: "mem-node-1", Secrets: sec})
		},
		csi.RPCDeleteSnapshot: func(ctx context.Context) error {
			return c.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: "snap", Secrets: sec})
		},
		csi.RPCDeleteVolume: func(ctx context.Context) error {
			return c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: "vol-1", Secrets: sec})
		},
	}
}

// TestVerboseTraceRedactsSecretsAndMountFlags runs every secret-carrying RPC with the trace on,
// first succeeding, then failing with a plugin that echoes the secret and flag in its message,
// and checks neither sentinel reaches the trace or any error.
func TestVerboseTraceRedactsSecretsAndMountFlags(t *testing.T) {
	var trace iostreams.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Logger: logger}))
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "staging"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := sensitiveCalls(h.client, dir)
	order := []string{csi.RPCCreateVolume, csi.RPCValidateVolumeCapabilities, csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume,
		csi.RPCNodePublishVolume, csi.RPCGetCapacity, csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume, csi.RPCCreateSnapshot,
		csi.RPCListSnapshots}
	for _, rpc := range order {
		if err := calls[rpc](ctx); err != nil {
			t.Fatalf("%s: %v", rpc, err)
		}
	}
	// Now every RPC fails with a plugin that echoes what it got.
	carriesFlags := map[string]bool{csi.RPCCreateVolume: true, csi.RPCValidateVolumeCapabilities: true, csi.RPCControllerPublishVolume: true,
		csi.RPCNodeStageVolume: true, csi.RPCNodePublishVolume: true, csi.RPCGetCapacity: true, csi.RPCControllerExpandVolume: true,
		csi.RPCNodeExpandVolume: true}
	for rpc, call := range calls {
		echo, want := "bad credentials "+sentinelSecret, "bad credentials [REDACTED]"
		if rpc == csi.RPCGetCapacity {
			echo, want = "bad request", "bad request" // GetCapacity takes no secrets
		}
		if carriesFlags[rpc] {
			echo, want = echo+" for mount flag "+sentinelFlag, want+" for mount flag [REDACTED]"
		}
		h.faults.Inject(rpc, csitest.Fault{Code: codes.InvalidArgument, Message: echo, Times: 1})
		err := call(ctx)
		if err == nil {
			t.Fatalf("%s: the injected fault did not fail the call", rpc)
		}
		if strings.Contains(err.Error(), sentinelSecret) || strings.Contains(err.Error(), sentinelFlag) {
			t.Errorf("%s: error leaks a sentinel: %v", rpc, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q lost the plugin's message %q", rpc, err, want)
		}
	}

	out := trace.String()
	if strings.Contains(out, sentinelSecret) || strings.Contains(out, sentinelFlag) {
		t.Fatalf("the trace leaks a sentinel:\n%s", out)
	}
	// The trace is on and says something useful, or the test above proves nothing.
	for _, want := range []string{"rpc=NodePublishVolume", "***stripped***", spec.Redacted, "code=InvalidArgument", "code=OK", "ext4", "mount_flags", "duration="} {
		if !strings.Contains(out, want) {
			t.Errorf("the trace lacks %q:\n%s", want, out)
		}
	}
}

// TestTraceOffByDefault: without a debug logger, nothing is logged (and nothing is cloned).
func TestTraceOffByDefault(t *testing.T) {
	var trace iostreams.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Logger: logger}))
	if _, err := h.client.GetPluginInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if trace.String() != "" {
		t.Fatalf("trace at warn level: %s", trace.String())
	}
}

// TestNotConfirmedMessageIsScrubbed: ValidateVolumeCapabilities' own error quotes the
// plugin's message, which might echo a secret.
func TestNotConfirmedMessageIsScrubbed(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCValidateVolumeCapabilities, func(any) (any, error) {
		return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{},
			Message: "flag " + sentinelFlag + " needs secret " + sentinelSecret}, nil
	}))
	err := h.client.ValidateVolumeCapabilities(context.Background(), csi.ValidateVolumeCapabilitiesRequest{VolumeID: "v",
		Capabilities: []csi.VolumeCapability{sensitiveCapability()}, Secrets: spec.Secrets{"k": sentinelSecret}})
	if err == nil || strings.Contains(err.Error(), sentinelSecret) || strings.Contains(err.Error(), sentinelFlag) {
		t.Fatalf("ValidateVolumeCapabilities = %v, want an error without the sentinels", err)
	}
}

// TestOwnedTypesRedactThemselves prints and marshals every owned type that carries secrets or
// mount flags in every way a log line or JSON output might.
func TestOwnedTypesRedactThemselves(t *testing.T) {
	sec := spec.Secrets{"password": sentinelSecret}
	vc := sensitiveCapability()
	values := []any{
		vc,
		csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{vc}, Secrets: sec},
		csi.DeleteVolumeRequest{VolumeID: "v", Secrets: sec},
		csi.ControllerPublishVolumeRequest{VolumeID: "v", Capability: vc, Secrets: sec},
		csi.ControllerUnpublishVolumeRequest{VolumeID: "v", Secrets: sec},
		csi.ValidateVolumeCapabilitiesRequest{VolumeID: "v", Capabilities: []csi.VolumeCapability{vc}, Secrets: sec},
		csi.GetCapacityRequest{Capabilities: []csi.VolumeCapability{vc}},
		csi.CreateSnapshotRequest{Name: "s", Secrets: sec},
		csi.DeleteSnapshotRequest{SnapshotID: "s", Secrets: sec},
		csi.ListSnapshotsRequest{Secrets: sec},
		csi.ControllerExpandVolumeRequest{VolumeID: "v", Capability: &vc, Secrets: sec},
		csi.NodeStageVolumeRequest{VolumeID: "v", Capability: vc, Secrets: sec},
		csi.NodePublishVolumeRequest{VolumeID: "v", Capability: vc, Secrets: sec},
		csi.NodeExpandVolumeRequest{VolumeID: "v", Capability: &vc, Secrets: sec},
	}
	for _, v := range values {
		renders := map[string]string{
			"%v": fmt.Sprintf("%v", v), "%+v": fmt.Sprintf("%+v", v), "%#v": fmt.Sprintf("%#v", v), "%s": fmt.Sprintf("%s", v),
		}
		if b, err := json.Marshal(v); err != nil {
			t.Fatalf("%T: %v", v, err)
		} else {
			renders["json"] = string(b)
		}
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "v", v)
		renders["slog"] = logged.String()
		for how, s := range renders {
			if strings.Contains(s, sentinelSecret) || strings.Contains(s, sentinelFlag) {
				t.Errorf("%T printed with %s leaks a sentinel: %s", v, how, s)
			}
		}
	}
}

// TestRedactScrubsWhatTheRequestDidNotCarry: a plugin echoes, in the error of an RPC that
// carries no secret, values it was sent earlier. Config.Redact supplies them and they are
// scrubbed from the error and the trace, longest first and in their quoted forms too; values
// shorter than three bytes are left alone; and when Redact fails the message is withheld.
func TestRedactScrubsWhatTheRequestDidNotCarry(t *testing.T) {
	const quoted = `pa"ss\word-SENTINEL`
	values := []string{sentinelSecret, sentinelSecret + "-longer", quoted, "ro"}
	var redactErr error
	var trace iostreams.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Logger: logger,
		Redact: func(ctx context.Context) ([]string, error) {
			if ctx.Err() != nil {
				t.Errorf("Redact called with a context that has ended: %v", ctx.Err())
			}
			return values, redactErr
		}}))
	echo := fmt.Sprintf("cannot unstage: token %s, long %s-longer, Go %q, json %s, flags ro,noatime", sentinelSecret, sentinelSecret, quoted, jsonString(t, quoted))
	unstage := func() error {
		h.faults.Inject(csi.RPCNodeUnstageVolume, csitest.Fault{Code: codes.Internal, Message: echo, Times: 1})
		return h.client.NodeUnstageVolume(context.Background(), csi.NodeUnstageVolumeRequest{VolumeID: "v", StagingPath: "/s"})
	}
	err := unstage()
	if err == nil {
		t.Fatal("the injected fault did not fail the call")
	}
	for _, s := range []string{"SENTINEL", `ss\\word`, "-longer"} {
		if strings.Contains(err.Error(), s) || strings.Contains(trace.String(), s) {
			t.Errorf("%q survives in the error or the trace:\n%v\n%s", s, err, trace.String())
		}
	}
	want := "cannot unstage: token [REDACTED], long [REDACTED], Go \"[REDACTED]\", json \"[REDACTED]\", flags ro,noatime"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v\nwant it to hold %q", err, want)
	}

	redactErr = errors.New("database is locked")
	err = unstage()
	if err == nil || strings.Contains(err.Error(), "cannot unstage") || !strings.Contains(err.Error(), "withheld") {
		t.Errorf("with Redact failing: %v, want the plugin's message withheld", err)
	}
	if strings.Contains(trace.String(), "SENTINEL") {
		t.Errorf("the trace leaks with Redact failing:\n%s", trace.String())
	}
}

func jsonString(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A secret with a control character and one of < > & is written by protojson (a plugin
// echoing its request) and by volctl's own --json as JSON without HTML escaping:
// "ctl\u0001<x>", neither Go's quoting nor json.Marshal's ("ctl\u0001\u003cx\u003e").
func TestScrubJSONWithoutHTMLEscaping(t *testing.T) {
	secret := "ctl\x01<x>&y"
	req := &csipb.NodeStageVolumeRequest{Secrets: map[string]string{"k": secret}}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{"k": secret}); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{protojson.Format(req), b.String()} {
		if got := csi.Scrubber([]string{secret})(msg); !strings.Contains(got, "[REDACTED]") || strings.Contains(got, "<x>&y") {
			t.Errorf("not scrubbed: %s", got)
		}
	}
}

// TestShortSecretScrubbedAsAWord: a secret under three bytes, sent in a request, is scrubbed
// from the plugin's answer to it where it stands as a word of its own (how a plugin echoes a
// value), in the error and the trace alike; inside a longer word it is left, and so is a
// short mount flag ("ro"), which carries no credential.
func TestShortSecretScrubbedAsAWord(t *testing.T) {
	var trace iostreams.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Logger: logger}))
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	vc := csi.VolumeCapability{
		Capability:   spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"ro"}},
	}
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.PermissionDenied, Times: 1,
		Message: `pin "Q7" rejected (key=Q7, retry Q7); vol-Q7x stays; mounted ro`})
	err := h.client.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: "vol-1", StagingPath: staging, Capability: vc,
		Secrets: spec.Secrets{"pin": "Q7", "password": sentinelSecret}})
	want := `pin "[REDACTED]" rejected (key=[REDACTED], retry [REDACTED]); vol-Q7x stays; mounted ro`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v\nwant it to hold %q", err, want)
	}
	for _, leak := range []string{`"Q7"`, "=Q7", "retry Q7"} {
		if strings.Contains(trace.String(), leak) {
			t.Errorf("the trace holds %s:\n%s", leak, trace.String())
		}
	}
}

// TestMountFlagsSecretValueScrubbedAlone: a mount flag is scrubbed whole ("password=..."), but a
// plugin, or the mount helper it runs, echoes the value of a key=value flag alone as often
// ("password FLAG-SENTINEL-0815 rejected for user alice"), and that reached the error volctl
// stores in the claim and prints: the value of a flag whose key names a secret (password,
// secret, token, key, ...) is scrubbed wherever it stands, not the value of one
// whose key names none (uid=1000 is left as it is: "1000" is in many a message).
func TestMountFlagsSecretValueScrubbedAlone(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "staging"), 0o700); err != nil {
		t.Fatal(err)
	}
	value := strings.TrimPrefix(sentinelFlag, "password=")
	calls := sensitiveCalls(h.client, dir)
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCValidateVolumeCapabilities, csi.RPCControllerPublishVolume,
		csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume} {
		h.faults.Inject(rpc, csitest.Fault{Code: codes.PermissionDenied, Message: "password " + value + " rejected for uid 1000", Times: 1})
		err := calls[rpc](context.Background())
		if err == nil {
			t.Fatalf("%s: the injected fault did not fail the call", rpc)
		}
		if strings.Contains(err.Error(), value) {
			t.Errorf("%s: the error holds the value of the mount flag %s, which the plugin echoed alone: %v", rpc, spec.Redacted, err)
		}
		if !strings.Contains(err.Error(), "password "+spec.Redacted+" rejected for uid 1000") {
			t.Errorf("%s: error %q lost the plugin's message", rpc, err)
		}
	}
	for _, tt := range []struct {
		flag  string
		value []string
	}{
		{"password=hunter2", []string{"hunter2"}},
		{"Password2=hunter2", []string{"hunter2"}},
		{"username=alice,password=S3cr3tPw,uid=1000", []string{"S3cr3tPw"}},
		{"secret=AQBh2vRe", []string{"AQBh2vRe"}},
		// A key naming a file holds a path, which "could not open credentials file ..." needs.
		{"credentials=/etc/cifs.cred", nil},
		{"name=admin,secretfile=/etc/ceph/admin.secret", nil},
		{"passwd_file=/etc/passwd-s3fs,keyring=/etc/ceph/ceph.keyring", nil},
		// cifs's user=NAME%PASSWORD, ecryptfs's key=passphrase:passphrase_passwd=...
		{"user=alice%pw-9317,uid=1000", []string{"pw-9317"}},
		{"username=alice", nil},
		{"key=passphrase:passphrase_passwd=pw-4471", []string{"passphrase:passphrase_passwd=pw-4471", "pw-4471"}},
		{"key=passphrase:passphrase_passwd_file=/root/pp", []string{"passphrase:passphrase_passwd_file=/root/pp"}},
		{"api_token=tok-123", []string{"tok-123"}},
		{"uid=1000", nil},
		{"sec=krb5", nil},
		{"password", nil},
		{"password=", nil},
	} {
		if v := spec.MountFlagSecrets(tt.flag); !slices.Equal(v, tt.value) {
			t.Errorf("spec.MountFlagSecrets(%q) = %q, want %q", tt.flag, v, tt.value)
		}
	}
}

// A comma doubled in a mount flag is one comma of its item's value, as the kernel's cifs reads
// a password: the whole value is the secret, scrubbed as read ("ab,cd") and as written
// ("ab,,cd"). Split at every comma, only the part before it was, and a plugin echoing the
// password it was given showed the rest. Found by helper review66.
func TestMountFlagSecretWithADoubledComma(t *testing.T) {
	for _, tt := range []struct {
		flag  string
		value []string
	}{
		// As written, as read, and as a reader taking no doubled comma for one reads it.
		{"password=pw-ab,,cd-77,uid=1000", []string{"pw-ab,,cd-77", "pw-ab,cd-77", "pw-ab"}},
		{"username=alice,password=x,,y,,z", []string{"x,,y,,z", "x,y,z", "x"}},
		{"uid=1000,,gid=1000", nil},
		{"password=hunter2,uid=1000", []string{"hunter2"}},
	} {
		if v := spec.MountFlagSecrets(tt.flag); !slices.Equal(v, tt.value) {
			t.Errorf("spec.MountFlagSecrets(%q) = %q, want %q", tt.flag, v, tt.value)
		}
	}
	scrub := csi.Scrubber(spec.MountFlagSecrets("password=pw-ab,,cd-77"))
	if got := scrub("mount error: bad password pw-ab,cd-77 for alice"); strings.Contains(got, "cd-77") {
		t.Errorf("a plugin echoing the password of password=pw-ab,,cd-77 shows part of it: %q", got)
	}
}
