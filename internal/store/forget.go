package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// WithForget makes every write transaction that takes secret values out of the state (a
// volume deleted, deregistered or registered again with other secrets, a plugin with another
// exec env, a snapshot record forgotten) rewrite the event log's messages, and the last errors
// kept of claims, past claims, plugins and group runs, with scrub(values) of the values it took out, before
// it commits. The engine scrubs what it prints with the
// values the state holds (store.Tx.SecretValues), but an event's message may word data a
// plugin returned (a node ID, an external ID, a topology), which a hostile plugin may have
// echoed a secret into: once the secret has left the state, nothing would scrub it from the
// log that outlives it, nor from a last error worded so (TestSecretsLeavingTheStateAreScrubbedFromTheLastErrors).
// The cost is paid by those transactions only: two reads of the secret values and a pass over
// the log (at most DefaultEventLimit messages) and the non-empty last errors when some went.
func WithForget(scrub func(values []string) func(string) string) Option {
	return func(o *options) { o.forget = scrub }
}

// noteSecrets reads, once per transaction, the secret values the state holds before a change
// that may remove some, for forgetGone to compare with at commit.
func (tx *Tx) noteSecrets() error {
	if tx.s.forget == nil || tx.noted {
		return nil
	}
	before, err := tx.SecretValues()
	if err != nil {
		return err
	}
	tx.secretsBefore, tx.noted = before, true
	return nil
}

// noteSecretsUnlessSame is noteSecrets for a change of a row's secret columns: query selects
// whether the row's columns are those about to be written (one row, one boolean), and only
// when they are not is anything read beyond it. No row: nothing to remove.
func (tx *Tx) noteSecretsUnlessSame(query string, args ...any) error {
	if tx.s.forget == nil || tx.noted {
		return nil
	}
	var same bool
	switch err := tx.queryRow(query, args...).Scan(&same); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("compare the secrets to be written: %w", mapBusy(err))
	case same:
		return nil
	}
	return tx.noteSecrets()
}

// forgetGone, at commit, scrubs the event log, and the last errors of claims, past claims,
// plugins and groups' runs, of the values noteSecrets read that the state no longer holds.
func (tx *Tx) forgetGone() error {
	if !tx.noted {
		return nil
	}
	after, err := tx.SecretValues()
	if err != nil {
		return err
	}
	held := make(map[string]bool, len(after))
	for _, v := range after {
		held[v] = true
	}
	var gone []string
	for _, v := range tx.secretsBefore {
		if !held[v] {
			gone = append(gone, v)
		}
	}
	gone, scrub, err := tx.keepHeld(gone)
	if err != nil || len(gone) == 0 {
		return err
	}
	tx.forgot, tx.gone = true, gone
	// The event log, and the last errors kept of claims, past claims and plugins: each may word
	// data a plugin returned for another record, with a value that has just left in it.
	// The events' names too (volume, alloc, plugin), of records gone: a volume named after a
	// user its secrets hold was shown masked while it lived, and whole in its events' volume
	// column once it was deleted, beside a message masking it
	// (TestEventsAfterTheDeleteShowNoSecretInTheirVolumeColumn). A live record's name is kept:
	// the scrub matches within words, and a live alloc "postgres-0" renamed for a deleted
	// volume's secret "postgres" was found by `events --alloc` no more
	// (TestForgetDoesNotRenameALiveClaimsEvents).
	for _, m := range [...]struct{ table, column, live, what string }{
		{"events", "message", "", "the event log"},
		{"events", "volume_id", "SELECT id FROM volumes", "the event log's volume IDs"},
		{"events", "alloc", "SELECT alloc FROM claims", "the event log's allocs"},
		{"events", "plugin_id", "SELECT id FROM plugins", "the event log's plugin IDs"},
		{"claims", "last_error", "", "the claims' last errors"},
		{"claim_history", "last_error", "", "the claim history's last errors"},
		{"plugins", "last_error", "", "the plugins' last errors"},
	} {
		if err := tx.scrubColumn(m.table, m.column, m.live, scrub); err != nil {
			return fmt.Errorf("scrub %s of the secrets that left the state: %w", m.what, err)
		}
	}
	// The groups' run errors, the claims' last errors of a `group run` kept for group status,
	// as JSON by alloc (TestSecretsLeavingTheStateAreScrubbedFromGroupRunErrors).
	if err := tx.scrubRunErrors(scrub); err != nil {
		return fmt.Errorf("scrub the groups' run errors of the secrets that left the state: %w", err)
	}
	return nil
}

