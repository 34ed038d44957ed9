package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agext/levenshtein"
	"golang.org/x/text/unicode/norm"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// idWhat names each table's keys in errors.
var idWhat = map[store.IDTable]string{store.VolumeIDs: "volume", store.PluginIDs: "plugin", store.GroupNames: "group",
	store.EventVolumeIDs: "volume", store.EventAllocs: "alloc", store.EventPluginIDs: "plugin"}

// byStoredID runs op with an ID as given (the command line reads typed IDs in NFC, cli.typedID)
// and, only when that finds nothing, with the ID as an older volctl stored it in another
// normal form (it stored IDs as typed: "cafe\u0301" for "café"), so that such a volume, plugin
// or group is still named by what anyone types. The stored ID is used as it is, never renamed:
// its lock file, staging and target paths derive from it. The common path, an ID found as
// given, costs nothing more; a miss costs one read of the table's keys (storedForm).
func byStoredID[T any](ctx context.Context, e *Engine, t store.IDTable, id string, op func(id string) (T, error)) (T, error) {
	r, err := op(id)
	if err == nil || !errors.Is(err, ErrNotFound) && !errors.Is(err, store.ErrNotFound) || IsGoneMeanwhile(err) {
		return r, err // found as given, a moment before (IsGoneMeanwhile): no other form to look for
	}
	stored, ferr := viewOne(ctx, e.store, func(tx *store.Tx) (string, error) { return storedForm(tx, t, id) })
	if ferr != nil {
		var zero T
		return zero, ferr
	}
	if stored == "" {
		return r, nearStoredID(ctx, e, t, id, err)
	}
	return op(stored)
}

// nearStoredID is err, a not-found of id in table t, naming the stored key the user likely
// meant when there is one: the same but for case (IDs differing only in case are distinct on
// the host, and `volume status Data` for "data" is the usual slip), else the nearest by edit
// distance, as the spec validator suggests names (spec.Suggest), but not one with every
// character changed. Before, the error said only "not found" (TestNotFoundNamesTheNearestID).
// When id itself is stored, what was not found is something else (a claim): err as it is. A
// failure to read the keys leaves err as it is too. An id not stored whose record the event log
// says ended here is said so instead (endedHere).
func nearStoredID(ctx context.Context, e *Engine, t store.IDTable, id string, err error) error {
	if !errors.Is(err, ErrNotFound) && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	keys, kerr := storedKeys(ctx, e, t)
	if kerr != nil || slices.Contains(keys, id) {
		// Stored: what was not found is something else (a claim), and an end of an earlier
		// volume of that ID is not this one's (TestNotFoundOfAVolumeDeletedHereSaysWhen).
		return err
	}
	if ended := e.endedHere(ctx, t, id); ended != "" {
		return &hereNotFound{err: fmt.Errorf("%w (%s)", err, ended)}
	}
	if near := nearAmong(id, keys); len(near) > 0 {
		return fmt.Errorf("%w (did you mean %s?)", err, orList(near))
	}
	return err
}

// endingKinds are the events that end the record of a volume or a plugin: a not-found of one
// of their IDs looks for the last of them (endedHere).
var endingKinds = map[store.IDTable][]string{
	store.VolumeIDs: {"volume-delete", "volume-deregister"},
	store.PluginIDs: {"plugin-deregister"},
}

// endedHere says, of a volume or plugin id not found in table t, when and how its record ended
// here, from the last event that ends one (endingKinds): "the event log says, 3m ago:
// volume "db" deleted"; "" when the log has none (never here, or longer ago than the log
// keeps), or cannot be read. A command on a volume another volctl, the agent or a script
// deleted or deregistered (three releases at once, the losers reading after the winner's
// commit) said only "not found", and that volctl may have looked in another state dir
// (TestNotFoundOfAVolumeDeletedHereSaysWhen).
func (e *Engine) endedHere(ctx context.Context, t store.IDTable, id string) string {
	var filters []store.EventFilter
	for _, k := range endingKinds[t] {
		f := store.EventFilter{Kind: k, VolumeID: id}
		if t == store.PluginIDs {
			f = store.EventFilter{Kind: k, PluginID: id}
		}
		filters = append(filters, f)
	}
	return e.lastEnding(ctx, filters, 1, nil)
}

