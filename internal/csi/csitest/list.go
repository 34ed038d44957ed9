package csitest

import (
	"context"
	"fmt"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// VolumeIDs asks the plugin on socket (a path or unix://PATH) for its volumes with ListVolumes,
// page by page from startingToken ("" for the first page), over a connection of its own, and
// returns their IDs: tests see what the plugin holds (a volume created twice, one lost), by
// the stubs, not through the client under test. The error is the plugin's gRPC status,
// wrapped with the socket.
func VolumeIDs(ctx context.Context, socket, startingToken string) ([]string, error) {
	conn, err := grpc.NewClient("unix://"+strings.TrimPrefix(socket, "unix://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("plugin socket %s: %w", socket, err)
	}
	defer conn.Close()
	controller := csipb.NewControllerClient(conn)
	ids := []string{}
	for token := startingToken; ; {
		resp, err := controller.ListVolumes(ctx, &csipb.ListVolumesRequest{StartingToken: token})
		if err != nil {
			return nil, fmt.Errorf("ListVolumes on plugin socket %s: %w", socket, err)
		}
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetVolume().GetVolumeId())
		}
		if token = resp.GetNextToken(); token == "" {
			return ids, nil
		}
	}
}
