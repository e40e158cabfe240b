package report

import (
	"encoding/binary"
	"maps"
	"slices"
)

// Interner shares the parameters and caveats of the decisions it is
// given: a report of 10,000 routes holds about 600,000 findings on seven
// targets whose decisions repeat a few hundred distinct parameter sets
// and caveat lists (issue 22), each a map or a slice of maps of its own
// as the planners build them. Decisions are values and nothing changes a
// Params map or a Caveats slice once decided (Decision.With copies), so
// findings may share them. The zero Interner is not ready: use
// NewInterner. It is not safe for concurrent use.
type Interner struct {
	params  map[string]Params
	caveats map[string][]Caveat
	strs    map[string]string
	key     []byte
	// decisions are those given to Index, each once, and index their
	// positions by their keys (dkey: appendDecision's).
	decisions []Decision
	index     map[string]int
	dkey      []byte
}

// NewInterner returns an Interner that shares nothing yet.
func NewInterner() *Interner {
	return &Interner{params: map[string]Params{}, caveats: map[string][]Caveat{}, strs: map[string]string{}, index: map[string]int{}}
}

// Index returns the position of a decision equal to d among those given
// to Index before, adding d (shared as Decision shares it) when there is
// none: a holder of many decisions keeps a small number for each, and At
// gives it back. Equal means reflect.DeepEqual, but for nil and empty
// parameters, and parameters of the same pairs, which are alike.
func (in *Interner) Index(d Decision) int {
	in.dkey = appendDecision(in.dkey[:0], d)
	if i, ok := in.index[string(in.dkey)]; ok {
		return i
	}
	i := len(in.decisions)
	in.decisions = append(in.decisions, in.Decision(d))
	in.index[string(in.dkey)] = i
	return i
}

// At returns the decision at position i of Index.
func (in *Interner) At(i int) Decision { return in.decisions[i] }

// Decision returns d with its parameters, configured fact and caveats
// replaced by equal ones shared with the decisions given before.
func (in *Interner) Decision(d Decision) Decision {
	d.Params = in.Params(d.Params)
	d.Configured = in.String(d.Configured)
	if len(d.Caveats) > 0 {
		in.key = in.key[:0]
		for _, c := range d.Caveats {
			in.key = appendCaveat(in.key, c)
		}
		if cs, ok := in.caveats[string(in.key)]; ok {
			d.Caveats = cs
		} else {
			cs := make([]Caveat, len(d.Caveats))
			for i, c := range d.Caveats {
				cs[i] = Caveat{Reason: c.Reason, Params: in.Params(c.Params)}
			}
			in.caveats[string(in.key)] = cs
			d.Caveats = cs
		}
	}
	return d
}

// Params returns a map equal to p shared with the equal ones given
// before; nil for an empty p.
func (in *Interner) Params(p Params) Params {
	if len(p) == 0 {
		return nil
	}
	key := appendParams(nil, p)
	if s, ok := in.params[string(key)]; ok {
		return s
	}
	in.params[string(key)] = p
	return p
}

// String returns s, shared with an equal string given before.
func (in *Interner) String(s string) string {
	if s == "" {
		return ""
	}
	if t, ok := in.strs[s]; ok {
		return t
	}
	in.strs[s] = s
	return s
}

func appendDecision(b []byte, d Decision) []byte {
	b = appendLen(b, string(d.Reason))
	b = appendParams(b, d.Params)
	b = appendLen(b, d.Configured)
	b = binary.AppendUvarint(b, uint64(len(d.Caveats)))
	for _, c := range d.Caveats {
		b = appendCaveat(b, c)
	}
	return b
}

func appendCaveat(b []byte, c Caveat) []byte {
	b = appendLen(b, string(c.Reason))
	return appendParams(b, c.Params)
}

func appendParams(b []byte, p Params) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	for _, k := range slices.Sorted(maps.Keys(p)) {
		b = appendLen(b, k)
		b = appendLen(b, p[k])
	}
	return b
}

func appendLen(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