// scrubColumn rewrites each non-empty text of table's column that scrub changes, but those
// the query live selects (the names of records still there), when it is given.
func (tx *Tx) scrubColumn(table, column, live string, scrub func(string) string) error {
	type msg struct {
		id   int64
		text string
	}
	where := column + ` <> ''`
	if live != "" {
		where += ` AND ` + column + ` NOT IN (` + live + `)`
	}
	rows, err := tx.query(`SELECT rowid, ` + column + ` FROM ` + table + ` WHERE ` + where)
	msgs, err := collect(rows, err, func(sc scanner) (msg, error) {
		var m msg
		return m, sc.Scan(&m.id, &m.text)
	})
	if err != nil {
		return mapBusy(err)
	}
	for _, m := range msgs {
		if s := scrub(m.text); s != m.text {
			if _, err := tx.exec(`UPDATE `+table+` SET `+column+` = ? WHERE rowid = ?`, s, m.id); err != nil {
				return mapBusy(err)
			}
		}
	}
	return nil
}

// pluginData is every column holding data a plugin returned, which is kept raw (it is sent
// back as it is) and scrubbed where it is shown, with the values SecretValues gives: copies
// of it too, a clone's clone_id (its source's external ID, and clone_spec as the spec wrote
// it), a restored volume's snapshot_id, a snapshot create's source_external_id and a snapshot
// delete's snapshot_id, which outlive the record they were copied from (recheck35: a secret
// a plugin echoed into a clone's source ID was let go once the source was deleted, and
// `volume status` of the clone printed it, TestSecretHeldByACloneOrRestoreSourceIDStaysScrubbed).
var pluginData = [...]struct{ table, column string }{
	{"volumes", "external_id"}, {"volumes", "context"}, {"volumes", "accessible_topology"},
	{"volumes", "clone_id"}, {"volumes", "clone_spec"}, {"volumes", "snapshot_id"},
	{"snapshot_creates", "source_external_id"}, {"snapshot_deletes", "snapshot_id"},
	{"claims", "publish_context"}, {"claim_history", "publish_context"},
	{"stagings", "node_id"}, {"stagings", "publish_context"},
	{"plugins", "node_id"}, {"plugins", "provider"}, {"plugins", "version"}, {"plugins", "topology"},
	{"snapshots", "snapshot_id"}, {"snapshots", "source_external_id"},
	{"plugins_left", "provider"},
	// The driver name a snapshot and a snapshot being created keep of their plugin (its
	// Reach), which an error names once the plugin's own record is gone or says another
	// (review57: a secret echoed into it was let go with its volume, and printed whole then).
	{"snapshots", "provider"}, {"snapshot_creates", "provider"},
}

