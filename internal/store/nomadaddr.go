package store

import "github.com/volctl/volctl/internal/nomadaddr"

// hideRecordedNomadAddresses is migration 0020's Go step: each handover mark's address, and
// each address after "Nomad at " in the event log and the kept last errors, rewritten as volctl
// shows it (nomadaddr.Shown, nomadaddr.InMessage), so that a credential an older volctl
// recorded in one leaves the database. A commit that changed any marks the WAL to be truncated
// after it (forgot), as one that took secrets out of the state does: its old frames hold the
// rows as they were.
func hideRecordedNomadAddresses(tx *Tx) error {
	changed := false
	rewrite := func(what, sel, upd string, show func(string) string) error {
		rows, err := tx.c.sc.QueryContext(tx.ctx, sel)
		if err != nil {
			return wrap(tx.c.check(err), "read "+what, "")
		}
		type row struct {
			key any
			to  string
		}
		var todo []row
		for rows.Next() {
			var key any
			var was string
			if err := rows.Scan(&key, &was); err != nil {
				rows.Close()
				return wrap(err, "read "+what, "")
			}
			if to := show(was); to != was {
				todo = append(todo, row{key, to})
			}
		}
		if err := rows.Close(); err != nil {
			return wrap(err, "read "+what, "")
		}
		if err := rows.Err(); err != nil {
			return wrap(err, "read "+what, "")
		}
		for _, r := range todo {
			if _, err := tx.exec(upd, r.to, r.key); err != nil {
				return wrap(err, "rewrite "+what, "")
			}
			changed = true
		}
		return nil
	}
	if err := rewrite("the handover marks' addresses", `SELECT volume_id, address FROM nomad_handovers`,
		`UPDATE nomad_handovers SET address = ? WHERE volume_id = ?`, nomadaddr.Shown); err != nil {
		return err
	}
	for _, m := range [...]struct{ table, column, what string }{
		{"events", "message", "the event log"},
		{"claims", "last_error", "the claims' last errors"},
		{"claim_history", "last_error", "the claim history's last errors"},
		{"plugins", "last_error", "the plugins' last errors"},
	} {
		if err := rewrite(m.what, `SELECT rowid, `+m.column+` FROM `+m.table+` WHERE instr(`+m.column+`, 'Nomad at ') > 0`,
			`UPDATE `+m.table+` SET `+m.column+` = ? WHERE rowid = ?`, nomadaddr.InMessage); err != nil {
			return err
		}
	}
	if changed {
		tx.forgot = true
	}
	return nil
}
