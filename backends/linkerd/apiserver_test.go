package linkerd

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/kubeapitest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// bundledCRDNames are the gateway.networking.k8s.io CRDs linkerd2's
// charts/linkerd-crds installs (templates/gateway.networking.k8s.io_*.yaml
// at version-2.17 to version-2.20; 2.16 has only the first two), each the
// module's config/crd/experimental file of the bundled release with Helm's
// templating around it. Only HTTPRoutes are written.
var bundledCRDNames = []string{
	"gateway.networking.k8s.io_httproutes.yaml",
	"gateway.networking.k8s.io_grpcroutes.yaml",
	"gateway.networking.k8s.io_tcproutes.yaml",
	"gateway.networking.k8s.io_tlsroutes.yaml",
}

// bundledServer is a real API server with the CRDs of one Gateway API
// release Linkerd bundles installed (bundledFile): one per release for
// the package's run, started on first use, stopped by TestMain.
type bundledServer struct {
	release string
	shared  kubeapitest.Shared
	once    sync.Once

	mu         sync.Mutex
	s          *kubeapitest.Server // nil until the CRDs are installed
	namespaces map[string]bool
	accepted   map[string]bool // documents the server accepted
}

var bundledServers = map[string]*bundledServer{
	"v0.7.1": {release: "v0.7.1"},
	"v1.1.1": {release: "v1.1.1"},
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range bundledServers {
		b.shared.Stop()
	}
	os.Exit(code)
}

// liveBundled returns the API server with the CRDs of Gateway API release
// rel (a bundledFile), or nil under -short and, outside CI, when
// kube-apiserver, etcd or the CRDs are not installed (the offline
// validation then stands alone). In CI a missing one fails the test.
func liveBundled(t *testing.T, rel string) *bundledServer {
	t.Helper()
	if testing.Short() {
		return nil
	}
	if os.Getenv("CI") != "true" {
		b := kubeapitest.FindBinaries()
		if _, err := kubeapitest.ReleaseCRDs(rel, "experimental", bundledCRDNames...); err != nil || b.KubeAPIServer == "" || b.Etcd == "" {
			return nil
		}
	}
	return startBundled(t, rel)
}

// startBundled is liveBundled without the way out: the server is
// required (skipped under -short or when missing outside CI, failed in CI).
func startBundled(t *testing.T, rel string) *bundledServer {
	t.Helper()
	b := bundledServers[rel]
	files := kubeapitest.RequireReleaseCRDs(t, rel, "experimental", bundledCRDNames...)
	s := b.shared.Get(t)
	b.once.Do(func() {
		s.InstallCRDs(t, files...)
		b.mu.Lock()
		b.s, b.namespaces, b.accepted = s, map[string]bool{"default": true}, map[string]bool{}
		b.mu.Unlock()
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s == nil {
		t.Fatalf("the Gateway API %s CRDs were not installed (see the first test that failed)", rel)
	}
	return b
}

// dryRun sends doc (YAML or JSON) to the server as `kubectl apply --dry-run=server`
// does, creating its namespace first; what names doc in a failure.
func (b *bundledServer) dryRun(t *testing.T, what string, doc []byte) {
	t.Helper()
	if err := b.verdict(t, doc); err != nil {
		t.Errorf("%s refused by the API server %s with the Gateway API %s CRDs Linkerd bundles: %v\n%s", what, kubeapitest.KubeAPIServerVersion, b.release, err, doc)
	}
}

// verdict is the server's answer to a dry-run create of doc (YAML or
// JSON): nil
// when it accepts it, the *kubeapitest.StatusError (or ErrNoKind: the
// apiVersion is not served) when it refuses it.
func (b *bundledServer) verdict(t *testing.T, doc []byte) error {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.accepted[string(doc)] {
		return nil
	}
	var m struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if ns := m.Metadata.Namespace; ns != "" && !b.namespaces[ns] {
		j, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]string{"name": ns}})
		var st *kubeapitest.StatusError
		if err := b.s.Create(j); err != nil && !(errors.As(err, &st) && st.Reason == "AlreadyExists") {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
		b.namespaces[ns] = true
	}
	err := b.s.DryRunCreate(doc)
	var st *kubeapitest.StatusError
	if err != nil && !errors.As(err, &st) && !errors.Is(err, kubeapitest.ErrNoKind) {
		t.Fatalf("dry-run create: %v", err)
	}
	if err == nil {
		b.accepted[string(doc)] = true
	}
	return err
}

// TestBundledCRDsAPIServer: the real API server (kube-apiserver v1.34.2),
// with the Gateway API CRDs each Linkerd version bundles installed (one
// server per release, v0.7.1 and v1.1.1), accepts every HTTPRoute gwretry
// writes for that version on the linkerd goldens' inputs (and, through
// build and checkBundledCRDs, on every test input of the package when the
// server runs), and refuses what refuseCases says those CRDs refuse: the
// CRDs are the real ones and the offline validation agrees with it.
func TestBundledCRDsAPIServer(t *testing.T) {
	kubeapitest.Require(t)
	for _, rel := range []string{"v0.7.1", "v1.1.1"} {
		startBundled(t, rel)
	}
	for _, tt := range refuseCases {
		err := startBundled(t, bundledFile(tt.version)).verdict(t, refuseDoc(tt.api, tt.rule))
		if (err == nil) != tt.ok {
			t.Errorf("Linkerd %s, %s {%s}: API server says %v, want ok=%v", tt.version, tt.api, tt.rule, err, tt.ok)
		}
	}
	for _, dir := range goldenDirs {
		t.Run(dir, func(t *testing.T) {
			p := filepath.Join("..", "..", "testdata", dir, "input.yaml")
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
			checkBundledCRDs(t, testmodel.Load(t, []string{p}, translate.ResolveOptions{}))
		})
	}
}