// keepHeld keeps among the secret values (kept_secrets) those of gone that data a plugin
// returned for another record still holds, in any form the scrubber finds, and lets go those
// kept before that no such data holds any more; it returns the values that left the state for
// good, those let go among them, and the scrubber of them. Before, volume a's secret a hostile
// plugin echoed into volume b's publish context, or into its node ID, was printed whole once a
// was deleted: what prints that data scrubs it with SecretValues, which no longer held a's
// (TestSecretHeldByAnotherRecordsPluginDataStaysScrubbed). The data itself is not changed:
// it is what the plugin is sent. The cost, a pass over that data with the scrubber of the
// values gone (made once, as before, unless some data holds one: a hostile plugin's), is paid
// only when a value left or some are kept.
func (tx *Tx) keepHeld(gone []string) ([]string, func(string) string, error) {
	rows, err := tx.query(`SELECT value FROM kept_secrets`)
	kept, err := collect(rows, err, func(sc scanner) (string, error) {
		var v string
		return v, sc.Scan(&v)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the secrets kept for plugin data: %w", mapBusy(err))
	}
	if len(gone) == 0 && len(kept) == 0 {
		return nil, nil, nil
	}
	var texts []string
	for _, c := range pluginData {
		rows, err := tx.query(`SELECT ` + c.column + ` FROM ` + c.table + ` WHERE ` + c.column + ` IS NOT NULL AND ` + c.column + ` <> ''`)
		vs, err := collect(rows, err, func(sc scanner) (string, error) {
			var v string
			return v, sc.Scan(&v)
		})
		if err != nil {
			return nil, nil, fmt.Errorf("read %s.%s for secrets it holds: %w", c.table, c.column, mapBusy(err))
		}
		texts = append(texts, vs...)
	}
	holding := func(scrub func(string) string) bool {
		for _, t := range texts {
			if scrub(t) != t {
				return true
			}
		}
		return false
	}
	all := append(slices.Clip(gone), kept...)
	scrub := tx.s.forget(all)
	if !holding(scrub) {
		// No data holds any (the most common case, kept empty): all left for good.
		for _, v := range kept {
			if _, err := tx.exec(`DELETE FROM kept_secrets WHERE value = ?`, v); err != nil {
				return nil, nil, fmt.Errorf("let go of a secret no plugin data holds: %w", mapBusy(err))
			}
		}
		return all, scrub, nil
	}
	var out []string
	for k, v := range all {
		held := holding(tx.s.forget([]string{v}))
		switch {
		case held && k < len(gone):
			if _, err := tx.exec(`INSERT INTO kept_secrets (value) VALUES (?) ON CONFLICT DO NOTHING`, v); err != nil {
				return nil, nil, fmt.Errorf("keep a secret plugin data holds: %w", mapBusy(err))
			}
		case !held && k >= len(gone):
			if _, err := tx.exec(`DELETE FROM kept_secrets WHERE value = ?`, v); err != nil {
				return nil, nil, fmt.Errorf("let go of a secret no plugin data holds: %w", mapBusy(err))
			}
		}
		if !held {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, nil, nil
	}
	return out, tx.s.forget(out), nil
}

// ForgottenHere returns the secret values that commits through this Store took out of the
// state since it was opened (the most recent maxGoneHere of them), a list the caller must not
// change. The state no longer holds
// them, so SecretValues no longer gives them, but this process may still hold text that names
// them: a report worded while the record holding one was still there (a reconcile pass that
// finished a snapshot delete whose ID a plugin echoed a secret into, and printed that action
// once the record, the last holder of the value, was gone), or a log record written after the
// commit. The engine scrubs with them too (TestSecretLeftDuringACommandStaysScrubbedInWhatItPrints).
func (s *Store) ForgottenHere() []string { return s.goneHere.list() }

// maxGoneHere bounds ForgottenHere: a long-running agent forgets values as volumes come and
// go, and each value scrubbed costs every scrub.
const maxGoneHere = 1024

// goneValues is the set ForgottenHere gives, oldest first. A list once given is never
// changed (add makes a new one), so that a read, which the engine makes for every record of
// its log, copies nothing.
type goneValues struct {
	mu     sync.Mutex
	values []string
}

func (g *goneValues) add(values []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := slices.Clone(g.values)
	for _, v := range values {
		if !slices.Contains(next, v) {
			next = append(next, v)
		}
	}
	if n := len(next) - maxGoneHere; n > 0 {
		next = slices.Delete(next, 0, n)
	}
	g.values = next
}

// list returns the values, not to be changed by the caller.
func (g *goneValues) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.values
}
