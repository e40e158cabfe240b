package nginx

import (
	"fmt"
	"strings"
	"testing"
)

// TestRouteMapsChunked: a host whose match variables fit in one nginx
// token gets one route map; one with more gets chunks, none of whose
// sources is longer than nginx reads, and a last map that takes the first
// target of their concatenation.
func TestRouteMapsChunked(t *testing.T) {
	for _, n := range []int{3, 200, 1000} {
		sb := &serverBuilder{prefix: "gw_s1"}
		var vars, targets []string
		for i := range n {
			vars = append(vars, fmt.Sprintf("$gw_s1_m%d", i))
			targets = append(targets, fmt.Sprintf("@r_rule%d", i))
		}
		sb.routeMaps("$gw_s1_route", vars, targets)
		single := len(strings.Join(vars, "")) <= maxMapSource
		if single != (len(sb.maps) == 1) {
			t.Fatalf("%d matches: %d maps", n, len(sb.maps))
		}
		seen := 0
		for _, m := range sb.maps {
			if len(m.Args[0]) > 4096 {
				t.Errorf("%d matches: map source of %d bytes", n, len(m.Args[0]))
			}
			if m.Args[1] != "$gw_s1_route" {
				// A chunk: entries ~^0{i}1 in order, then default "".
				for _, e := range m.Block[:len(m.Block)-1] {
					if e.Args[0] != targets[seen] {
						t.Fatalf("%d matches: chunk entry %s -> %s, want %s", n, e.Directive, e.Args[0], targets[seen])
					}
					seen++
				}
				if d := m.Block[len(m.Block)-1]; d.Directive != "default" || d.Args[0] != "" {
					t.Errorf("%d matches: chunk default %v", n, d)
				}
			}
		}
		last := sb.maps[len(sb.maps)-1]
		if last.Args[1] != "$gw_s1_route" || last.Block[len(last.Block)-1].Args[0] != noRoute {
			t.Errorf("%d matches: last map %v", n, last.Args)
		}
		if !single && (seen != n || last.Block[0].Directive != "~^(@[^@]+)" || last.Block[0].Args[0] != "$1") {
			t.Errorf("%d matches: %d chunk entries, last map %s %v", n, seen, last.Block[0].Directive, last.Block[0].Args)
		}
	}
}
