package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
)

// The views (tabs) of the dashboard come from one registry, as soft-serve's panes do: a view
// is its name, columns, rows, empty state, detail and the action keys its rows take. A new view
// is one entry in views plus the engine query its rows come from (snapshot, read in
// refresh.go); its key is its place in the list.

// snapshot is one refresh's data: the engine's dashboard read (one read transaction). A view
// whose rows need more adds its query here.
type snapshot struct {
	engine.Dashboard
}

// view is one tab.
type view struct {
	name    string // in the tab bar and the help
	columns []column
	empty   string // what the table says without rows
	// rows formats the view's rows from a snapshot, off the UI goroutine.
	rows func(s snapshot, now time.Time) []row
	// open names the detail of a row and returns the command that loads it, nil when the
	// snapshot has it all (then refresh shows it).
	open func(m *Model, r *row) (title string, load tea.Cmd)
	// refresh shows an open detail from the snapshot (or loads it again).
	refresh func(m *Model, d *detail) tea.Cmd
	// keys are the action keys the footer offers for the selected row; nil: none.
	keys func(m *Model) []key.Binding
}

// tabID is a view's place in views. The constants name the views that code outside the
// registry acts on (actions target volumes and claims).
type tabID int

const (
	tabVolumes tabID = iota
	tabClaims
	tabPlugins
	tabEvents
	tabGroups
)

var (
	views    []view
	tabNames []string
	numTabs  tabID
)

func init() {
	views = []view{
		{name: "Volumes", columns: volumeColumns(),
			empty: "no volumes yet: `volctl volume register FILE` or `volctl volume create FILE` adds one",
			rows:  func(s snapshot, _ time.Time) []row { return volumeRows(s.Volumes, s.Plugins) },
			open: func(m *Model, r *row) (string, tea.Cmd) {
				return "Volume " + m.data.Volumes[r.ref].ID, m.loadVolume(r.key)
			},
			refresh: func(m *Model, d *detail) tea.Cmd { return m.loadVolume(d.key) },
			keys:    func(m *Model) []key.Binding { return m.volumeKeys(false) },
		},
		{name: "Claims", columns: claimColumns(),
			empty: "no live claims: `volctl volume claim ID --alloc NAME` makes one",
			rows:  func(s snapshot, now time.Time) []row { return claimRows(s.Claims, now) },
			open: func(m *Model, r *row) (string, tea.Cmd) {
				c := m.data.Claims[r.ref]
				return fmt.Sprintf("Claim of alloc %s on volume %s", c.Alloc, c.VolumeID), nil
			},
			refresh: func(m *Model, d *detail) tea.Cmd {
				now, s := m.c.Now(), m.c.Styles
				for _, c := range m.data.Claims {
					if strconv.FormatInt(c.ID, 10) == d.key {
						d.claim = &c
						d.show(func(w int) string { return claimDetail(s, c, now, w) })
						return nil
					}
				}
				d.gone("this claim is no longer live (released)")
				return nil
			},
			keys: func(m *Model) []key.Binding { return []key.Binding{m.c.Keys.Release} },
		},
		{name: "Plugins", columns: pluginColumns(),
			empty: "no plugins registered: `volctl plugin register FILE` adds one",
			rows:  func(s snapshot, _ time.Time) []row { return pluginRows(s.Plugins) },
			open:  func(m *Model, r *row) (string, tea.Cmd) { return "Plugin " + m.data.Plugins[r.ref].ID, nil },
			refresh: func(m *Model, d *detail) tea.Cmd {
				now, s := m.c.Now(), m.c.Styles
				for _, p := range m.data.Plugins {
					if p.Key() == d.key {
						d.show(func(w int) string { return pluginDetail(s, p, now, w) })
						return nil
					}
				}
				d.gone(fmt.Sprintf("plugin %q is no longer registered", d.name))
				return nil
			},
		},
		{name: "Events", columns: eventColumns(), empty: "no events yet",
			rows: func(s snapshot, now time.Time) []row { return eventRows(s.Events, now) },
			open: func(m *Model, r *row) (string, tea.Cmd) {
				return "Event " + r.key + ": " + m.data.Events[r.ref].Kind, nil
			},
			refresh: func(m *Model, d *detail) tea.Cmd {
				now, s := m.c.Now(), m.c.Styles
				for _, e := range m.data.Events {
					if strconv.FormatInt(e.ID, 10) == d.key {
						d.show(func(w int) string { return eventDetail(s, e, now, w) })
						return nil
					}
				}
				d.gone("this event has left the recent events")
				return nil
			},
		},
		{name: "Groups", columns: groupColumns(),
			empty: "no groups: `volctl group run FILE` runs one",
			rows:  func(s snapshot, _ time.Time) []row { return groupRows(s.Groups) },
			open:  func(m *Model, r *row) (string, tea.Cmd) { return "Group " + m.data.Groups[r.ref].Name, nil },
			refresh: func(m *Model, d *detail) tea.Cmd {
				s := m.c.Styles
				for _, g := range m.data.Groups {
					if g.Key() == d.key {
						d.show(func(w int) string { return groupDetail(s, g, w) })
						return nil
					}
				}
				d.gone(fmt.Sprintf("group %q is no longer recorded", d.name))
				return nil
			},
		},
	}
	numTabs = tabID(len(views))
	for _, v := range views {
		tabNames = append(tabNames, v.name)
	}
}

