package report

import (
	"reflect"
	"testing"
)

func TestInternerShares(t *testing.T) {
	in := NewInterner()
	mk := func() Decision {
		return Decide(ReasonConfigured).Set("num_retries 3").
			With(NewCaveat(CaveatPolicyConflict), NewCaveat(Reason("BodyBufferLimit"), "limit", "1MiB"))
	}
	a, b := in.Decision(mk()), in.Decision(mk())
	if !reflect.DeepEqual(a, mk()) || !reflect.DeepEqual(b, mk()) {
		t.Fatalf("interned decisions changed:\n%+v\n%+v", a, mk())
	}
	if &a.Caveats[0] != &b.Caveats[0] || reflect.ValueOf(a.Caveats[1].Params).UnsafePointer() != reflect.ValueOf(b.Caveats[1].Params).UnsafePointer() {
		t.Error("equal caveats are not shared")
	}
	// Params with the same pairs in another order are the same set; other
	// values are not.
	p, q := in.Params(Params{"a": "1", "b": "2"}), in.Params(Params{"b": "2", "a": "1"})
	r := in.Params(Params{"a": "1", "b": "3"})
	if reflect.ValueOf(p).UnsafePointer() != reflect.ValueOf(q).UnsafePointer() || reflect.DeepEqual(p, r) {
		t.Errorf("params: %v %v %v", p, q, r)
	}
	// A caveat added to one decision leaves the other as it was.
	c := a.With(NewCaveat(Reason("FullJitterBackoff")))
	if len(b.Caveats) != 2 || len(c.Caveats) != 3 {
		t.Errorf("With changed a shared list: %v / %v", b.Caveats, c.Caveats)
	}
	// A key that splits differently is another caveat list.
	x := in.Decision(Decision{Reason: ReasonConfigured, Caveats: []Caveat{{Reason: "ab", Params: Params{"c": ""}}}})
	y := in.Decision(Decision{Reason: ReasonConfigured, Caveats: []Caveat{{Reason: "a", Params: Params{"bc": ""}}}})
	if reflect.DeepEqual(x.Caveats, y.Caveats) {
		t.Errorf("distinct caveats merged: %v", x.Caveats)
	}
}

func TestInternerIndex(t *testing.T) {
	in := NewInterner()
	ds := []Decision{
		Decide(ReasonConfigured).Set("num_retries 3"),
		Decide(ReasonConfigured).Set("num_retries 3").With(NewCaveat(CaveatPolicyConflict)),
		Decide(ReasonConfigured, "a", "1").Set("num_retries 3"),
		Decide(ReasonConfigured, "a", "2").Set("num_retries 3"),
		Decide(ReasonConfigured, "a", "1", "b", "2"),
		Decide(ReasonNotTranslated),
		// A key that splits differently is another decision.
		{Reason: "ab", Params: Params{"c": ""}},
		{Reason: "a", Params: Params{"bc": ""}},
		{Reason: ReasonConfigured, Configured: "x", Caveats: []Caveat{{Reason: "y"}}},
		{Reason: ReasonConfigured, Configured: "xy"},
	}
	for i, d := range ds {
		if got := in.Index(d); got != i {
			t.Fatalf("decision %d %+v: index %d", i, d, got)
		}
	}
	for i, d := range ds {
		if got := in.Index(d); got != i || !reflect.DeepEqual(in.At(i), d) {
			t.Errorf("decision %d again: index %d, %+v", i, got, in.At(got))
		}
	}
	// The same pairs in another order, and nil and empty parameters, are
	// the same decision.
	if got := in.Index(Decision{Reason: ReasonConfigured, Params: Params{"b": "2", "a": "1"}}); got != 4 {
		t.Errorf("params in another order: index %d", got)
	}
	if got := in.Index(Decision{Reason: ReasonNotTranslated, Params: Params{}}); got != 5 {
		t.Errorf("empty params: index %d", got)
	}
}
