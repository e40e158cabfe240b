package nginx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

// sharedDir makes a temporary directory that an ordinary user (nobody) can
// read and write, unlike t.TempDir's.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gwretry-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// asOrdinaryUser returns the command prefix that runs a program as nobody
// when the test runs as root, nil when it already runs as an ordinary user,
// and false when neither setpriv nor runuser is there.
func asOrdinaryUser() ([]string, bool) {
	if os.Geteuid() != 0 {
		return nil, true
	}
	if p, err := exec.LookPath("setpriv"); err == nil {
		return []string{p, "--reuid=nobody", "--regid=nogroup", "--clear-groups"}, true
	}
	if p, err := exec.LookPath("runuser"); err == nil {
		return []string{p, "-u", "nobody", "--"}, true
	}
	return nil, false
}

// nginxTest runs `nginx -t` with args (after an optional user prefix) and
// fails on an error or a warning.
func nginxTest(t *testing.T, prefix []string, args ...string) {
	t.Helper()
	bin := proxytest.Require(t, "nginx")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append(append(append([]string{}, prefix...), bin, "-t", "-q"), args...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "[warn]") || strings.Contains(line, "[emerg]") || strings.Contains(line, "[alert]") {
			t.Fatalf("%s: %s", strings.Join(argv, " "), line)
		}
	}
}

// distributionTempPaths returns the temporary directories compiled into
// nginx (nginx -V), which the full layout relies on.
func distributionTempPaths(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(proxytest.Require(t, "nginx"), "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -V: %v\n%s", err, out)
	}
	var paths []string
	for _, m := range regexp.MustCompile(`--http-[a-z-]+-temp-path=(\S+)`).FindAllStringSubmatch(string(out), -1) {
		paths = append(paths, m[1])
	}
	return paths
}

// TestDropIn checks that both layouts load in the packaged nginx as they
// are: the full nginx.conf with `nginx -t -c FILE` and nothing else (no -p,
// no directory made for it), the conf.d file included in http {} of a main
// nginx.conf as Debian's does; as root and as an ordinary user.
func TestDropIn(t *testing.T) {
	proxytest.Require(t, "nginx")
	models := map[string]func(testing.TB) *translate.Model{
		"judge model": judgeModel,
		"matches":     func(testing.TB) *translate.Model { return matchModel() },
	}
	for name, mk := range models {
		for layout, b := range layouts(t) {
			t.Run(name+"/"+layout, func(t *testing.T) {
				out, err := b.Generate(mk(t), translate.Options{Version: "1.22"})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Files) != 1 {
					t.Fatalf("files: %v", out.Files)
				}
				data := out.Files[0].Data
				// No path that depends on nginx's prefix, and none of
				// gwretry's own.
				for _, d := range []string{"_temp_path", "access_log logs", "pid ", "error_log", "include"} {
					if strings.Contains(string(data), d) {
						t.Errorf("%s has %q", out.Files[0].Path, d)
					}
				}
				dir := sharedDir(t)
				user, ok := asOrdinaryUser()
				if layout == LayoutFull {
					conf := filepath.Join(dir, "nginx.conf")
					writeFile(t, conf, data)
					if !strings.Contains(string(data), "access_log off;") {
						t.Error("the full layout does not turn the access log off")
					}
					if os.Geteuid() == 0 {
						nginxTest(t, nil, "-c", conf)
					} else {
						for _, p := range distributionTempPaths(t) {
							if _, err := os.Stat(p); err != nil {
								t.Skipf("as an ordinary user the full layout needs the distribution's temporary directory %s, which the packaged nginx creates when it first starts as root: %v", p, err)
							}
						}
					}
					if !ok {
						t.Log("neither setpriv nor runuser: the ordinary-user variant is not run")
						return
					}
					// An ordinary user cannot write the distribution's
					// pid file (/run/nginx.pid), so it names its own.
					nginxTest(t, user, "-c", conf, "-g", "pid "+filepath.Join(dir, "nginx.pid")+";")
					return
				}
				if strings.Contains(string(data), "events") || strings.Contains(string(data), "http {") {
					t.Errorf("the conf.d layout has more than the contents of http {}:\n%s", data)
				}
				writeFile(t, filepath.Join(dir, "conf.d", "gwretry.conf"), data)
				// Debian's nginx.conf, reduced to what matters here.
				main := filepath.Join(dir, "nginx.conf")
				writeFile(t, main, []byte("events {\n    worker_connections 768;\n}\nhttp {\n    sendfile on;\n    default_type application/octet-stream;\n"+
					"    include "+filepath.Join(dir, "conf.d")+"/*.conf;\n}\n"))
				if os.Geteuid() == 0 {
					nginxTest(t, nil, "-c", main)
				}
				if !ok {
					t.Log("neither setpriv nor runuser: the ordinary-user variant is not run")
					return
				}
				nginxTest(t, user, "-c", userMainConf(t, dir))
			})
		}
	}
}

// userMainConf writes, in dir (made by sharedDir), the main nginx.conf of
// an ordinary user that includes dir/conf.d/*.conf in http {}: it names its
// own pid file, access log and temporary directories, so that nginx runs
// without root and without the distribution's directories.
func userMainConf(t *testing.T, dir string) string {
	t.Helper()
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "user.conf")
	writeFile(t, main, []byte("pid "+filepath.Join(dir, "nginx.pid")+";\nevents {}\nhttp {\n    access_log off;\n"+
		"    client_body_temp_path "+tmp+"/body;\n    proxy_temp_path "+tmp+"/proxy;\n    fastcgi_temp_path "+tmp+"/fastcgi;\n"+
		"    uwsgi_temp_path "+tmp+"/uwsgi;\n    scgi_temp_path "+tmp+"/scgi;\n"+
		"    include "+filepath.Join(dir, "conf.d")+"/*.conf;\n}\n"))
	return main
}

// nginxCheckConfD runs nginx -t, as the test's own user, on a conf.d file
// included by userMainConf.
func nginxCheckConfD(t *testing.T, fragment []byte) {
	t.Helper()
	dir := sharedDir(t)
	writeFile(t, filepath.Join(dir, "conf.d", "gwretry.conf"), fragment)
	nginxTest(t, nil, "-c", userMainConf(t, dir))
}
