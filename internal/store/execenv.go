package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// keepEnvGoing keeps, as plugin id's record is about to hold exec (its new exec column, nil for
// none or a deregistration), the values of the env its record holds now that exec does not: a
// process the agent started with them may run on (under mounts it is not restarted, and a
// deregistered plugin's is left running), and may echo them (exec_env_kept, migration 0027).
// They stay secrets the engine scrubs (SecretValues) until the agent lets them go (LetGoEnv).
func (ps plugins) keepEnvGoing(id string, exec any) error {
	_, err := ps.tx.exec(`
		INSERT INTO exec_env_kept (plugin_id, value)
		SELECT p.id, e.value FROM plugins AS p, json_each(p.exec, '$.env') AS e
		WHERE p.id = ?1 AND p.exec IS NOT ?2 AND e.type = 'text' AND e.value <> ''
			AND e.value NOT IN (SELECT value FROM json_each(coalesce(?2, '{}'), '$.env'))
		ON CONFLICT DO NOTHING`, id, exec)
	if err != nil {
		return fmt.Errorf("%s: keep the values of its exec env a process may still run with: %w", pluginWhat(id), mapBusy(err))
	}
	return nil
}

// envArg is the JSON array of env's values, as the queries that let kept values go compare.
func envArg(env map[string]string) (string, error) {
	vs := slices.Sorted(maps.Values(env))
	if vs == nil {
		vs = []string{}
	}
	b, err := json.Marshal(vs)
	return string(b), err
}

// HoldsEnvBeyond reports whether values of plugin id's earlier exec envs are kept (keepEnvGoing)
// that running, the env of the one process of it that may run now (nil for none), does not
// hold: those LetGoEnv would let go.
func (ps plugins) HoldsEnvBeyond(id string, running map[string]string) (bool, error) {
	arg, err := envArg(running)
	if err != nil {
		return false, err
	}
	var beyond bool
	err = ps.tx.queryRow(`SELECT EXISTS (SELECT 1 FROM exec_env_kept WHERE plugin_id = ?
		AND value NOT IN (SELECT value FROM json_each(?)))`, id, arg).Scan(&beyond)
	if err != nil {
		return false, fmt.Errorf("%s: read the values kept of its earlier exec envs: %w", pluginWhat(id), mapBusy(err))
	}
	return beyond, nil
}

// LetGoEnv lets go of the values kept of plugin id's earlier exec envs that running, the env of
// the one process of it that may run now (nil for none), does not hold, and returns how many
// went. A value that leaves the state so is forgotten as any secret is (WithForget).
func (ps plugins) LetGoEnv(id string, running map[string]string) (int64, error) {
	beyond, err := ps.HoldsEnvBeyond(id, running)
	if err != nil || !beyond {
		return 0, err
	}
	if err := ps.tx.noteSecrets(); err != nil {
		return 0, fmt.Errorf("%s: %w", pluginWhat(id), err)
	}
	arg, err := envArg(running)
	if err != nil {
		return 0, err
	}
	res, err := ps.tx.exec(`DELETE FROM exec_env_kept WHERE plugin_id = ?
		AND value NOT IN (SELECT value FROM json_each(?))`, id, arg)
	if err != nil {
		return 0, fmt.Errorf("%s: let go of the values kept of its earlier exec envs: %w", pluginWhat(id), mapBusy(err))
	}
	return res.RowsAffected()
}

// EnvKeptOfGone returns the plugin IDs not registered of which values of earlier exec envs are
// kept (keepEnvGoing: a deregistration keeps them while a process started with them may run).
func (ps plugins) EnvKeptOfGone() ([]string, error) {
	rows, err := ps.tx.query(`SELECT DISTINCT plugin_id FROM exec_env_kept
		WHERE plugin_id NOT IN (SELECT id FROM plugins) ORDER BY plugin_id`)
	ids, err := collect(rows, err, func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("read the values kept of deregistered plugins' exec envs: %w", mapBusy(err))
	}
	return ids, nil
}

// MoveKeptEnv keeps the values kept of plugin from's earlier exec envs as plugin to's: the
// process started with them now runs as to's (the agent handed a deregistered plugin's process
// to the plugin on its socket), and goes when to's does.
func (ps plugins) MoveKeptEnv(from, to string) error {
	if _, err := ps.tx.exec(`INSERT INTO exec_env_kept (plugin_id, value)
		SELECT ?, value FROM exec_env_kept WHERE plugin_id = ? ON CONFLICT DO NOTHING`, to, from); err != nil {
		return fmt.Errorf("%s: keep the values kept of its earlier exec envs as %s's: %w", pluginWhat(from), pluginWhat(to), mapBusy(err))
	}
	if _, err := ps.tx.exec(`DELETE FROM exec_env_kept WHERE plugin_id = ?`, from); err != nil {
		return fmt.Errorf("%s: keep the values kept of its earlier exec envs as %s's: %w", pluginWhat(from), pluginWhat(to), mapBusy(err))
	}
	return nil
}
