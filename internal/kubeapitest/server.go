package kubeapitest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyTimeout bounds the wait for etcd and then the API server to be
// ready: kube-apiserver needs 5-10 s on a loaded 2-core machine.
const readyTimeout = 2 * time.Minute

// Server is a running kube-apiserver and its etcd.
type Server struct {
	// URL is the API server's address, https://127.0.0.1:PORT.
	URL string
	// Kubeconfig is the path of a kubeconfig for the cluster-admin.
	Kubeconfig string
	// Token is the cluster-admin's bearer token (user "admin", group
	// system:masters).
	Token string
	// CAFile is the PEM file of the CA that signed the serving certificate
	// and signs client certificates.
	CAFile string
	// Dir holds the server's files: etcd's data, certificates, logs
	// (etcd.log, kube-apiserver.log) and kubeconfigs.
	Dir string

	ca     *authority
	client *http.Client
	procs  []*process

	mu        sync.Mutex
	resources map[string]resource // "group/version/Kind"
}

// Start starts a server for the test t, stopped when t ends (its files
// are in t.TempDir()). Require decides whether the test runs at all.
func Start(t testing.TB) *Server {
	t.Helper()
	b := Require(t)
	s, err := start(b, t.TempDir())
	if s != nil {
		t.Cleanup(s.stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver %s at %s (files in %s)", KubeAPIServerVersion, s.URL, s.Dir)
	return s
}

// Shared is one server for every test of a package that asks for it: the
// first Get starts it, Stop (from TestMain, after m.Run) ends it.
//
//	var apiserver kubeapitest.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		apiserver.Stop()
//		os.Exit(code)
//	}
type Shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Get returns the shared server, starting it on first use. Like Start it
// skips (or in CI fails) the test when the binaries are missing.
func (sh *Shared) Get(t testing.TB) *Server {
	t.Helper()
	b := Require(t)
	sh.once.Do(func() {
		dir, err := os.MkdirTemp("", "kubeapitest-")
		if err != nil {
			sh.err = err
			return
		}
		sh.s, sh.err = start(b, dir)
		if sh.s == nil {
			_ = os.RemoveAll(dir)
		}
	})
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.s
}

// Stop stops the shared server, if one was started, and removes its files.
func (sh *Shared) Stop() {
	if sh.s != nil {
		sh.s.stop()
		_ = os.RemoveAll(sh.s.Dir)
	}
}

// start starts etcd and kube-apiserver with their files in dir. On error
// the returned Server, when not nil, still has processes to stop.
func start(b Binaries, dir string) (*Server, error) {
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, ca: ca, Token: randomToken(), CAFile: filepath.Join(dir, "ca.crt"), resources: map[string]resource{}}
	addrs, release, err := reserveAddrs(3)
	if err != nil {
		return nil, err
	}
	defer release()
	etcdClient, etcdPeer, apiAddr := addrs[0], addrs[1], addrs[2]
	_, apiPort, _ := strings.Cut(apiAddr, ":")
	s.URL = "https://" + apiAddr

	servingCert, servingKey, err := ca.issue(true, "kube-apiserver")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"ca.crt":      ca.pem,
		"serving.crt": servingCert,
		"serving.key": servingKey,
		// token,user,uid,"group1,group2"
		"tokens.csv": []byte(s.Token + ",admin,admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	if err := writeKey(filepath.Join(dir, "service-account.key")); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	s.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &bearer{token: s.Token, next: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
	}

	etcd, err := startProcess(filepath.Join(dir, "etcd.log"), b.Etcd,
		"--name=kubeapitest",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://"+etcdClient,
		"--advertise-client-urls=http://"+etcdClient,
		"--listen-peer-urls=http://"+etcdPeer,
		"--initial-advertise-peer-urls=http://"+etcdPeer,
		"--initial-cluster=kubeapitest=http://"+etcdPeer,
		"--log-level=warn", "--logger=zap",
	)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, etcd)
	if err := waitFor(etcd, readyTimeout, func() error {
		return getOK(http.DefaultClient, "http://"+etcdClient+"/health")
	}); err != nil {
		return s, fmt.Errorf("etcd did not start: %w", err)
	}

	api, err := startProcess(filepath.Join(dir, "kube-apiserver.log"), b.KubeAPIServer,
		"--etcd-servers=http://"+etcdClient,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+apiPort,
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--tls-cert-file="+filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file="+filepath.Join(dir, "serving.key"),
		"--client-ca-file="+s.CAFile,
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "service-account.key"),
		"--service-account-signing-key-file="+filepath.Join(dir, "service-account.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// Less work at start and per request; none of it changes what
		// the server accepts.
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--watch-cache=false",
		"--profiling=false",
		"--v=0",
	)
	if err != nil {
		return s, err
	}
	s.procs = append(s.procs, api)
	if err := waitFor(api, readyTimeout, func() error {
		if err := getOK(s.client, s.URL+"/readyz"); err != nil {
			return err
		}
		// The bootstrap controller creates "default" just after start.
		return getOK(s.client, s.URL+"/api/v1/namespaces/default")
	}); err != nil {
		return s, fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}

	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(s.Kubeconfig, s.kubeconfig("admin", "    token: "+s.Token+"\n"), 0o600); err != nil {
		return s, err
	}
	return s, nil
}

// KubeconfigFor writes a kubeconfig for user in groups, authenticated by a
// client certificate, and returns its path. The user has only the rights
// RBAC gives it: bind a role to it (as the cluster-admin) to grant more.
func (s *Server) KubeconfigFor(t testing.TB, user string, groups ...string) string {
	t.Helper()
	cert, key, err := s.ca.issue(false, user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	auth := "    client-certificate-data: " + base64.StdEncoding.EncodeToString(cert) + "\n" +
		"    client-key-data: " + base64.StdEncoding.EncodeToString(key) + "\n"
	f, err := os.CreateTemp(s.Dir, "kubeconfig-*")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(s.kubeconfig(user, auth))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// kubeconfig is a kubeconfig for user with the user's credentials auth
// (indented lines of the user entry).
func (s *Server) kubeconfig(user, auth string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: kubeapitest
  cluster:
    server: ` + s.URL + `
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString(s.ca.pem) + `
users:
- name: ` + strconv.Quote(user) + `
  user:
` + auth + `contexts:
- name: kubeapitest
  context:
    cluster: kubeapitest
    user: ` + strconv.Quote(user) + `
current-context: kubeapitest
`)
}

// HTTPClient returns a client of the API server as the cluster-admin: it
// trusts the server's CA and sends Token.
func (s *Server) HTTPClient() *http.Client { return s.client }

func (s *Server) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// getOK GETs url and returns nil on 200.
func getOK(c *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// tail is the end of the process's log.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 8192 {
		b = b[len(b)-8192:]
	}
	return string(b)
}

// waitFor polls ready until it returns nil, the process exits or timeout
// passes; the error then holds the end of the process's log.
func waitFor(p *process, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited: %v\n%s log (%s):\n%s", p.name, p.err, p.name, p.log, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %w\n%s log (%s):\n%s", p.name, timeout, err, p.name, p.log, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
