package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// BenchmarkPluginsFullEventLog is the plugin list every `plugin status`, `volctl status`,
// dashboard refresh and agent probe builds (pluginInfos), with 8 plugins registered and a full
// event log (store.DefaultEventLimit): half of them came back with other capabilities before
// everything else the log holds, half never did. Each plugin's last capability change was read
// from that log (lastCapabilityChange, by its index 0016); since migration 0019 it is read with
// the plugin's record, and the log's size costs the list nothing. cpu-ns/op is the process's CPU
// time per list.
//
//	go test ./internal/engine -run '^$' -bench PluginsFullEventLog -count 5
func BenchmarkPluginsFullEventLog(b *testing.B) {
	ctx := context.Background()
	e, err := Open(ctx, Config{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	const plugins = 8
	for i := range plugins {
		socket, _ := csitest.Serve(b, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
		if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: fmt.Sprintf("p%d", i), Type: spec.PluginMonolith, Socket: socket}); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.store.Update(ctx, func(tx *store.Tx) error {
		for i := range plugins / 2 {
			if err := tx.Events().Append(&store.Event{Kind: "plugin-capabilities", PluginID: fmt.Sprintf("p%d", i),
				Message: fmt.Sprintf("plugin %q came back with other capabilities; lost: STAGE_UNSTAGE_VOLUME", fmt.Sprintf("p%d", i))}); err != nil {
				return err
			}
		}
		for i := range store.DefaultEventLimit - plugins/2 {
			if err := tx.Events().Append(&store.Event{Kind: "claim", VolumeID: fmt.Sprintf("v%d", i%500), Alloc: fmt.Sprintf("a%d", i),
				PluginID: fmt.Sprintf("p%d", i%plugins), Message: "claimed volume for alloc, published at /var/lib/volctl/publish/x"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	infos, err := e.Plugins(ctx)
	if err != nil || len(infos) != plugins {
		b.Fatalf("plugins: %d, %v", len(infos), err)
	}
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if _, err := e.Plugins(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}
