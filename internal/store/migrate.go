package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/backoff"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// schemaFile is the schema the migrations up to the version in its first line build, as
// SQLite stores it (sqlite_schema's text), which a new, empty database is given in one step
// instead of replaying every migration: each ALTER TABLE makes SQLite parse the whole schema
// again, and a new state dir (the first command on a machine, every test's) paid for all of
// them. TestSchemaFileIsTheMigrationsApplied checks it is exactly what the migrations make, and
// says how to write it again; migrations added after it are applied on top as to any database.
//
//go:embed schema.sql
var schemaFile string

// schemaHeader is the first line of schema.sql, before the version.
const schemaHeader = "-- volctl schema at version "

// schemaVersionOf reads the version schema.sql is at from its first line.
func schemaVersionOf(src string) (int, error) {
	first, _, _ := strings.Cut(src, "\n")
	v, err := strconv.Atoi(strings.TrimPrefix(first, schemaHeader))
	if !strings.HasPrefix(first, schemaHeader) || err != nil || v < 1 {
		return 0, fmt.Errorf("schema.sql: first line %q, want %q and a version", first, schemaHeader+"N")
	}
	return v, nil
}

// applicationID marks the file as volctl's ("vctl"), so a stray SQLite file is refused rather
// than migrated.
const applicationID = 0x7663746c

// migration is one numbered SQL file. The schema version of a database is the number of the last
// migration applied to it, kept in PRAGMA user_version.
type migration struct {
	version int
	name    string
	// sql is the migration's SQL if the list gives it (tests do); otherwise it is read from the
	// embedded file when the migration is applied.
	sql string
}

// migrations is the embedded list, ordered and checked once at start-up: a gap or a duplicate
// number is a build mistake, so it panics rather than corrupting a database later. Only the
// names are read then: the SQL (~12 KB copied out of the binary) is read when a database older
// than this binary is migrated, not by every process that opens the store.
var migrations = loadMigrations()

func loadMigrations() []migration {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic(fmt.Sprintf("store: migration %q: name must be NNNN_what.sql", e.Name()))
		}
		if v != len(out)+1 {
			panic(fmt.Sprintf("store: migration %q: expected number %d", e.Name(), len(out)+1))
		}
		out = append(out, migration{version: v, name: e.Name()})
	}
	return out
}

// goSteps are the steps of migrations that SQL cannot write, run after the migration's file
// in its transaction, so that a database is at the old version or at the new one with every
// step done, never in between (a kill mid-step loses nothing: TestStorageKeyBackfillKilledHalfwayIsRedone).
// A new database made from schema.sql has no rows to run them on.
var goSteps = map[int]func(tx *Tx) error{
	15: backfillStorageKeys,
	19: backfillCapabilityChanges,
	20: hideRecordedNomadAddresses,
	24: moveGroupRunErrors,
}

// source is the migration's SQL.
func (m migration) source() (string, error) {
	if m.sql != "" {
		return m.sql, nil
	}
	b, err := migrationFiles.ReadFile(path.Join("migrations", m.name))
	return string(b), err
}

// querier is what the schema checks read through: the *sql.Conn under a pool's conn, inside a
// transaction or not.
type querier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// schemaVersion reads the version and application id in one query, which is all an open of an
// up-to-date database costs.
func schemaVersion(ctx context.Context, q querier) (version, appID int, err error) {
	err = q.QueryRowContext(ctx,
		"SELECT (SELECT user_version FROM pragma_user_version), (SELECT application_id FROM pragma_application_id)",
	).Scan(&version, &appID)
	return version, appID, err
}

// shownNames bounds how many of a foreign database's tables an error lists.
const shownNames = 5

// inspect is schemaVersion plus, for a database with no schema version, the names in its
// schema: an unmarked database is a new empty file only if it has none, else it is another
// program's; one marked volctl's holding some lost its version (refuseForeign).
func inspect(ctx context.Context, q querier) (version, appID int, names []string, err error) {
	version, appID, err = schemaVersion(ctx, q)
	if err != nil || version != 0 {
		return version, appID, nil, err
	}
	// Tables and views first: they are what a reader recognises; indexes and triggers hang off them.
	rows, err := q.QueryContext(ctx, "SELECT name FROM sqlite_schema ORDER BY type NOT IN ('table', 'view'), name LIMIT ?", shownNames+1)
	if err != nil {
		return version, appID, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return version, appID, nil, err
		}
		names = append(names, name)
	}
	return version, appID, names, rows.Err()
}