// lastEnding says when and how the newest event matched by filters (each read up to limit
// events back, and matched by match when it is not nil) ended a record: "the event log says,
// 3m ago: volume "db" deleted"; "" when none does or the log cannot be read.
func (e *Engine) lastEnding(ctx context.Context, filters []store.EventFilter, limit int, match func(store.Event) bool) string {
	if len(filters) == 0 {
		return ""
	}
	last, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Event, error) { return lastEndingIn(tx, filters, limit, match) })
	if err != nil {
		return ""
	}
	return e.endingWords(last)
}

// endingWords is lastEnding's words of the event last, "" when it is none (ID 0).
func (e *Engine) endingWords(last store.Event) string {
	if last.ID == 0 {
		return ""
	}
	return fmt.Sprintf("the event log says, %s: %s", display.Ago(e.cfg.Now(), last.At), last.Message)
}

// lastEndingIn is lastEnding's event, read in tx: the zero Event when none matches.
func lastEndingIn(tx *store.Tx, filters []store.EventFilter, limit int, match func(store.Event) bool) (store.Event, error) {
	var last store.Event
	for _, f := range filters {
		evs, err := tx.Events().Recent(limit, f)
		if err != nil {
			return last, err
		}
		for _, ev := range evs { // newest first
			if match == nil || match(ev) {
				if ev.ID > last.ID {
					last = ev
				}
				break
			}
		}
	}
	return last, nil
}

// hereNotFound is a not-found whose missing thing belongs to this state dir: a volume, plugin
// or snapshot whose record the event log says ended here (Engine.endedHere,
// snapshotEndedHere), or a plugin a volume recorded here names (checkPublishable). No other
// state dir is to be looked in for it (IsNotFoundHere).
type hereNotFound struct{ err error }

func (x *hereNotFound) Error() string { return x.err.Error() }
func (x *hereNotFound) Unwrap() error { return x.err }

// IsNotFoundHere says err is a not-found of what belongs to this state dir (hereNotFound): the
// command's advice does not send the user to other state dirs for it.
func IsNotFoundHere(err error) bool { return errors.As(err, new(*hereNotFound)) }

// nearKeys is the keys of table t the user likely meant by id, which is not one of them
// (nearStoredID's rule); none when id is one.
func nearKeys(ctx context.Context, e *Engine, t store.IDTable, id string) ([]string, error) {
	keys, err := storedKeys(ctx, e, t)
	if err != nil {
		return nil, err
	}
	return nearAmong(id, keys), nil
}

// storedKeys is table t's keys, read in a view of their own.
func storedKeys(ctx context.Context, e *Engine, t store.IDTable) ([]string, error) {
	return viewOne(ctx, e.store, func(tx *store.Tx) ([]string, error) { return tx.Keys(t) })
}

// nearAmong is the keys the user likely meant by id (nearStoredID's rule): those equal to it
// but for case, else the nearest by edit distance but not one with every character changed;
// none when id is one of keys.
func nearAmong(id string, keys []string) []string {
	var folded []string
	for _, k := range keys {
		if k == id {
			return nil
		}
		if strings.EqualFold(k, id) {
			folded = append(folded, k)
		}
	}
	if len(folded) > 0 {
		return folded
	}
	near := spec.Suggest(id, keys)
	if near == "" {
		return nil
	}
	dist := levenshtein.Distance(id, near, nil)
	if dist >= utf8.RuneCountInString(id) {
		return nil // every character changed: "db" is no typo of "x"
	}
	return equallyNear(id, near, dist, keys)
}

// equallyNear is near and every other key as near to id as it, dist edits: `volume delete
// data` with data1 and data2 stored said `did you mean "data1"?`, the first of them, as if it
// were the one, and the user retyping it deleted a volume chosen by volctl's order
// (TestNotFoundNamesEveryIDAsNear).
func equallyNear(id, near string, dist int, keys []string) []string {
	out := []string{near}
	n := utf8.RuneCountInString(id)
	for _, k := range keys {
		if d := n - utf8.RuneCountInString(k); k == near || d > dist || -d > dist {
			continue // no key whose length differs by more than dist is as near
		}
		if levenshtein.Distance(id, k, nil) == dist {
			out = append(out, k)
		}
	}
	return out
}

