package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress shows, on a terminal's stderr, which step a long translate is
// at: nothing for the first second, then one line rewritten in place
// every half second, erased when translate ends. Nothing is written when
// stderr is not a terminal, so logs and tests see no progress.
type progress struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
	step  string
	shown bool
	stop  chan struct{}
	done  chan struct{}
}

// startProgress starts the progress line on w if it is a terminal; the
// returned progress is nil (and its methods do nothing) otherwise.
func startProgress(c console, w io.Writer, after time.Duration) *progress {
	if c.isTerminal == nil || !c.isTerminal(w) {
		return nil
	}
	p := &progress{w: w, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop(after)
	return p
}

func (p *progress) loop(after time.Duration) {
	defer close(p.done)
	select {
	case <-p.stop:
		return
	case <-time.After(after):
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		p.show()
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\x1b[Kgwretry: %s (%.0fs)", p.step, time.Since(p.start).Seconds())
	p.shown = true
}

// set names the step translate is at.
func (p *progress) set(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.step = fmt.Sprintf(format, args...)
	p.mu.Unlock()
}

// end stops the line and erases it, before anything else goes to stderr.
func (p *progress) end() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
