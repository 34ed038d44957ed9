package hostpath

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/volctl/volctl/internal/spec"
)

// logRPC is the server's unary interceptor: at debug level, one line per RPC with its request,
// outcome and duration. Secrets never appear: protosanitizer strips the fields the CSI spec
// marks secret, and redact blanks mount flags, which the spec says may be sensitive but does
// not mark.
func (p *Plugin) logRPC(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !p.log.Enabled(ctx, slog.LevelDebug) {
		return handler(ctx, req)
	}
	start := time.Now()
	resp, err := handler(ctx, req)
	attrs := []any{"method", info.FullMethod, "request", redact(req), "duration", time.Since(start)}
	if err != nil {
		st := status.Convert(err)
		attrs = append(attrs, "code", st.Code().String(), "error", st.Message())
	} else {
		attrs = append(attrs, "code", "OK", "response", redact(resp))
	}
	p.log.Debug("rpc", attrs...)
	return resp, err
}

// redact returns a printable form of a CSI message with secrets and mount flags replaced.
func redact(m any) fmt.Stringer {
	msg, ok := m.(proto.Message)
	if !ok {
		return protosanitizer.StripSecrets(m)
	}
	clone := proto.Clone(msg)
	redactMountFlags(clone.ProtoReflect())
	return protosanitizer.StripSecrets(clone)
}

// redactMountFlags walks a message and overwrites every mount_flags entry in place.
func redactMountFlags(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					redactMountFlags(mv.Message())
					return true
				})
			}
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				redactMountFlags(v.List().Get(i).Message())
			}
		case fd.Message() != nil:
			redactMountFlags(v.Message())
		case fd.Name() == "mount_flags" && fd.IsList() && fd.Kind() == protoreflect.StringKind:
			for i := range v.List().Len() {
				v.List().Set(i, protoreflect.ValueOfString(spec.Redacted))
			}
		}
		return true
	})
}
