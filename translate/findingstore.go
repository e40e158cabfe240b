package translate

import "github.com/gwretry/gwretry/report"

// findingStore holds the findings of the targets RunTo has handed on
// until it builds the report, each as eight numbers: its strings' and its
// decision's positions in tables of those seen (32 bytes, against the 184
// of a Finding and the maps of its decision). Issue 22: at 10,000 routes
// every target reports about 89,000 findings, and those of the targets
// before held 75 MB while the next one generated.
type findingStore struct {
	in       *report.Interner
	strs     []string
	strIndex map[string]uint32
	stored   []storedFinding
}

// storedFinding is a Finding in a findingStore: each string a position in
// strs, the decision a position in the Interner's.
type storedFinding struct {
	target, gateway, route, ruleName, feature, status, source uint32
	rule                                                      int32
	decision                                                  uint32
}

func newFindingStore() *findingStore {
	return &findingStore{in: report.NewInterner(), strIndex: map[string]uint32{}}
}

// grow makes room for n more findings.
func (s *findingStore) grow(n int) {
	if n > cap(s.stored)-len(s.stored) {
		stored := make([]storedFinding, len(s.stored), len(s.stored)+n)
		copy(stored, s.stored)
		s.stored = stored
	}
}

// add stores f.
func (s *findingStore) add(f Finding) {
	s.stored = append(s.stored, storedFinding{
		target: s.str(f.Target), gateway: s.str(f.Gateway), route: s.str(f.Route), ruleName: s.str(f.RuleName),
		feature: s.str(string(f.Feature)), status: s.str(string(f.Status)), source: s.str(f.Source),
		rule: int32(f.Rule), decision: uint32(s.in.Index(f.Decision)),
	})
}

func (s *findingStore) str(x string) uint32 {
	if i, ok := s.strIndex[x]; ok {
		return i
	}
	i := uint32(len(s.strs))
	s.strs = append(s.strs, x)
	s.strIndex[x] = i
	return i
}

// findings returns the findings stored, in the order they were added, and
// empties the store.
func (s *findingStore) findings() []Finding {
	out := make([]Finding, len(s.stored))
	for i, x := range s.stored {
		out[i] = Finding{Target: s.strs[x.target], Gateway: s.strs[x.gateway], Route: s.strs[x.route],
			Rule: int(x.rule), RuleName: s.strs[x.ruleName], Feature: Feature(s.strs[x.feature]),
			Status: Status(s.strs[x.status]), Decision: s.in.At(int(x.decision)), Source: s.strs[x.source]}
	}
	s.stored = nil
	return out
}