// buildRows formats every view's rows from one read. It runs in the read's command, off the UI
// goroutine: with 10,000 volumes and claims it is the costly part of a refresh.
func buildRows(s snapshot, now time.Time) []rowSet {
	out := make([]rowSet, len(views))
	for i, v := range views {
		out[i] = newRowSet(v.columns, v.rows(s, now))
	}
	return out
}

func groupColumns() []column {
	return []column{
		{title: "GROUP", min: 8, max: 30},
		{title: "STATE", min: 7, max: 9},
		{title: "ALLOCS", min: 6, max: 6, numeric: true, right: true, drop: 2},
		{title: "CLAIMS", min: 6, max: 6, numeric: true, right: true, drop: 1},
		{title: "VOLUMES", min: 10, max: 60, squeeze: 1, drop: 3},
		{title: "LAST ERROR", min: 16, max: 400, fill: true},
	}
}

func groupRows(gs []engine.GroupInfo) []row {
	return rowsOf(gs, func(i int, g engine.GroupInfo) row {
		claims, vols, errs, ready := 0, []string{}, []string{}, 0
		seen := map[string]bool{}
		for _, a := range g.Allocs {
			claims += len(a.Claims)
			if g.Ready(a) {
				ready++
			}
			for _, c := range a.Claims {
				if !seen[c.VolumeID] {
					seen[c.VolumeID] = true
					vols = append(vols, c.VolumeID)
				}
			}
			if a.Error != "" {
				errs = append(errs, a.Name+": "+a.Error)
			}
		}
		r := newRow(g.Key(), i, []string{g.Name, g.State, strconv.Itoa(len(g.Allocs)), strconv.Itoa(claims),
			strings.Join(vols, ", "), strings.Join(errs, "; ")})
		r.nums[2], r.nums[3] = int64(len(g.Allocs)), int64(claims)
		switch {
		case len(errs) > 0:
			r.tone = toneBad
		case g.State == "running" && ready < g.Count, claims > 0 && ready < len(g.Allocs):
			// An alloc not ready, as `group status` counts it (engine.GroupInfo.Ready): one
			// lacking a volume, a claim not at rest, claims left past the count or by a stop
			// cut short.
			r.tone = toneWarn
		case g.State != "running":
			r.tone = toneDim
		}
		return r
	})
}

func groupDetail(s *Styles, g engine.GroupInfo, w int) string {
	var b detailBuilder
	b.init(s, w)
	b.kv("Name", g.Name)
	b.kv("State", g.State)
	b.kv("Count", strconv.Itoa(g.Count))
	b.section("Allocs")
	rows := [][]string{{"ALLOC", "VOLUMES", "ERROR"}}
	for _, a := range g.Allocs {
		var vols []string
		for _, c := range a.Claims {
			vols = append(vols, c.VolumeID+" ("+c.Mode+", "+c.Condition().String()+")")
		}
		for _, vol := range a.Missing { // a run cut short between the alloc's claims
			// Or one that refused it, which the error says with what works: "run it again"
			// was refused the same way (as group status says it,
			// TestGroupDetailOfAVolumeARunRefusedDoesNotAdviseRunningAgain).
			// The run's error alone: a bind gone beside it is another volume's, and its
			// advice claims nothing (TestGroupStatusDoesNotGiveAMissingVolumeAnotherVolumesBindProblem).
			if a.RunError != "" {
				vols = append(vols, vol+" (missing)")
				continue
			}
			vols = append(vols, vol+s.advised(" (missing: `volctl group run FILE` of its spec again)"))
		}
		errText := a.Error
		if len(a.Claims) > 0 && g.Lacks(a) {
			// A stop or scale-down killed before it released them (engine.GroupInfo.Lacks).
			errText = s.advised("no longer the group's: its claims are left for `volctl reconcile` to release")
			// Or one whose release failed: why, as its claims' records say it (a cover: its
			// umount first), as group status says it; "reconcile releases them" sent the user to
			// a reconcile that failed the same way
			// (TestGroupDetailOfAPastAllocWhoseReleaseFailedSaysWhy).
			var failed []string
			for _, c := range a.Claims {
				if text := c.LastErrorText(); text != "" {
					failed = append(failed, text)
				}
			}
			if len(failed) > 0 {
				errText = s.advised("no longer the group's, and its release failed: " + strings.Join(failed, "; "))
			}
		}
		rows = append(rows, []string{a.Name, strings.Join(vols, ", "), errText})
	}
	b.tableOrNone(rows, errorLast)
	return b.String()
}
