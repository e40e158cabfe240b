package haproxy

import (
	"fmt"
	"strings"
	"testing"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	"github.com/haproxytech/client-native/v5/config-parser/types"
)

// TestSectionsCut: haproxy.cfg read a batch of sections at a time gives
// what the whole file's parse gives, and a file that does not cut into
// the head and frontend and backend sections is refused.
func TestSectionsCut(t *testing.T) {
	var b strings.Builder
	b.WriteString("global\n  log stdout format raw local0\n\ndefaults gwretry\n  mode http\n  retries 0\n")
	for i := range 2*sectionBatch + 7 {
		fmt.Fprintf(&b, "\nbackend be_%04d\n  retries %d\n", i, i)
	}
	data := []byte(b.String())
	c, err := parseSections(data)
	if err != nil {
		t.Fatal(err)
	}
	r := cfgReader{p: c}
	for i := range 2*sectionBatch + 7 {
		if got := r.int(parser.Backends, fmt.Sprintf("be_%04d", i), "retries", -1); got != int64(i) {
			t.Errorf("be_%04d: retries %d, want %d", i, got, i)
		}
	}
	if v, ok := r.get(parser.Defaults, "gwretry", "mode").(*types.StringC); !ok || v.Value != "http" {
		t.Errorf("defaults mode: %v", v)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	for name, bad := range map[string]string{
		"listen after":    string(data) + "\nlisten x\n  bind :1\n",
		"defaults after":  string(data) + "\ndefaults y\n  mode tcp\n",
		"two backends":    string(data) + "\nbackend be_0003\n  retries 9\n",
		"indented listen": string(data) + "\n  listen x\n",
		"unnamed backend": string(data) + "\nbackend\n",
		"resolvers after": string(data) + "\nresolvers dns\n",
	} {
		if _, err := parseSections([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
