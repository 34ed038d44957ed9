package engine

import (
	"context"
	"fmt"

	"github.com/volctl/volctl/internal/csi"
)

// maxListPages bounds paging through a plugin's list RPC (ListSnapshots, ListVolumes), against
// a plugin whose tokens never end (each new: one that repeats a token is stopped at the repeat).
const maxListPages = 10000

// listPages pages through one of a plugin's list RPCs; the caller holds its controller lock.
// page sends rpc from token (with retries: retry) and keeps what it was answered only when it
// returns no error; it returns the next token and whether the caller has seen enough (done).
// Paging ends when the plugin gives no next token or page is done. A next_token given before
// fails it: it leads back to a page already listed, so paging on would never end, and stopping
// there is no end either (the pages after it were never listed, and what they hold would read
// as absent); so do more than maxListPages pages. Such an error means the listing is incomplete.
func (e *Engine) listPages(ctx context.Context, c *conn, rpc string, page func(ctx context.Context, token string) (next string, done bool, err error)) error {
	token, given := "", map[string]bool{}
	for range maxListPages {
		var (
			next string
			done bool
		)
		err := e.retry(ctx, c, rpc, func(ctx context.Context) error {
			var err error
			next, done, err = page(ctx, token)
			return err
		})
		if err != nil || done || next == "" {
			return err
		}
		if given[next] {
			return fmt.Errorf("%s: the plugin answered next_token %q a second time (after %d pages): its listing would never end",
				rpc, next, len(given)+1)
		}
		given[next] = true
		token = next
	}
	return fmt.Errorf("%s: more than %d pages", rpc, maxListPages)
}

// listsVolume says whether the plugin still lists its volume externalID, asked after a
// DeleteVolume of it answered OK; the caller holds the plugin's controller lock. A plugin
// without LIST_VOLUMES is not asked (false, nil). err says the listing failed or did not end:
// volctl could not check.
func (e *Engine) listsVolume(ctx context.Context, c *conn, externalID string) (listed bool, err error) {
	if !c.fp.Controller || !c.fp.Capabilities.Controller.ListVolumes {
		return false, nil
	}
	err = e.listPages(ctx, c, csi.RPCListVolumes, func(ctx context.Context, token string) (string, bool, error) {
		page, err := c.client.ListVolumes(ctx, csi.ListVolumesRequest{StartingToken: token})
		if err != nil {
			return "", false, err
		}
		for _, en := range page.Entries {
			if en.Volume.ID == externalID {
				listed = true
			}
		}
		return page.NextToken, listed, nil
	})
	return listed, err
}

// stillListed is what a DeleteVolume answered OK is when the plugin still lists the volume
// (listsVolume).
func stillListed(pluginID, externalID string) error {
	return fmt.Errorf("plugin %q answered DeleteVolume OK but still lists volume %q (ListVolumes): it may be deleting it in the background, or did not delete it",
		pluginID, externalID)
}
