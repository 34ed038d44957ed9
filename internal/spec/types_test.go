package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

const (
	secretValue = "s3cr3t-v4lue"
	flagValue   = "password=hunter2"
)

// TestRedaction prints Secrets and MountFlags, alone and inside the specs that hold them,
// every way the project prints things; the raw values must never appear.
func TestRedaction(t *testing.T) {
	secrets := Secrets{"password": secretValue}
	flags := MountFlags{"noatime", flagValue}
	vol := &Volume{ID: "db", Secrets: secrets, MountOptions: &MountOptions{FSType: "ext4", MountFlags: flags}}
	plugin := &Plugin{ID: "p", Exec: &Exec{Command: "/bin/p", Env: Secrets{"TOKEN": secretValue}}}
	group := &Group{Name: "g", Volumes: []VolumeRequest{{Name: "v", MountOptions: &MountOptions{MountFlags: flags}}}}

	values := map[string]any{
		"secrets": secrets, "flags": flags, "volume": vol, "volume value": *vol,
		"plugin": plugin, "group": group, "mount options": vol.MountOptions,
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			var outputs []string
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
				outputs = append(outputs, fmt.Sprintf(verb, v))
			}
			outputs = append(outputs, fmt.Sprint(v), fmt.Sprintln(v))
			outputs = append(outputs, fmt.Errorf("register volume: %v", v).Error())
			outputs = append(outputs, errors.Join(fmt.Errorf("%+v", v)).Error())

			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			outputs = append(outputs, string(b))
			b, _ = json.MarshalIndent(v, "", "  ")
			outputs = append(outputs, string(b))

			for _, h := range []func(*bytes.Buffer) slog.Handler{
				func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
				func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
			} {
				var buf bytes.Buffer
				slog.New(h(&buf)).Info("msg", "value", v, slog.Any("any", v))
				outputs = append(outputs, buf.String())
			}
			for _, out := range outputs {
				if strings.Contains(out, secretValue) || strings.Contains(out, "hunter2") {
					t.Errorf("raw value leaked: %s", out)
				}
			}
		})
	}
}

func TestRedactionShape(t *testing.T) {
	b, _ := json.Marshal(Secrets{"a": "x", "b": "y"})
	if string(b) != `{"a":"[REDACTED]","b":"[REDACTED]"}` {
		t.Errorf("secrets JSON = %s; keys should stay, values go", b)
	}
	b, _ = json.Marshal(MountFlags{"a", "b"})
	if string(b) != `["[REDACTED]","[REDACTED]"]` {
		t.Errorf("mount flags JSON = %s", b)
	}
	if Secrets(nil).String() != "map[]" || MountFlags(nil).String() != "[]" {
		t.Errorf("empty values should print as empty: %s %s", Secrets(nil), MountFlags(nil))
	}
	var nilSecrets Secrets
	if b, _ := json.Marshal(nilSecrets); string(b) != "null" {
		t.Errorf("nil secrets JSON = %s", b)
	}
	if got := (Secrets{"a": "x"}).Plain(); !reflect.DeepEqual(got, map[string]string{"a": "x"}) {
		t.Errorf("Plain = %v", got)
	}
	if got := (MountFlags{"ro"}).Plain(); !reflect.DeepEqual(got, []string{"ro"}) {
		t.Errorf("Plain = %v", got)
	}
}

func TestMountOptionsMerge(t *testing.T) {
	vol := &MountOptions{FSType: "ext4", MountFlags: MountFlags{"noatime"}}
	tests := []struct {
		name     string
		base     *MountOptions
		req      *MountOptions
		wantFS   string
		wantFlag []string
	}{
		{"no request", vol, nil, "ext4", []string{"noatime"}},
		{"request fs_type wins", vol, &MountOptions{FSType: "xfs"}, "xfs", []string{"noatime"}},
		{"request flags replace", vol, &MountOptions{MountFlags: MountFlags{"ro"}}, "ext4", []string{"ro"}},
		{"no volume options", nil, &MountOptions{FSType: "xfs"}, "xfs", nil},
	}
	for _, tt := range tests {
		got := tt.base.Merge(tt.req)
		if got.FSType != tt.wantFS || !reflect.DeepEqual(got.MountFlags.Plain(), tt.wantFlag) {
			t.Errorf("%s: got %q %q", tt.name, got.FSType, got.MountFlags.Plain())
		}
	}
	if vol.MountFlags.Plain()[0] != "noatime" {
		t.Error("Merge changed its receiver")
	}
}

func TestPluginEndpoints(t *testing.T) {
	tests := []struct {
		p          Plugin
		ctrl, node string
	}{
		{Plugin{Type: PluginMonolith, Socket: "/s"}, "/s", "/s"},
		{Plugin{Type: PluginMonolith, ControllerSocket: "/c", NodeSocket: "/n"}, "/c", "/n"},
		{Plugin{Type: PluginController, ControllerSocket: "/c"}, "/c", ""},
		{Plugin{Type: PluginNode, NodeSocket: "/n"}, "", "/n"},
	}
	for _, tt := range tests {
		if c, n := tt.p.ControllerEndpoint(), tt.p.NodeEndpoint(); c != tt.ctrl || n != tt.node {
			t.Errorf("%+v: endpoints %q %q, want %q %q", tt.p, c, n, tt.ctrl, tt.node)
		}
	}
}

// Describe is what the detail views show: the fs type and how many flags, never a flag.
func TestMountOptionsDescribe(t *testing.T) {
	tests := []struct {
		in   *MountOptions
		want []string
	}{
		{nil, nil},
		{&MountOptions{}, nil},
		{&MountOptions{FSType: "xfs"}, []string{"fs_type=xfs"}},
		{&MountOptions{MountFlags: MountFlags{flagValue}}, []string{"mount_flags=[REDACTED] (1)"}},
		{&MountOptions{FSType: "ext4", MountFlags: MountFlags{"noatime", flagValue}}, []string{"fs_type=ext4", "mount_flags=[REDACTED] (2)"}},
	}
	for _, tt := range tests {
		if got := tt.in.Describe(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v.Describe() = %q, want %q", tt.in, got, tt.want)
		}
	}
}
