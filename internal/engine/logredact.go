package engine

import (
	"context"
	"fmt"
	"log/slog"
)

// RedactLogger returns l with every record scrubbed of the secret values and mount flags the
// state holds (Redactor) before it is written: its message and every attribute, an error's
// text included. Plugin messages are scrubbed as they arrive, but the engine and the agent
// also log what they word from data a plugin returned (a node ID, a topology, a volume's
// external ID), which a hostile plugin may have echoed a secret into. The engine's own log
// goes through it (Open); the agent wraps its log with it. When the secrets cannot be read,
// the record is written with its message and attributes withheld.
func (e *Engine) RedactLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(*redactingHandler); ok {
		return l
	}
	return slog.New(&redactingHandler{inner: l.Handler(), e: e})
}

type redactingHandler struct {
	inner slog.Handler
	e     *Engine
	attrs []slog.Attr // from WithAttrs, scrubbed with the record
	group bool        // WithGroup was called: attrs belong to the inner handler already
}

func (h *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	redact, err := h.e.Redactor(context.WithoutCancel(ctx))
	if err != nil {
		out := slog.NewRecord(r.Time, r.Level, "a log record withheld: reading the state to redact secrets from it failed", r.PC)
		out.AddAttrs(slog.String("err", err.Error()))
		return h.inner.Handle(ctx, out)
	}
	out := slog.NewRecord(r.Time, r.Level, redact(r.Message), r.PC)
	for _, a := range h.attrs {
		out.AddAttrs(redactAttr(a, redact))
	}
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, redact))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs keeps the attributes to scrub them with each record (the secrets may change), unless
// a group was opened: then they go to the inner handler scrubbed now.
func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if h.group {
		if redact, err := h.e.Redactor(context.Background()); err == nil {
			for i := range attrs {
				attrs[i] = redactAttr(attrs[i], redact)
			}
			return &redactingHandler{inner: h.inner.WithAttrs(attrs), e: h.e, group: true}
		}
		return &redactingHandler{inner: h.inner, e: h.e, group: true}
	}
	return &redactingHandler{inner: h.inner, e: h.e, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	inner := h.inner
	if len(h.attrs) > 0 {
		if redact, err := h.e.Redactor(context.Background()); err == nil {
			attrs := make([]slog.Attr, len(h.attrs))
			for i, a := range h.attrs {
				attrs[i] = redactAttr(a, redact)
			}
			inner = inner.WithAttrs(attrs)
		}
	}
	return &redactingHandler{inner: inner.WithGroup(name), e: h.e, group: true}
}

// redactAttr scrubs a string, an error's text, or any other value's printed form when that
// holds a secret; groups attribute by attribute.
func redactAttr(a slog.Attr, redact func(string) string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = redactAttr(ga, redact)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		var s string
		if err, ok := v.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(v.Any())
		}
		if r := redact(s); r != s {
			return slog.String(a.Key, r)
		}
		if _, ok := v.Any().(error); ok {
			return slog.String(a.Key, s)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