// migrateTo applies migrations up to target in one write transaction, so a database is either at
// its old version or at the new one, never in between; a crash or an error mid-way loses nothing.
// It takes the open lock shared, which the store holds until it closes, and a migration takes it
// exclusive: a database is not migrated under another volctl that has it open (openlock.go).
func (s *Store) migrateTo(ctx context.Context, versions *pool, target int) error {
	deadline := time.Now().Add(s.busyTimeout)
	waits := backoff.New(time.Millisecond, 100*time.Millisecond)
	probed := false // checkLockHolds ran
	watch := s.openLockWatch()
	openers := NewHolderWatch(s.openers)
	var whenHeld func() (bool, error)
	if versions == s.r { // opened for reading, an existing database
		whenHeld = func() (bool, error) { return s.readMigrating(ctx, versions, target) }
	}
	for {
		locked, err := s.lockShared(ctx, deadline, whenHeld)
		if err != nil {
			return err
		}
		if s.migrating != nil {
			return nil // read as last committed, at this volctl's version
		}
		if locked && !probed {
			if err := s.checkLockHolds(); err != nil {
				return err
			}
			probed = true
		}
		version, appID, err := s.readVersion(ctx, versions)
		if err != nil {
			return err
		}
		if err := s.checkVersion(version, appID, nil); err != nil || version >= target {
			return err
		}
		if locked {
			// Converting to exclusive drops the shared lock first (flock(2)). Read the version
			// again once it is back: another volctl may have migrated in between.
			ok, err := flockFile(s.lock, unix.LOCK_EX)
			if err != nil {
				return fmt.Errorf("open state %s: lock %s: %w", s.path, s.lock.Name(), err)
			}
			if !ok {
				// An older volctl stopped by a signal keeps it until resumed or ended: "stop
				// them" is no advice for a process stopped already
				// (TestMigrationBehindAStoppedOlderVolctlSaysHowToResumeIt).
				if d := watch.Look(time.Now()); d > 0 && (d >= s.stoppedWait || time.Now().After(deadline)) {
					return fmt.Errorf("open state %s: %w: the database is at schema version %d and this volctl would migrate it to %d, and the open lock it needs is %s",
						s.path, ErrInUse, version, target, stuckOpenHolders(watch.Holders(), d))
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("open state %s: %w%s: the database is at schema version %d and this volctl would migrate it to %d, under which an older volctl would go on writing as its own schema says: stop them (an agent, a dashboard) and run this again",
						s.path, ErrInUse, holders(s.lock), version, target)
				}
				if err := sleepCtx(ctx, backoff.Jitter(waits.Next())); err != nil {
					return fmt.Errorf("open state %s: interrupted while waiting for other volctl processes to close the state database to migrate it: %w", s.path, err)
				}
				continue
			}
		}
		// The open lock orders only the processes that locked the file at its path now: one
		// whose file was removed or replaced while it ran still has the database open, and was
		// migrated under (TestMigrationDoesNotRunUnderAnOlderVolctlWhoseOpenLockFileWasRemoved).
		// Looked for as SQLite's own locks show them, and waited for as a holder of the lock is.
		if hs := s.openers(); len(hs) > 0 {
			// Stopped by a signal, it keeps the database open until resumed or ended: said so,
			// once stopped for the stopped wait, as of the open lock's holders
			// (TestMigrationBehindAStoppedOlderVolctlWhoseOpenLockFileWasRemovedSaysHowToResumeIt).
			if d := openers.Look(time.Now()); d > 0 && (d >= s.stoppedWait || time.Now().After(deadline)) {
				return fmt.Errorf("open state %s: %w: the database is at schema version %d and this volctl would migrate it to %d, and it is open in a volctl whose open lock's file %s was removed or replaced while it ran, %s",
					s.path, ErrInUse, version, target, s.lock.Name(), stuckOpenHolders(openers.Holders(), d))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("open state %s: %w (%s, which has it open, its open lock on a file %s that was removed or replaced while it ran): the database is at schema version %d and this volctl would migrate it to %d, under which it would go on writing as its own schema says: stop it (an agent, a dashboard) and run this again",
					s.path, ErrInUse, LockHolders(hs), s.lock.Name(), version, target)
			}
			if err := sleepCtx(ctx, backoff.Jitter(waits.Next())); err != nil {
				return fmt.Errorf("open state %s: interrupted while waiting for other processes to close the state database to migrate it: %w", s.path, err)
			}
			continue
		}
		if err := s.migrate(ctx, target); err != nil {
			return err
		}
		if !locked {
			return nil
		}
	}
}

// readVersion is schemaVersion on a connection of p (the write pool unless ForReading), outside
// a transaction.
func (s *Store) readVersion(ctx context.Context, p *pool) (version, appID int, err error) {
	// Cut short by its context (Ctrl-C, the command's deadline), the read says so rather than
	// what the pool or SQLite's query answered ("read schema version: context canceled").
	interrupted := func() error {
		return fmt.Errorf("open state %s: interrupted while reading the state database's schema version, nothing written: %w", s.path, ctx.Err())
	}
	c, err := p.get(ctx, s.busyTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, interrupted()
		}
		return 0, 0, fmt.Errorf("open state %s: %w", s.path, mapBusy(err))
	}
	// The version alone here: outside a transaction, a schema read after it may already see
	// the tables of another volctl migrating the new file at this moment, whose version this
	// read did not. Whether an unmarked file is foreign is decided in migrate, under the lock.
	err = s.retry(ctx, func() (err error) {
		version, appID, err = schemaVersion(ctx, c.sc)
		return err
	})
	p.put(c)
	if err != nil && ctx.Err() != nil {
		return 0, 0, interrupted()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("open state %s: read schema version: %w", s.path, mapBusy(err))
	}
	return version, appID, nil
}

