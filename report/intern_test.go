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
