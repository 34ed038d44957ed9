package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// progressTick is how often the elapsed time of the current step is redrawn.
const progressTick = 100 * time.Millisecond

// progress shows, on one line of stderr that it redraws, the step a slow operation is in and
// for how long: "NodeStageVolume… 2.1s". It draws only on a terminal and never with machine
// output (--json, -t), so scripts and logs see nothing of it. The line is erased when the
// operation ends, before anything else is printed.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	width  int
	now    func() time.Time
	step   string
	start  time.Time
	drawn  int // cells on the line now
	ended  bool
	stop   chan struct{}
	exited chan struct{}
}

// startProgress returns ctx with the engine's progress reported to a progress line when stderr
// is a terminal and machine is false, and a function that erases the line; call it (defer it)
// before printing the result.
func startProgress(ctx context.Context, ios *iostreams.IOStreams, machine bool) (context.Context, func()) {
	if machine || !ios.IsStderrTTY() {
		return ctx, func() {}
	}
	p := &progress{w: ios.ErrOut, width: ios.TerminalWidth(), now: time.Now,
		stop: make(chan struct{}), exited: make(chan struct{})}
	crash.Go(p.tick)
	return engine.WithProgress(ctx, p.enter), p.end
}

// enter starts a step and draws it at once.
func (p *progress) enter(step string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.step, p.start = step, p.now()
	p.draw()
}

func (p *progress) tick() {
	defer close(p.exited)
	t := time.NewTicker(progressTick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.step != "" && !p.ended {
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

// draw rewrites the line; the caller holds mu. Carriage return and spaces, no escape
// sequences, so that it works on any terminal; cut to the width so that it never wraps. The
// step is escaped as any table cell is (display.Escape): it may quote words volctl did not
// write, a lock holder's command line read from /proc, which another user's process may give
// any bytes. Before, they went to the terminal raw, redrawn every tick: an escape sequence in
// a file name retitled the window or cleared the screen
// (TestProgressLineEscapesTheLockHoldersCommand).
func (p *progress) draw() {
	line := fmt.Sprintf("%s… %.1fs", display.Escape(p.step), p.now().Sub(p.start).Seconds())
	// In cells, not runes: a CJK volume ID takes two a character, and a line wider than the
	// terminal wraps, where the carriage return no longer reaches its start.
	if p.width > 1 {
		line = display.Truncate(line, p.width-1, "…")
	}
	n := display.Width(line)
	fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", max(0, p.drawn-n)))
	p.drawn = n
}

// end stops the redrawing and erases the line.
func (p *progress) end() {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	if p.drawn > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.drawn)+"\r")
		p.drawn = 0
	}
	p.mu.Unlock()
	close(p.stop)
	<-p.exited
}
