package tui

import (
	"context"

	"github.com/volctl/volctl/internal/engine"
)

// advisedEngine is the engine the dashboard reads through when Options.Advice is set (volctl
// tui given --state-dir): every text it shows, after its scrub (RedactValue, VolumeShown, the
// dashboard's read), has the volctl commands it advises rewritten to carry the state dir, as
// the command line's stderr has them (cli's stateDirAdvice). Before, a failed release's
// "`volctl volume detach db --force --yes`", pasted, acted on the default state dir, where a
// volume db may be another's (TestDashboardAdviceCarriesTheStateDirGiven).
type advisedEngine struct {
	Engine
	advise func(string) string
}

func (a advisedEngine) Dashboard(ctx context.Context, events int) (engine.Dashboard, error) {
	d, err := a.Engine.Dashboard(ctx, events)
	engine.MapStrings(&d, a.advise)
	return d, a.advisedError(err)
}

// advisedError is err with the commands its text advises rewritten, still unwrapping to err: a
// failed read's words (a stopped volctl's lock: "`volctl reconcile` then finishes ...") reached
// the status line bare, and followed acted on the default state dir
// (TestDashboardReadFailureAdviceCarriesTheStateDir).
func (a advisedEngine) advisedError(err error) error {
	if err == nil {
		return nil
	}
	if text := a.advise(err.Error()); text != err.Error() {
		return &scrubbedError{err: err, msg: text}
	}
	return err
}

// RedactValue scrubs v as the engine's redactor does, where it has one, then rewrites it.
func (a advisedEngine) RedactValue(ctx context.Context, v any, extra ...string) error {
	if r, ok := a.Engine.(redactor); ok {
		if err := r.RedactValue(ctx, v, extra...); err != nil {
			return err
		}
	}
	engine.MapStrings(v, a.advise)
	return nil
}

// VolumeShown is the engine's, where it has one, rewritten; else the volume as shownVolume
// reads it from Volume, scrubbed and rewritten by RedactValue.
func (a advisedEngine) VolumeShown(ctx context.Context, id string) (engine.VolumeInfo, error) {
	if s, ok := a.Engine.(volumeShower); ok {
		// Its error is rewritten where the detail shows it (redactedError, through RedactValue).
		v, err := s.VolumeShown(ctx, id)
		engine.MapStrings(&v, a.advise)
		return v, err
	}
	v, err := a.Engine.Volume(ctx, id)
	if err == nil {
		err = a.RedactValue(ctx, &v)
	}
	return v, err
}

// advised is text with the volctl commands it advises rewritten (Styles.advise), for what the
// dashboard writes itself: an empty view's hint, a detail's own advice.
func (s *Styles) advised(text string) string {
	if s.advise == nil {
		return text
	}
	return s.advise(text)
}
