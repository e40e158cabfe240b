package translate

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestInOrder: outputs are handed on in index order whatever order they
// finish in, at most window are held at once, and the first error in index
// order stops it, whichever failed first.
func TestInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	tests := []struct {
		name     string
		n        int
		window   int
		failGen  int // -1: none
		failThen int // -1: none
		want     string
		handed   int // how many then is called for
	}{
		{name: "all", n: 7, window: 3, failGen: -1, failThen: -1, handed: 7},
		{name: "window 1", n: 4, window: 1, failGen: -1, failThen: -1, handed: 4},
		{name: "wide window", n: 5, window: 9, failGen: -1, failThen: -1, handed: 5},
		{name: "gen fails", n: 6, window: 3, failGen: 3, failThen: -1, want: "gen 3", handed: 3},
		{name: "first gen fails", n: 6, window: 3, failGen: 0, failThen: -1, want: "gen 0", handed: 0},
		{name: "then fails", n: 6, window: 3, failGen: -1, failThen: 2, want: "then 2", handed: 3},
		{name: "then fails before gen", n: 6, window: 3, failGen: 4, failThen: 1, want: "then 1", handed: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			held, maxHeld := 0, 0
			var handed []int
			err := inOrder(tt.n, tt.window, func(i int) (*Output, error) {
				mu.Lock()
				held++
				maxHeld = max(maxHeld, held)
				mu.Unlock()
				// The earlier an index, the longer it takes: they finish
				// out of order.
				time.Sleep(time.Duration(tt.n-i) * 2 * time.Millisecond)
				if i == tt.failGen {
					return nil, fmt.Errorf("gen %d", i)
				}
				return &Output{Notes: []Note{{Text: fmt.Sprint(i)}}}, nil
			}, func(i int, out *Output) error {
				mu.Lock()
				held--
				mu.Unlock()
				if out.Notes[0].Text != fmt.Sprint(i) {
					t.Errorf("then(%d) got the output of %s", i, out.Notes[0].Text)
				}
				handed = append(handed, i)
				if i == tt.failThen {
					return fmt.Errorf("then %d", i)
				}
				return nil
			})
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			for i, h := range handed {
				if h != i {
					t.Fatalf("handed on in order %v", handed)
				}
			}
			if len(handed) != tt.handed {
				t.Errorf("handed on %v, want %d", handed, tt.handed)
			}
			if maxHeld > tt.window {
				t.Errorf("%d outputs held at once, window %d", maxHeld, tt.window)
			}
		})
	}
}