// migrate is migrateTo's write transaction, which checks the database again under the lock.
func (s *Store) migrate(ctx context.Context, target int) error {
	var refused error
	vacuumOwed := false
	err := s.Update(ctx, func(tx *Tx) error {
		// Another process may have migrated, or filled an empty file with its own tables, between
		// migrateTo's check and the lock.
		version, appID, names, err := inspect(ctx, tx.c.sc)
		if err != nil {
			return err
		}
		if refused = s.checkVersion(version, appID, names); refused != nil {
			return refused
		}
		from := version
		if version == 0 {
			// A new database: the schema file, then what was added since.
			at, err := schemaVersionOf(schemaFile)
			if err != nil {
				return err
			}
			if at <= target {
				if err := tx.execOnce(schemaFile); err != nil {
					return fmt.Errorf("schema.sql: %w", err)
				}
				from = at
			}
		}
		// A state made before debtVersion may hold deleted secrets in its free pages
		// (securedelete.go): the migration records the VACUUM owed, which Open pays.
		vacuumOwed = from < debtVersion && target >= debtVersion
		for _, m := range migrations[from:target] {
			sql, err := m.source()
			if err == nil {
				err = tx.execOnce(sql)
			}
			if step := goSteps[m.version]; err == nil && step != nil {
				err = step(tx)
			}
			if err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if tx.forgot && target >= debtVersion {
			// A step took secrets out of the state (0020: credentials in recorded Nomad
			// addresses): the WAL's truncation after this commit is a debt of the state, as
			// every commit that forgets one records it (securedelete.go), which Open pays and,
			// when a reader stops that too, any later process. Before, s.debts was not set yet
			// here: the wipe was owed only in this process's memory, and a reader holding a
			// snapshot across the migration and its Close left the WAL holding them for good
			// (TestMigrationsWALWipeIsADebtOfTheState).
			var d debts
			if err := tx.queryRow(markOwing, 1).Scan(&d.seq, &d.walSecrets, &d.vacuum); err != nil {
				return fmt.Errorf("record the WAL's wipe owed: %w", err)
			}
		}
		if version < target {
			// PRAGMA takes no bound parameters; both values are integers from this file.
			if err := tx.execOnce(fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
				return err
			}
			if err := tx.execOnce(fmt.Sprintf("PRAGMA user_version = %d", target)); err != nil {
				return err
			}
		}
		return nil
	})
	if refused != nil {
		return refused
	}
	if err != nil {
		return fmt.Errorf("open state %s: migrate schema: %w", s.path, err)
	}
	s.vacuumOwed = s.vacuumOwed || vacuumOwed
	return nil
}

// foreignAdvice is what to do about another program's SQLite file where volctl.db should be:
// volctl neither converts it nor starts a state over it.
const foreignAdvice = ": volctl neither converts it nor starts its state over it; move it out of the state dir, or use another --state-dir"

// refuseForeign refuses the database at path when its marks, or the names in an unmarked one's
// schema, say it is not volctl's; nil when they say it is, or that it is new (no marks, no names).
func refuseForeign(path string, version, appID int, names []string) error {
	if appID != 0 && appID != applicationID || appID == 0 && version != 0 {
		return fmt.Errorf("open state %s: not a volctl state database (application id %#x, schema version %d)%s", path, appID, version, foreignAdvice)
	}
	if len(names) == 0 {
		return nil
	}
	list := strings.Join(names[:min(len(names), shownNames)], ", ")
	if len(names) > shownNames {
		list += ", ..."
	}
	if appID == applicationID {
		// Taken for a new file, it had schema.sql run over its tables, and Open failed with
		// SQLite's "table plugins already exists" (TestStateWithItsSchemaVersionLostIsNamed).
		return fmt.Errorf("open state %s: the database is marked as volctl's, but its schema version reads 0 while it holds tables (%s): its header was damaged or changed by hand, "+
			"and volctl does not guess which version its tables are at; nothing was written: restore volctl.db from a backup", path, list)
	}
	return fmt.Errorf("open state %s: not a volctl state database (it holds other tables: %s)%s", path, list, foreignAdvice)
}

// checkVersion refuses a database that is not volctl's or is newer than this binary. names is
// what inspect found in an unmarked database's schema: only an empty one is volctl's to initialise.
func (s *Store) checkVersion(version, appID int, names []string) error {
	if err := refuseForeign(s.path, version, appID, names); err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("open state %s: %w: the database is at schema version %d, this volctl knows versions up to %d; upgrade volctl to use this state directory",
			s.path, ErrNewerSchema, version, len(migrations))
	}
	return nil
}
