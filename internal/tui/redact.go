package tui

import "context"

// redactor is what an engine that knows the state's secrets offers (*engine.Engine does):
// every string of a value scrubbed of them. Data a plugin returned (a volume's context and
// external ID, its version and node ID, events about them) is shown as the engine keeps it,
// and a hostile plugin may have echoed a secret into any of it, so what the dashboard reads is
// scrubbed before it reaches a view.
type redactor interface {
	RedactValue(ctx context.Context, v any, extra ...string) error
}

// redacted scrubs *v with eng's redactor, when it has one. If the secrets cannot be read, the
// error is returned and nothing is to be shown.
func redacted[T any](ctx context.Context, eng Engine, v *T) error {
	if r, ok := eng.(redactor); ok {
		return r.RedactValue(ctx, v)
	}
	return nil
}
