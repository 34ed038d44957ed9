package store

import (
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// LeftPlugin is how a plugin deregistered with --force while volumes still named it was
// reached (migration 0026): what ties those volumes to a socket, and so to the plugin IDs
// registered on it since (engine's matesBy), once the plugin's own record is gone.
type LeftPlugin struct {
	ID               string
	Type             spec.PluginType
	Socket           string
	ControllerSocket string
	NodeSocket       string
	Provider         string // the driver name the plugin last gave; "" when never fingerprinted
	LeftAt           time.Time
}

// PutLeft records how plugin p, deregistered now, was reached, in place of what an earlier
// forced deregistration of its ID recorded.
func (ps plugins) PutLeft(p Plugin) error {
	_, err := ps.tx.exec(`
		INSERT INTO plugins_left (id, type, socket, controller_socket, node_socket, provider, left_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET type = excluded.type, socket = excluded.socket,
			controller_socket = excluded.controller_socket, node_socket = excluded.node_socket,
			provider = excluded.provider, left_at = excluded.left_at`,
		p.ID, p.Type, p.Socket, p.ControllerSocket, p.NodeSocket, p.Fingerprint.Provider, encTime(ps.tx.now()))
	return wrap(err, pluginWhat(p.ID), "")
}

// ListLeft returns what forced deregistrations recorded of the plugin IDs not registered
// again, ordered by ID. Most states have none: one read of an empty table.
func (ps plugins) ListLeft() ([]LeftPlugin, error) {
	rows, err := ps.tx.query(`
		SELECT id, type, socket, controller_socket, node_socket, provider, left_at FROM plugins_left
		WHERE id NOT IN (SELECT id FROM plugins) ORDER BY id`)
	return collect(rows, err, func(sc scanner) (LeftPlugin, error) {
		var (
			l  LeftPlugin
			at int64
		)
		err := sc.Scan(&l.ID, &l.Type, &l.Socket, &l.ControllerSocket, &l.NodeSocket, &l.Provider, &at)
		l.LeftAt = decTime(at)
		return l, err
	})
}

// TidyLeft removes what forced deregistrations recorded of plugin IDs registered again or that
// no volume names any more, and returns how many it removed.
func (ps plugins) TidyLeft() (int64, error) {
	res, err := ps.tx.exec(`
		DELETE FROM plugins_left
		WHERE id IN (SELECT id FROM plugins) OR id NOT IN (SELECT plugin_id FROM volumes)`)
	if err != nil {
		return 0, wrap(err, "plugins deregistered with --force", "")
	}
	return res.RowsAffected()
}
