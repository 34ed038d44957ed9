package tui

import (
	"context"
	"errors"
	"fmt"

	"github.com/volctl/volctl/internal/engine"
)

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

// redactedError is err as the dashboard shows it: scrubbed with eng's redactor, or withheld,
// saying why, when the secrets cannot be read; either still unwraps to err. nil stays nil.
// A failed probe round's went to the status line whole, naming plugins by their IDs as stored,
// which the plugins view masks (TestProbeErrorIsScrubbedOfSecrets).
func redactedError(ctx context.Context, eng Engine, err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if rerr := redacted(ctx, eng, &text); rerr != nil {
		text = fmt.Sprintf("the error is withheld: reading the state to redact secrets from it: %v", rerr)
	}
	if text != err.Error() {
		return &scrubbedError{err: err, msg: text}
	}
	return err
}

// volumeShower is what an engine that scrubs a volume with the secrets read beside it offers
// (*engine.Engine does: VolumeShown).
type volumeShower interface {
	VolumeShown(ctx context.Context, idOrPrefix string) (engine.VolumeInfo, error)
}

// shownVolume reads volume id to be shown: with VolumeShown where eng has it, the secrets read
// in the volume's own snapshot; else Volume, then scrubbed. A scrub with a read of its own
// missed the secrets of a volume another process deleted between the two reads, and the
// detail drew its plugin's echo of them whole
// (TestVolumeDetailReadBeforeAnotherProcessDeletesItShowsNoSecret).
func shownVolume(ctx context.Context, eng Engine, id string) (engine.VolumeInfo, error) {
	if s, ok := eng.(volumeShower); ok {
		return s.VolumeShown(ctx, id)
	}
	v, err := eng.Volume(ctx, id)
	if err == nil {
		err = redacted(ctx, eng, &v)
	}
	return v, err
}

// volumeGone says a read of volume id by its ID as stored (v, err) found it gone: not found,
// or another volume answering, which the engine takes the ID as a prefix of (one, or several:
// an ambiguous prefix, the ID itself not among them). Before, with two volumes starting with
// a deleted one's ID, its detail and a confirmed action on it reported a failed read naming
// the two (TestDetailOfAVolumeGoneSaysSoWhenTwoOthersStartSo).
func volumeGone(v engine.VolumeInfo, err error, id string) bool {
	var amb *engine.AmbiguousError
	if err == nil {
		return v.Key() != id
	}
	return errors.Is(err, engine.ErrNotFound) || errors.As(err, &amb)
}
