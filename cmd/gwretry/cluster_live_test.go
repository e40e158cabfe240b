package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/cluster"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/internal/kubeapitest"
	"github.com/gwretry/gwretry/internal/proxytest"
)

// apiserver is the one kube-apiserver of this package's tests.
var apiserver kubeapitest.Shared

func TestMain(m *testing.M) {
	// A child process of BenchmarkProcess runs one command and exits.
	if os.Getenv(benchChildEnv) != "" {
		os.Exit(benchChild(os.Args[1:]))
	}
	// No test reads the kubeconfig of the machine it runs on: a command
	// without PATH reads the cluster of a test's own --kubeconfig, or none.
	os.Setenv("KUBECONFIG", filepath.Join(os.TempDir(), "gwretry-test-no-kubeconfig"))
	os.Unsetenv("KUBERNETES_SERVICE_HOST")
	code := m.Run()
	apiserver.Stop()
	os.Exit(code)
}

// liveCluster is the test's view of the API server as the cluster-admin.
type liveCluster struct {
	s    *kubeapitest.Server
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	// created are the objects a case created, deleted after it.
	created []*unstructured.Unstructured
	mu      sync.Mutex
	// headless makes every Service headless (clusterIP None): the test
	// server's Service range holds 254 addresses.
	headless bool
	// resources caches discovery, by group/version.
	resources map[string][]metav1.APIResource
}

func newLiveCluster(t *testing.T, s *kubeapitest.Server) *liveCluster {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return &liveCluster{s: s, dyn: dynamic.NewForConfigOrDie(cfg), disc: discovery.NewDiscoveryClientForConfigOrDie(cfg)}
}

// gvr is the resource of apiVersion and kind, ok false when the server
// does not serve it.
func (c *liveCluster) gvr(apiVersion, kind string) (schema.GroupVersionResource, bool, bool) {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := c.resources[apiVersion]
	if !ok {
		list, err := c.disc.ServerResourcesForGroupVersion(apiVersion)
		if err != nil {
			return schema.GroupVersionResource{}, false, false
		}
		res = list.APIResources
		if c.resources == nil {
			c.resources = map[string][]metav1.APIResource{}
		}
		c.resources[apiVersion] = res
	}
	for _, r := range res {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return gv.WithResource(r.Name), r.Namespaced, true
		}
	}
	return schema.GroupVersionResource{}, false, false
}

// apply creates the objects of docs (Namespaces first; a Namespace that
// exists is updated, since a namespace cannot be deleted without the
// namespace controller) and returns how many kinds the server does not
// serve were left out.
func (c *liveCluster) apply(t *testing.T, docs []input.Document) {
	t.Helper()
	ctx := context.Background()
	namespaces := map[string]bool{"default": true}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(d.JSON); err != nil {
			t.Fatalf("%s: %v", d.Object(), err)
		}
		objs = append(objs, u)
	}
	// Namespaces the objects are in must exist first.
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		if _, namespaced, ok := c.gvr(u.GetAPIVersion(), u.GetKind()); ok && namespaced && u.GetNamespace() != "" {
			namespaces[u.GetNamespace()] = true
		}
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for _, u := range objs {
		if u.GetKind() != "Namespace" {
			continue
		}
		delete(namespaces, u.GetName())
		_, err := c.dyn.Resource(nsGVR).Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *unstructured.Unstructured
			if cur, err = c.dyn.Resource(nsGVR).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				labels := u.GetLabels()
				if labels == nil {
					labels = map[string]string{}
				}
				labels["kubernetes.io/metadata.name"] = u.GetName()
				cur.SetLabels(labels)
				cur.SetAnnotations(u.GetAnnotations())
				_, err = c.dyn.Resource(nsGVR).Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			t.Fatalf("Namespace %s: %v", u.GetName(), err)
		}
	}
	for ns := range namespaces {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		if _, err := c.dyn.Resource(nsGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Namespace %s: %v", ns, err)
		}
	}
	// Created 8 at a time, kept in the manifests' order.
	created := make([]*unstructured.Unstructured, len(objs))
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		gvr, namespaced, ok := c.gvr(u.GetAPIVersion(), u.GetKind())
		if !ok {
			t.Logf("%s %s: not served here, not applied", u.GetKind(), u.GetName())
			continue
		}
		ns := ""
		if namespaced {
			ns = u.GetNamespace()
			if ns == "" {
				ns = "default"
			}
		}
		if u.GetKind() == "Service" {
			// The test server's Service range is not the manifests'.
			if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
				unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
				unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
				if c.headless {
					_ = unstructured.SetNestedField(u.Object, "None", "spec", "clusterIP")
				}
			}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			created[i], errs[i] = c.dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s %s/%s: %w", u.GetKind(), ns, u.GetName(), errs[i])
			}
		}()
	}
	wg.Wait()
	for i := range objs {
		if created[i] != nil {
			c.created = append(c.created, created[i])
		}
	}
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), "may not be in the loopback range") {
			c.clear(t)
			t.Skipf("the API server refuses an object of the case: %v", err)
		}
		if err != nil {
			c.clear(t)
			t.Fatal(err)
		}
	}
}