// maxNearIDs is how many IDs a not-found error offers, the rest counted.
const maxNearIDs = 5

// orList is IDs quoted, joined for "did you mean ...?": "a", "a" or "b", "a", "b" or "c", and
// past maxNearIDs, "... or one of N more".
func orList(ids []string) string {
	q := make([]string, 0, min(len(ids), maxNearIDs))
	for _, id := range ids[:min(len(ids), maxNearIDs)] {
		q = append(q, strconv.Quote(id))
	}
	if more := len(ids) - len(q); more > 0 {
		return strings.Join(q, ", ") + fmt.Sprintf(" or one of %d more", more)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// storedForm returns the one stored key of a table that is id in another normal form, or ""
// when there is none or id itself is stored (what was not found is something else). Two such
// keys are an error naming both: volctl cannot tell which one is meant.
func storedForm(tx *store.Tx, t store.IDTable, id string) (string, error) {
	return storedFormAfter(tx, t, id, 0)
}

// storedFormAfter is storedForm among the events after afterID, for an event log column
// (store.Tx.SameInNFC).
func storedFormAfter(tx *store.Tx, t store.IDTable, id string, afterID int64) (string, error) {
	if !mayHaveOtherForm(id) {
		return "", nil
	}
	same, err := tx.SameInNFC(t, id, afterID)
	if err != nil {
		return "", err
	}
	for _, s := range same {
		if s == id {
			return "", nil
		}
	}
	switch len(same) {
	case 0:
		return "", nil
	case 1:
		return same[0], nil
	}
	quoted := make([]string, len(same))
	for i, s := range same {
		quoted[i] = fmt.Sprintf("%+q", s)
	}
	return "", invalidf("%s %q names %d stored %ss that differ only in Unicode normalisation (%s): volctl cannot tell which one is meant",
		idWhat[t], id, len(same), idWhat[t], strings.Join(quoted, " and "))
}

// mayHaveOtherForm reports whether another string can have id's NFC form: not so for ASCII
// without the three characters a non-ASCII one normalises to (U+212A KELVIN SIGN to "K", U+037E
// GREEK QUESTION MARK to ";", U+1FEF GREEK VARIA to "`"; TestOnlyThreeRunesNormaliseToASCII),
// which spares the usual ID the read of every key.
func mayHaveOtherForm(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c >= 0x80 || c == 'K' || c == ';' || c == '`' {
			return true
		}
	}
	return false
}

// storedAsError is what a registration or create finds when the ID it is about to insert is
// stored in another normal form (storedForm): bySpecID runs it again on the stored ID, so that
// a spec (read in NFC) names the volume an older volctl stored decomposed, rather than add a
// second volume that differs from it only in normalisation (for a create, a second one on the
// storage).
type storedAsError struct{ stored string }

func (e *storedAsError) Error() string { return fmt.Sprintf("stored as %+q", e.stored) }

// notStoredOtherwise is nil when id may be inserted: no other normal form of it is stored. It
// is called only on the insert path, after a lookup of id found nothing.
func notStoredOtherwise(tx *store.Tx, t store.IDTable, id string) error {
	stored, err := storedForm(tx, t, id)
	if err != nil || stored == "" {
		return err
	}
	return &storedAsError{stored: stored}
}

// bySpecID runs op with a spec's ID and, when op found it stored in another normal form
// (storedAsError), again with the ID as stored.
func bySpecID[T any](id string, op func(id string) (T, error)) (T, error) {
	r, err := op(id)
	var sa *storedAsError
	if errors.As(err, &sa) {
		return op(sa.stored)
	}
	return r, err
}

// sameInNFC reports whether a string as stored is the text given: the same string, or the same
// in Unicode normal form C, as an older volctl stored what was typed ("e" U+0301 for "é").
func sameInNFC(stored, given string) bool {
	return stored == given || norm.NFC.String(stored) == norm.NFC.String(given)
}
