package engine

import "context"

// DeregisterVolume is DeregisterVolumeReleasing without the claims released, as the tests that
// do not look at them call it.
func (e *Engine) DeregisterVolume(ctx context.Context, id string, force bool) (warnings []string, err error) {
	_, warnings, err = e.DeregisterVolumeReleasing(ctx, id, force)
	return warnings, err
}
