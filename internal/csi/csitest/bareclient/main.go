// Command bareclient is the floor volctl's whole-process claim and release are measured
// against (cmd/volctl: BenchmarkClaimReleaseVsBareClient, BENCHMARKS.md): a process that does
// nothing but the node RPCs a claim or a release of a volume sends to a plugin with
// STAGE_UNSTAGE_VOLUME, straight over the CSI stubs, with no state, no locks and no checks.
//
//	bareclient -socket S -volume ID -staging DIR -target DIR claim    # NodeStage + NodePublish
//	bareclient -socket S -volume ID -staging DIR -target DIR release  # NodeUnpublish + NodeUnstage
//	bareclient -socket S start                                        # start-up only: no RPC
//
// It is built with the flags and tags of the release, so that start-up compares too.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	socket := flag.String("socket", "", "the plugin's unix socket")
	volume := flag.String("volume", "", "the plugin's volume ID")
	staging := flag.String("staging", "", "the staging path")
	target := flag.String("target", "", "the target path")
	flag.Parse()
	if err := run(*socket, *volume, *staging, *target, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "bareclient:", err)
		os.Exit(1)
	}
}

func run(socket, volume, staging, target, op string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	node := csipb.NewNodeClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	capability := &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	switch op {
	case "start":
		return nil
	case "claim":
		if _, err := node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
			VolumeId: volume, StagingTargetPath: staging, VolumeCapability: capability}); err != nil {
			return fmt.Errorf("NodeStageVolume: %w", err)
		}
		if _, err := node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
			VolumeId: volume, StagingTargetPath: staging, TargetPath: target, VolumeCapability: capability}); err != nil {
			return fmt.Errorf("NodePublishVolume: %w", err)
		}
	case "release":
		if _, err := node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volume, TargetPath: target}); err != nil {
			return fmt.Errorf("NodeUnpublishVolume: %w", err)
		}
		if _, err := node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volume, StagingTargetPath: staging}); err != nil {
			return fmt.Errorf("NodeUnstageVolume: %w", err)
		}
	default:
		return fmt.Errorf("operation %q: want claim, release or start", op)
	}
	return nil
}
