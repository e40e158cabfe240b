//go:build unix

package dataplane

import "testing"

// A reserved port stays reserved until released: another reservation of it
// fails (in this process, as in another), and a released one can be taken.
func TestReservePort(t *testing.T) {
	dir := t.TempDir()
	lock, ok := reservePort(dir, 20001)
	if !ok {
		t.Fatal("first reservation failed")
	}
	if _, again := reservePort(dir, 20001); again {
		t.Fatal("a reserved port was reserved again")
	}
	_ = lock.Close()
	relock, ok := reservePort(dir, 20001)
	if !ok {
		t.Fatal("a released port could not be reserved")
	}
	_ = relock.Close()

	var ports Ports
	defer ports.Release()
	seen := map[string]bool{}
	for range 100 {
		a, err := ports.Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[a] {
			t.Fatalf("Ports handed out %s twice", a)
		}
		seen[a] = true
	}
}
