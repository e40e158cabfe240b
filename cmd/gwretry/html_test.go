package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// chromium finds Debian's chromium (make deps installs it): a missing one
// skips the test, and fails it under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing: make deps installs it")
	}
	t.Skip("chromium is missing: make deps installs it")
	return ""
}

// headless runs chromium headless on url with args (--dump-dom,
// --screenshot=...), without network, profile or sandbox, and returns its
// stdout.
func headless(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(all, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// TestHTMLReportInBrowser loads --report html of each format case in a
// real headless chromium from a file:// URL and checks every cell of the
// rule x target matrix against report.json of the same run: one cell per
// rule (or Gateway) and target, its status the worst of the rule's
// findings on the target (not applicable only when all are), its hover
// text naming each feature; the colour the browser computed is one per
// status; the page loads nothing from elsewhere. -update also writes
// docs/report-html.png, the screenshot the README shows (under 200 KB).
func TestHTMLReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	bin := chromium(t)
	shot, _ := filepath.Abs("../../docs/report-html.png")
	t.Chdir("../..")
	for _, c := range formatCases {
		t.Run(c.name, func(t *testing.T) {
			page := reportIn(t, "html", c.args)
			var r translate.Report
			if err := json.Unmarshal(reportIn(t, "json", c.args), &r); err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"<link", "<img", "src=", "@import", "url(", "http://", "https://"} {
				if bytes.Contains(page, []byte(bad)) {
					t.Errorf("the page is not self-contained: it has %q", bad)
				}
			}
			p := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(p, page, 0o644); err != nil {
				t.Fatal(err)
			}
			dom := headless(t, bin, "file://"+p+"#selftest", "--dump-dom")
			checkMatrix(t, dom, &r)
			if *update && c.name == "example" {
				headless(t, bin, "file://"+p, "--window-size=1280,900", "--run-all-compositor-stages-before-draw", "--virtual-time-budget=2000", "--screenshot="+shot)
				recompress(t, shot)
			}
		})
	}
	st, err := os.Stat(shot)
	switch {
	case err != nil:
		t.Errorf("the screenshot: %v (run with -update)", err)
	case st.Size() >= 200<<10:
		t.Errorf("%s is %d bytes, want under 200 KB", shot, st.Size())
	}
}

// recompress rewrites the PNG at p with the best compression, and in
// 128 colours: chromium writes it fast and large.
func recompress(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The palette: the page's colours, most frequent first.
	count := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	cs := slices.Collect(maps.Keys(count))
	slices.SortFunc(cs, func(a, b color.RGBA) int {
		return cmp.Or(count[b]-count[a], cmp.Compare(a.R, b.R), cmp.Compare(a.G, b.G), cmp.Compare(a.B, b.B))
	})
	var pal color.Palette
	for _, c := range cs[:min(len(cs), 128)] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// worst is the status a cell shows for findings: the worst, not
// applicable only when all are, "" when there are none.
func worst(fs []*translate.Finding) report.Status {
	var s report.Status
	for _, f := range fs {
		if s == "" || f.Status.Rank() > s.Rank() {
			s = f.Status
		}
	}
	return s
}

func checkMatrix(t *testing.T, dom []byte, r *translate.Report) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ gateway, route, rule, target string }
	type cell struct{ status, title, bg string }
	cells := map[key]cell{}
	selftest := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			a := map[string]string{}
			for _, at := range n.Attr {
				a[at.Key] = at.Val
			}
			if n.Data == "body" && a["data-selftest"] == "done" {
				selftest = true
			}
			if n.Data == "td" && strings.Contains(" "+a["class"]+" ", " cell ") {
				k := key{a["data-gateway"], a["data-route"], a["data-rule"], a["data-target"]}
				if a["data-gateway"] != "" {
					k.route, k.rule = "", "0"
				}
				if _, dup := cells[k]; dup {
					t.Errorf("two cells for %v", k)
				}
				cells[k] = cell{a["data-status"], a["title"], a["data-bg"]}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if !selftest {
		t.Fatal("the page's script did not run in the browser")
	}
	want := map[key][]*translate.Finding{}
	rows := map[key]bool{}
	for i := range r.Findings {
		f := &r.Findings[i]
		k := key{f.Gateway, f.Route, strconv.Itoa(f.Rule), f.Target}
		if f.Gateway != "" {
			k.route, k.rule = "", "0"
		}
		want[k] = append(want[k], f)
		rows[key{k.gateway, k.route, k.rule, ""}] = true
	}
	if n := len(rows) * len(r.Targets); len(cells) != n {
		t.Errorf("%d cells, want %d (%d rows x %d targets)", len(cells), n, len(rows), len(r.Targets))
	}
	colour := map[string]string{} // status -> computed colour
	checked := 0
	for row := range rows {
		for _, tg := range r.Targets {
			k := row
			k.target = tg.Name
			got, ok := cells[k]
			if !ok {
				t.Errorf("no cell for %v", k)
				continue
			}
			checked++
			if w := string(worst(want[k])); got.status != w {
				t.Errorf("%v: cell status %q, report.json's worst %q", k, got.status, w)
			}
			for _, f := range want[k] {
				if !strings.Contains(got.title, string(f.Feature)+": "+string(f.Status)) {
					t.Errorf("%v: hover text lacks %s: %s:\n%s", k, f.Feature, f.Status, got.title)
				}
				for _, cv := range f.Caveats {
					if !strings.Contains(got.title, string(cv.Reason)) {
						t.Errorf("%v: hover text lacks caveat %s", k, cv.Reason)
					}
				}
			}
			if got.bg == "" || got.bg == "rgba(0, 0, 0, 0)" {
				t.Errorf("%v: no background colour computed (%q)", k, got.bg)
			}
			if c, seen := colour[got.status]; seen && c != got.bg {
				t.Errorf("status %q has colours %s and %s", got.status, c, got.bg)
			}
			colour[got.status] = got.bg
		}
	}
	var bgs []string
	for _, c := range colour {
		if slices.Contains(bgs, c) {
			t.Errorf("two statuses share the colour %s: %v", c, colour)
		}
		bgs = append(bgs, c)
	}
	t.Logf("%d cells checked in chromium; colours %v", checked, colour)
}
