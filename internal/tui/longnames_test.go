package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// longFixture is the fixture with a volume, a plugin, an alloc and a group named with 300
// characters, wide ones among them.
func longFixture() *fakeEngine {
	f := fixture()
	vol := strings.Repeat("数据", 50) + strings.Repeat("v", 200)
	plug := strings.Repeat("插件", 50) + strings.Repeat("p", 200)
	alloc := strings.Repeat("分配", 50) + strings.Repeat("a", 200)
	group := strings.Repeat("组", 100) + strings.Repeat("g", 200)
	for i := range f.data.Volumes {
		if f.data.Volumes[i].ID == "mysql-0" {
			f.data.Volumes[i].ID = vol
		}
		if f.data.Volumes[i].PluginID == "hostpath" {
			f.data.Volumes[i].PluginID = plug
		}
	}
	for i := range f.data.Claims {
		if f.data.Claims[i].VolumeID == "mysql-0" {
			f.data.Claims[i].VolumeID, f.data.Claims[i].Alloc, f.data.Claims[i].Group = vol, alloc, group
		}
	}
	for i := range f.data.Plugins {
		if f.data.Plugins[i].ID == "hostpath" {
			f.data.Plugins[i].ID = plug
		}
	}
	for i := range f.data.Events {
		e := &f.data.Events[i]
		if e.VolumeID == "mysql-0" {
			e.VolumeID, e.Alloc = vol, alloc
		}
		if e.PluginID == "hostpath" {
			e.PluginID = plug
		}
		e.Message = strings.ReplaceAll(strings.ReplaceAll(e.Message, "mysql-0", vol), "hostpath", plug)
	}
	f.data.Groups[0].Name = group
	f.data.Groups[0].Allocs[0].Name = alloc
	v := f.volumes["mysql-0"]
	v.ID, v.PluginID = vol, plug
	delete(f.volumes, "mysql-0")
	f.volumes[vol] = v
	return f
}

// TestLongNamesInEveryViewAndSize: names of 300 characters, wide ones among them, in every
// view, detail, dialog and the help, on screens from the smallest the dashboard draws to 200
// columns, and below it: every frame is exactly the screen, no line wider.
func TestLongNamesInEveryViewAndSize(t *testing.T) {
	screens := [][]string{
		{}, {"enter"}, {"enter", "G"}, {"?"}, {"x"}, {"D"}, {"F"}, {"d"}, {"R"}, {"/", "数"},
		{"2"}, {"2", "enter"}, {"2", "x"}, {"2", "s"}, {"2", "s", "s"},
		{"3"}, {"3", "enter"}, {"3", "s", "s"},
		{"4"}, {"4", "s"}, {"4", "s", "s"}, {"4", "s", "s", "s"},
		{"5"}, {"5", "enter"}, {"5", "s", "s"},
	}
	for _, size := range [][2]int{{20, 5}, {39, 9}, {40, 10}, {40, 24}, {41, 12}, {42, 24}, {80, 24}, {120, 40}} {
		for _, keys := range screens {
			name := fmt.Sprintf("%dx%d %v", size[0], size[1], keys)
			h := newHarness(t, longFixture(), Options{})
			h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			h.keys(keys...)
			out := h.m.View()
			t.Run(name, func(t *testing.T) {
				if size[0] >= minWidth && size[1] >= minHeight {
					checkScreen(t, out, size[0], size[1])
				} else {
					if n := strings.Count(out, "\n") + 1; n > size[1] {
						t.Errorf("%d lines on a screen of %d", n, size[1])
					}
					for i, l := range strings.Split(out, "\n") {
						if w := ansi.StringWidth(l); w > size[0] {
							t.Errorf("line %d is %d cells wide, more than %d", i+1, w, size[0])
						}
					}
				}
				if t.Failed() {
					t.Logf("\n%s", out)
				}
			})
		}
	}
}

// TestResizeStorm: a terminal dragged through sizes (a tiling window manager, a tmux pane
// zoomed in and out) with a dialog, a detail or a filter open and the sort moved: every frame
// is the screen's size, and the sort the user chose comes back at the size it was chosen at.
func TestResizeStorm(t *testing.T) {
	sizes := [][2]int{{80, 24}, {20, 5}, {40, 10}, {200, 50}, {41, 11}, {0, 0}, {39, 24}, {120, 9}, {42, 24}, {80, 24}}
	for _, keys := range [][]string{{"4", "s", "s"}, {"enter"}, {"2", "x"}, {"/", "数"}, {"3", "s", "s", "s", "S"}, {"?"}} {
		h := newHarness(t, longFixture(), Options{})
		h.keys(keys...)
		tb := h.m.tabs[h.m.active]
		sorted, desc := tb.cols[tb.sortCol].title, tb.desc
		for round := range 3 {
			for _, s := range sizes {
				h.send(tea.WindowSizeMsg{Width: s[0], Height: s[1]})
				out := h.m.View()
				if s[0] >= minWidth && s[1] >= minHeight {
					checkScreen(t, out, s[0], s[1])
				} else if s[0] > 0 {
					for i, l := range strings.Split(out, "\n") {
						if w := ansi.StringWidth(l); w > s[0] {
							t.Errorf("%v, round %d, %dx%d: line %d is %d cells wide", keys, round, s[0], s[1], i+1, w)
						}
					}
				}
			}
			if got := tb.cols[tb.sortCol].title; got != sorted || tb.desc != desc {
				t.Errorf("%v, round %d: back at 80x24 sorted by %s (desc %v), want %s (desc %v)", keys, round, got, tb.desc, sorted, desc)
			}
		}
	}
}
