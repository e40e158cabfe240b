package haproxy

import (
	"math"

	"github.com/gwretry/gwretry/translate"
)

// maxServerWeight is HAProxy's largest server weight.
const maxServerWeight = 256

// serverWeights spreads each backendRef's weight over its endpoints so that
// every backendRef gets its share of the traffic (weight / sum of weights)
// whatever its number of endpoints. It returns one weight per endpoint, in
// backendRef then endpoint order, and whether the exact ratios had to be
// rounded to fit HAProxy's 0..256 range.
func serverWeights(refs []*translate.BackendRef) (weights [][]int64, rounded bool) {
	// Exact integer weights: ref weight × L / endpoints, L the least
	// common multiple of the endpoint counts.
	l := int64(1)
	for _, b := range refs {
		if b.Weight > 0 && len(b.Endpoints) > 0 {
			l = lcm(l, int64(len(b.Endpoints)))
		}
	}
	exact := make([][]float64, len(refs))
	var g int64
	maxW := 0.0
	for i, b := range refs {
		exact[i] = make([]float64, len(b.Endpoints))
		for j := range b.Endpoints {
			w := float64(max(b.Weight, 0)) * float64(l) / float64(len(b.Endpoints))
			exact[i][j] = w
			g = gcd(g, int64(w))
			maxW = max(maxW, w)
		}
	}
	scale := 1.0
	if g > 1 {
		scale = 1 / float64(g)
	}
	if maxW*scale > maxServerWeight {
		scale = maxServerWeight / maxW
		rounded = true
	}
	weights = make([][]int64, len(refs))
	for i := range refs {
		weights[i] = make([]int64, len(exact[i]))
		for j, w := range exact[i] {
			v := int64(math.Round(w * scale))
			if w > 0 && v == 0 {
				v = 1 // a positive weight must keep some traffic
			}
			if float64(v) != w*scale {
				rounded = true
			}
			weights[i][j] = v
		}
	}
	return weights, rounded
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 {
	l := a / gcd(a, b) * b
	if l > 1<<40 {
		return 1 << 40 // many distinct endpoint counts: ratios get rounded
	}
	return l
}
