package csitest

import (
	"context"
	"sync/atomic"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// EchoSecretsIntoSnapshotIDs is an interceptor (WithInterceptor) that plays a hostile plugin:
// each secret value CreateSnapshot is sent is put at the end of the snapshot ID it answers
// ("ID-VALUE"), and, while deleteDown is set (nil: never), DeleteSnapshot answers UNAVAILABLE,
// the delete left recorded for reconcile.
func EchoSecretsIntoSnapshotIDs(deleteDown *atomic.Bool) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if _, ok := req.(*csipb.DeleteSnapshotRequest); ok && deleteDown != nil && deleteDown.Load() {
			return nil, status.Error(codes.Unavailable, "backend unreachable")
		}
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateSnapshotResponse); ok && err == nil {
			for _, v := range req.(*csipb.CreateSnapshotRequest).GetSecrets() {
				r.Snapshot.SnapshotId += "-" + v
			}
		}
		return resp, err
	}
}