// clear deletes what apply created, 8 at a time.
func (c *liveCluster) clear(t *testing.T) {
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, u := range c.created {
		gvr, namespaced, _ := c.gvr(u.GetAPIVersion(), u.GetKind())
		ns := ""
		if namespaced {
			ns = u.GetNamespace()
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := c.dyn.Resource(gvr).Namespace(ns).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s/%s: %v", u.GetKind(), ns, u.GetName(), err)
			}
		}()
	}
	wg.Wait()
	c.created = nil
}

// asStored writes the objects created as files, as the API server
// returned them on create (with the defaults of their CRDs and the
// creationTimestamp it set, stripped as cluster.Strip strips what it
// lists) in the order of the manifests, and the objects the cluster has
// of itself (the Namespaces, Service default/kubernetes), from the dump:
// the same objects as the cluster holds, read by another way than
// gwretry's.
func (c *liveCluster) asStored(t *testing.T, dumpDir string) string {
	t.Helper()
	var objs []map[string]any
	mine := map[string]bool{}
	for _, u := range c.created {
		mine[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = true
		obj := u.DeepCopy().Object
		cluster.Strip(obj)
		objs = append(objs, obj)
	}
	return c.writeObjects(t, objs, dumpDir, mine)
}

// writeObjects writes objs into a new directory's objects.yaml, and the
// objects of the dump not in mine into its own.yaml (writeOwn).
func (c *liveCluster) writeObjects(t *testing.T, objs []map[string]any, dumpDir string, mine map[string]bool) string {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	for _, obj := range objs {
		y, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c.writeOwn(t, dir, dumpDir, mine)
	return dir
}

// writeOwn writes the objects of the dump not in mine into dir/own.yaml.
func (c *liveCluster) writeOwn(t *testing.T, dir, dumpDir string, mine map[string]bool) {
	t.Helper()
	var buf bytes.Buffer
	for _, d := range readDocs(t, dumpDir) {
		if mine[d.Kind+" "+d.Namespace+"/"+d.Name] {
			continue
		}
		y, err := yaml.JSONToYAML(d.JSON)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	if err := os.WriteFile(filepath.Join(dir, "own.yaml"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withTimestamps writes docs as files again, each object with the
// creationTimestamp the cluster gave it (the API server sets it on create
// and ignores the manifest's), and the cluster's Namespaces: the manifests
// as written, without the defaults the API server fills in.
func (c *liveCluster) withTimestamps(t *testing.T, docs []input.Document, dumpDir string) string {
	t.Helper()
	created := map[string]string{}
	for _, u := range c.created {
		ts := u.GetCreationTimestamp()
		created[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = ts.UTC().Format(time.RFC3339)
	}
	var objs []map[string]any
	mine := map[string]bool{}
	for _, d := range docs {
		if d.Kind == "Namespace" {
			continue // as the cluster has them
		}
		var obj map[string]any
		if err := json.Unmarshal(d.JSON, &obj); err != nil {
			t.Fatal(err)
		}
		ns := d.Namespace
		if ns == "" {
			ns = "default"
		}
		key := d.Kind + " " + ns + "/" + d.Name
		if d.Kind == "GatewayClass" {
			key = d.Kind + " /" + d.Name
		}
		if ts, ok := created[key]; ok {
			obj["metadata"].(map[string]any)["creationTimestamp"] = ts
			mine[key] = true
		}
		objs = append(objs, obj)
	}
	return c.writeObjects(t, objs, dumpDir, mine)
}

// splitArgs separates a golden case's arguments into its input paths and
// its flags.
func splitArgs(args []string) (paths, flags []string) {
	for _, a := range args {
		if _, err := os.Stat(a); err == nil && !strings.HasPrefix(a, "-") {
			paths = append(paths, a)
			continue
		}
		flags = append(flags, a)
	}
	return paths, flags
}

// gwretry runs the command line and returns stdout and the exit code; a
// code other than want fails the test with stderr.
func runOK(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, nil, &stdout, &stderr); code != want {
		t.Fatalf("gwretry %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// sameTree fails unless the two output directories hold the same files,
// byte for byte.
func sameTree(t *testing.T, what string, want, got string) {
	t.Helper()
	if diff := cmp.Diff(stringTree(readTree(t, want)), stringTree(readTree(t, got))); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// TestClusterLive reads a real kube-apiserver: a cluster without the
// Gateway API's CRDs (a clear error), without Envoy Gateway's (a note),
// then every golden case and a generated corpus of 1,000 routes applied to
// it, each read with a small page size: the configurations and report.json
// must be byte for byte those of the same objects read from files, and
// those of the --dump of the run read back; a user without rights gets the
// RBAC rule that is missing, one bound to config/rbac/clusterrole.yaml the
// same output as the admin; import ingress-nginx reads the Ingresses and
// the controller's ConfigMap from the cluster.
func TestClusterLive(t *testing.T) {
	s := apiserver.Get(t)
	c := newLiveCluster(t, s)
	kc := s.Kubeconfig
	example := "../../testdata/examples/retry.yaml"
	exampleDocs := readDocs(t, example)

	t.Run("no Gateway API CRDs", func(t *testing.T) {
		_, stderr := runOK(t, exitInput, "check", "--kubeconfig", kc, "-A")
		for _, w := range []string{"does not serve httproutes.gateway.networking.k8s.io", "kubectl get crd httproutes.gateway.networking.k8s.io"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr)
			}
		}
	})

	s.InstallCRDs(t, kubeapitest.GatewayAPICRDs(t, "experimental")...)
	s.InstallCRDs(t, kubeapitest.PolicyCRDs(t)...)

	t.Run("no BackendTrafficPolicy CRD", func(t *testing.T) {
		c.apply(t, exampleDocs)
		defer c.clear(t)
		_, stderr := runOK(t, exitOK, "check", "--kubeconfig", kc, "-A", "-v", "-o", "none")
		if !strings.Contains(stderr, "does not serve backendtrafficpolicies.gateway.envoyproxy.io") {
			t.Errorf("no note of the kind not served:\n%s", stderr)
		}
	})

	// Envoy Gateway's BackendTrafficPolicy: a CRD that stores what it is
	// given (gwretry validates the fields it reads itself).
	btp := filepath.Join(t.TempDir(), "btp.yaml")
	if err := os.WriteFile(btp, []byte(btpCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	s.InstallCRDs(t, btp)

	var cases []string
	argFiles, _ := filepath.Glob("../../testdata/*/args")
	inputs, _ := filepath.Glob("../../testdata/*/input.yaml")
	for _, p := range append(argFiles, inputs...) {
		if dir := filepath.Dir(p); !slices.Contains(cases, dir) {
			cases = append(cases, dir)
		}
	}
	sort.Strings(cases)
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			paths, flags := splitArgs(goldenArgs(t, dir))
			compareWithFiles(t, c, kc, paths, flags, "7", true)
		})
	}

	t.Run("corpus of 1000 routes", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "corpus.yaml")
		var buf bytes.Buffer
		if err := corpus.Write(&buf, corpus.Defaults(1000)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		compareWithFiles(t, c, kc, []string{f}, []string{"--target", "envoy,nginx"}, "100", false)
	})

	t.Run("RBAC", func(t *testing.T) {
		c.apply(t, exampleDocs)
		defer c.clear(t)
		nobody := s.KubeconfigFor(t, "nobody")
		_, stderr := runOK(t, exitInput, "check", "--kubeconfig", nobody, "-A")
		for _, w := range []string{"gwretry: cluster kubeapitest: cannot list gateways.gateway.networking.k8s.io in all namespaces: forbidden",
			`User "nobody" cannot list resource "gateways"`,
			`{apiGroups: ["gateway.networking.k8s.io"], resources: ["gateways"], verbs: ["list"]}`} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr)
			}
		}
		// The shipped ClusterRole is all a reader needs.
		c.apply(t, readDocs(t, "../../config/rbac/clusterrole.yaml"))
		c.apply(t, readDocs(t, writeFile(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: gwretry-reader-alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gwretry-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`)))
		alice := s.KubeconfigFor(t, "alice")
		var admin, reader string
		// RBAC caches its rules: the binding takes effect within moments.
		for i := 0; ; i++ {
			var so, se bytes.Buffer
			code := run([]string{"check", "--kubeconfig", alice, "-A", "-o", "json"}, nil, &so, &se)
			if code == exitOK {
				reader = so.String()
				break
			}
			if i == 50 {
				t.Fatalf("alice bound to gwretry-reader: exit %d\n%s", code, se.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		admin, _ = runOK(t, exitOK, "check", "--kubeconfig", kc, "-A", "-o", "json")
		if admin != reader {
			t.Errorf("alice's report differs from the admin's:\n%s", cmp.Diff(admin, reader))
		}
		// -n: the namespace's objects only, the same report here.
		if ns, _ := runOK(t, exitOK, "check", "--kubeconfig", kc, "-n", "shop", "-o", "json"); ns != admin {
			t.Errorf("-n shop differs from -A:\n%s", cmp.Diff(admin, ns))
		}
		// A user bound to it in one namespace only: the GatewayClasses are
		// cluster-scoped, which it may not list: a warning, and the same
		// report (gwretry resolves nothing through GatewayClasses). RBAC
		// lets a RoleBinding in shop get the Namespace shop.
		c.apply(t, readDocs(t, writeFile(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gwretry-reader-bob, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gwretry-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
`)))
		bob := s.KubeconfigFor(t, "bob")
		for i := 0; ; i++ {
			var so, se bytes.Buffer
			code := run([]string{"check", "--kubeconfig", bob, "-n", "shop", "-o", "json"}, nil, &so, &se)
			if code == exitOK {
				if so.String() != admin {
					t.Errorf("bob's report (-n shop) differs from the admin's:\n%s", cmp.Diff(admin, so.String()))
				}
				for _, w := range []string{"warning: cluster kubeapitest: cannot list gatewayclasses.gateway.networking.k8s.io: forbidden"} {
					if !strings.Contains(se.String(), w) {
						t.Errorf("bob: stderr lacks %q:\n%s", w, se.String())
					}
				}
				break
			}
			if i == 50 {
				t.Fatalf("bob bound to gwretry-reader in shop: exit %d\n%s", code, se.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("selector and completion", func(t *testing.T) {
		c.apply(t, exampleDocs)
		defer c.clear(t)
		var so, se bytes.Buffer
		if code := run([]string{"check", "--kubeconfig", kc, "-A", "-l", "app=none"}, nil, &so, &se); code != exitInput ||
			!strings.Contains(se.String(), "no HTTPRoute (gateway.networking.k8s.io/v1 or v1beta1) in cluster kubeapitest, all namespaces, selector app=none") {
			t.Errorf("-l selecting no route: exit %d\n%s", code, se.String())
		}
		out, _ := runOK(t, exitOK, "__complete", "check", "--kubeconfig", kc, "-n", "")
		if !slices.Contains(strings.Split(out, "\n"), "shop") {
			t.Errorf("-n completion lacks shop:\n%s", out)
		}
		out, _ = runOK(t, exitOK, "__complete", "check", "--kubeconfig", kc, "--context", "")
		if !slices.Contains(strings.Split(out, "\n"), "kubeapitest") {
			t.Errorf("--context completion lacks kubeapitest:\n%s", out)
		}
	})

	t.Run("prove", func(t *testing.T) {
		nginx := proxytest.Require(t, "nginx")
		c.apply(t, exampleDocs)
		defer c.clear(t)
		outcomes := func(args ...string) map[string]string {
			out, _ := runOK(t, exitOK, append([]string{"prove", "--target", "nginx", "--proxy", nginx, "-o", "json"}, args...)...)
			var r proveJSON
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			m := map[string]string{}
			for _, cl := range r.Claims {
				m[fmt.Sprintf("%s %d %s", cl.Route, cl.Rule, cl.Feature)] = cl.Outcome
			}
			return m
		}
		fromFiles := outcomes(example)
		fromCluster := outcomes("--kubeconfig", kc, "-n", "shop")
		if diff := cmp.Diff(fromFiles, fromCluster); diff != "" || len(fromFiles) == 0 {
			t.Errorf("prove from the cluster differs from the file's (-files +cluster):\n%s", diff)
		}
	})

	t.Run("import ingress-nginx", func(t *testing.T) {
		ingresses, configMap := "../../testdata/examples/ingresses.yaml", "../../testdata/examples/ingress-nginx-controller.yaml"
		docs := append(readDocs(t, ingresses), readDocs(t, configMap)...)
		c.apply(t, docs)
		defer c.clear(t)
		dump := t.TempDir()
		fromCluster, _ := runOK(t, exitOK, "import", "ingress-nginx", "--kubeconfig", kc, "-A", "--chunk-size", "1", "--dump", dump, "--report", "none")
		stored := c.asStored(t, dump)
		fromFiles, _ := runOK(t, exitOK, "import", "ingress-nginx", stored, "--configmap", configMap, "--report", "none")
		if fromCluster != fromFiles {
			t.Errorf("import from the cluster differs from the files:\n%s", cmp.Diff(fromFiles, fromCluster))
		}
		fromDump, _ := runOK(t, exitOK, "import", "ingress-nginx", dump, "--exclude", "controller", "--configmap", filepath.Join(dump, "controller", cluster.FileOf("v1", "ConfigMap")), "--report", "none")
		if fromCluster != fromDump {
			t.Errorf("import from --dump differs from the cluster:\n%s", cmp.Diff(fromCluster, fromDump))
		}
		reports := t.TempDir()
		rc, rf := filepath.Join(reports, "cluster.json"), filepath.Join(reports, "files.json")
		runOK(t, exitOK, "import", "ingress-nginx", "--kubeconfig", kc, "-A", "--report", "json", "--report-file", rc)
		runOK(t, exitOK, "import", "ingress-nginx", stored, "--configmap", configMap, "--report", "json", "--report-file", rf)
		if a, b := readFile(t, rc), readFile(t, rf); a != b {
			t.Errorf("import report from the cluster differs from the files':\n%s", cmp.Diff(b, a))
		}
	})
}

// compareWithFiles applies the objects of paths, runs translate with
// flags on the cluster (pages of chunk objects) and on the same objects
// as files, and on the --dump of the cluster's run: every file written
// must be the same. asWritten compares with the manifests as written too.
func compareWithFiles(t *testing.T, c *liveCluster, kc string, paths, flags []string, chunk string, asWritten bool) {
	t.Helper()
	var docs []input.Document
	for _, p := range paths {
		docs = append(docs, readDocs(t, p)...)
	}
	start := time.Now()
	c.apply(t, docs)
	defer c.clear(t)
	t.Logf("applied %d objects in %v", len(docs), time.Since(start))
	if !slices.Contains(flags, "--target") {
		flags = append(flags, "--target", defaultGoldenTargets)
	}
	common := append([]string{"translate", "--report", "none", "-q"}, flags...)
	dump, fromCluster, fromDump, fromFiles := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	start = time.Now()
	runOK(t, exitOK, append(common, "--output-dir", fromCluster, "--kubeconfig", kc, "-A", "--chunk-size", chunk, "--dump", dump)...)
	t.Logf("translated from the cluster in %v", time.Since(start))
	runOK(t, exitOK, append(common, "--output-dir", fromDump, dump)...)
	runOK(t, exitOK, append(common, "--output-dir", fromFiles, c.asStored(t, dump))...)
	sameTree(t, "the cluster's output differs from the same objects' as files", fromFiles, fromCluster)
	sameTree(t, "the output of --dump read back differs from the cluster's", fromCluster, fromDump)
	if !asWritten {
		return
	}
	// The manifests as written, without the defaults the API server's
	// CRDs fill in: the data planes' configurations are the same; where
	// gwretry writes the routes back (Linkerd's HTTPRoutes) they carry the
	// defaults, and report.json's source of a value a CRD defaults cannot
	// say "(API default)": the cluster's object holds it.
	written := t.TempDir()
	runOK(t, exitOK, append(common, "--output-dir", written, c.withTimestamps(t, docs, dump))...)
	a, b := readTree(t, written), readTree(t, fromCluster)
	for _, tree := range []map[string][]byte{a, b} {
		tree["report.json"] = bytes.ReplaceAll(tree["report.json"], []byte(" (API default)"), nil)
	}
	for f := range a {
		if strings.HasPrefix(f, "linkerd/") {
			continue
		}
		if !bytes.Equal(a[f], b[f]) {
			t.Errorf("%s from the cluster differs from the manifests' as written:\n%s", f, cmp.Diff(string(a[f]), string(b[f])))
		}
	}
}

func readDocs(t *testing.T, path string) []input.Document {
	t.Helper()
	docs, _, err := input.ReadDocuments([]string{path}, nil, input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// btpCRD is Envoy Gateway's BackendTrafficPolicy kind, its schema left
// open.
var btpCRD = fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: backendtrafficpolicies.gateway.envoyproxy.io}
spec:
  group: gateway.envoyproxy.io
  names: {kind: BackendTrafficPolicy, listKind: BackendTrafficPolicyList, plural: backendtrafficpolicies, singular: backendtrafficpolicy}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: %t
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, true)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
