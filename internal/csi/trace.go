package csi

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/volctl/volctl/internal/spec"
)

// mountFlagsField is VolumeCapability.MountVolume.mount_flags. The CSI spec says mount flags
// may be sensitive but does not mark them csi_secret, so protosanitizer leaves them alone.
const mountFlagsField protoreflect.FullName = "csi.v1.VolumeCapability.MountVolume.mount_flags"

// rpcStartKey is a context key: the time invoke started an RPC, before it set the RPC's
// deadline, which the interceptor measures the RPC from.
type rpcStartKey struct{}

// MaxTraceAnswer is how much of a plugin's answer the trace logs, in bytes of its text: a
// plugin may answer with megabytes (a volume context, a listing, gRPC takes up to 4 MiB), and
// `--verbose` would write each of them whole, at every call. Every answer is scrubbed of the
// secrets volctl knows (the request's, Config.Redact's) before it is cut (Client.pluginTextUpTo),
// so that the cut leaves no part of one for the log's own redaction to miss, and a secret the
// log's redaction does not know (one the state does not hold yet) is not written either.
const MaxTraceAnswer = 64 << 10

// traceInterceptor logs each RPC at Debug: method, request and response with secrets and
// mount flags redacted, code, duration, and the (scrubbed) error message. It hands every RPC's
// name, code and duration to observe, when set (Config.Observe). text scrubs and cuts a
// plugin's text (Client.pluginTextUpTo).
func traceInterceptor(log *slog.Logger, socket string, text func(context.Context, proto.Message, string, int) string,
	observe func(rpc, code string, d time.Duration)) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		debug := log.Enabled(ctx, slog.LevelDebug)
		if !debug && observe == nil {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		start, ok := ctx.Value(rpcStartKey{}).(time.Time)
		if !ok {
			start = time.Now()
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		took := time.Since(start)
		if observe != nil {
			observe(path.Base(method), observedCode(err), took)
		}
		if !debug {
			return err
		}
		attrs := []slog.Attr{
			slog.String("rpc", path.Base(method)),
			slog.String("socket", socket),
		}
		if m, ok := req.(proto.Message); ok {
			// The plugin's own ID of the volume, as a field of its own for log queries.
			if fd := m.ProtoReflect().Descriptor().Fields().ByName("volume_id"); fd != nil && fd.Kind() == protoreflect.StringKind {
				if id := m.ProtoReflect().Get(fd).String(); id != "" {
					attrs = append(attrs, slog.String("csi_volume_id", id))
				}
			}
		}
		attrs = append(attrs,
			slog.String("request", sanitize(req)),
			slog.String("code", status.Code(err).String()),
			slog.Duration("duration", took),
		)
		if err != nil {
			msg := status.Convert(err).Message()
			if m, ok := req.(proto.Message); ok {
				msg = text(ctx, m, msg, MaxPluginMessage)
			} else {
				msg = withheld
			}
			attrs = append(attrs, slog.String("error", msg))
		} else {
			// An answer is the plugin's text as its error messages are, and scrubbed as they
			// are, whatever its size: a hostile plugin echoes the request's secrets into the
			// fields of an answer OK (a volume_context, a publish_context, snapshot IDs), and
			// one the state does not hold yet (a register's spec, `snapshot list --secret`) has
			// no log redaction after this to catch it. Before, only an answer past
			// MaxTraceAnswer was (TestVerboseTraceScrubsSecretsEchoedInAnswers).
			answer := sanitize(reply)
			if m, ok := req.(proto.Message); ok {
				answer = text(ctx, m, answer, MaxTraceAnswer)
			} else if len(answer) > MaxTraceAnswer {
				answer = withheld
			}
			attrs = append(attrs, slog.String("response", answer))
		}
		log.LogAttrs(ctx, slog.LevelDebug, "csi rpc", attrs...)
		return err
	}
}

// observedCode names err's gRPC code for Config.Observe. gRPC hands on any number a plugin
// answers with ("Code(1234)"): a code gRPC does not define counts as Unknown (as grpc-java
// reads one), so an observer's label takes one of 17 values, whatever the plugin sends.
func observedCode(err error) string {
	c := status.Code(err)
	if c > codes.Unauthenticated {
		c = codes.Unknown
	}
	return c.String()
}

// sanitize renders a message as one-line JSON with csi_secret fields stripped (protosanitizer)
// and every mount flag replaced, on a clone so the request sent is untouched.
func sanitize(v any) string {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Sprint(v)
	}
	clone := proto.Clone(m)
	redactMountFlags(clone.ProtoReflect())
	return protosanitizer.StripSecrets(clone).String()
}

// redactMountFlags replaces each mount flag anywhere in m with the redaction marker.
func redactMountFlags(m protoreflect.Message) {
	var flags []protoreflect.List
	var nested []protoreflect.Message
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.FullName() == mountFlagsField:
			flags = append(flags, v.List())
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					nested = append(nested, mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Kind() == protoreflect.MessageKind {
				for i := range v.List().Len() {
					nested = append(nested, v.List().Get(i).Message())
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			nested = append(nested, v.Message())
		}
		return true
	})
	for _, l := range flags {
		for i := range l.Len() {
			l.Set(i, protoreflect.ValueOfString(spec.Redacted))
		}
	}
	for _, n := range nested {
		redactMountFlags(n)
	}
}

// sensitiveValues collects every secret value and mount flag in m, so they can be scrubbed
// from a plugin's error message should the plugin echo them.
func sensitiveValues(m proto.Message) []string { return requestValues(m, true) }

// requestValues collects every secret value in m, and every mount flag with flags, with the
// values of its items whose key names a secret (spec.MountFlagSecrets).
func requestValues(m proto.Message, flags bool) []string {
	var out []string
	var walk func(protoreflect.Message)
	walk = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.FullName() == mountFlagsField:
				for i := range v.List().Len() {
					// A word of mount(8)'s vocabulary ("noatime", "dev") is no credential: the
					// state's values leave it out too (spec.ShownMountFlag).
					if flag := v.List().Get(i).String(); flags && !spec.ShownMountFlag(flag) {
						out = append(append(out, flag), spec.MountFlagSecrets(flag)...)
					}
				}
			case isSecret(fd):
				if fd.IsMap() {
					v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
						out = append(out, mv.String())
						return true
					})
				} else if fd.Kind() == protoreflect.StringKind && !fd.IsList() {
					out = append(out, v.String())
				}
			case fd.IsMap():
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
						walk(mv.Message())
						return true
					})
				}
			case fd.IsList():
				if fd.Kind() == protoreflect.MessageKind {
					for i := range v.List().Len() {
						walk(v.List().Get(i).Message())
					}
				}
			case fd.Kind() == protoreflect.MessageKind:
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
	return out
}

func isSecret(fd protoreflect.FieldDescriptor) bool {
	secret, _ := proto.GetExtension(fd.Options(), csipb.E_CsiSecret).(bool)
	return secret
}
