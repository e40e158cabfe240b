package ingressnginx

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
)

// ingressDoc is an Ingress of host shop.example.com with one path.
func ingressDoc(name, created, tries, pathType, path, svc string, extra ...string) string {
	meta := ""
	if created != "" {
		meta = "\n  creationTimestamp: \"" + created + "\""
	}
	ann := fmt.Sprintf("    nginx.ingress.kubernetes.io/proxy-next-upstream-tries: %q\n", tries)
	for _, e := range extra {
		ann += "    " + e + "\n"
	}
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: %s
  namespace: default%s
  annotations:
%sspec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: %q, pathType: %s, backend: {service: {name: %s, port: {number: 80}}}}
`, name, meta, ann, path, pathType, svc)
}

// TestSharedPath checks that a host and path defined by several Ingresses
// is served as ingress-nginx serves it: by one Ingress only (the oldest,
// else the last by namespace/name), with its backend and settings.
func TestSharedPath(t *testing.T) {
	for _, tc := range []struct {
		name        string
		docs        []string
		wantBackend string
		wantRetries int
		// dropped is the Ingress whose backend the rule does not keep.
		dropped string
	}{
		{"no timestamps: last name wins, whatever the input order",
			[]string{ingressDoc("a", "", "5", "Prefix", "/api", "svc-a"), ingressDoc("b", "", "1", "Prefix", "/api", "svc-b")},
			"svc-b", 0, "default/a"},
		{"no timestamps, reversed input",
			[]string{ingressDoc("b", "", "1", "Prefix", "/api", "svc-b"), ingressDoc("a", "", "5", "Prefix", "/api", "svc-a")},
			"svc-b", 0, "default/a"},
		{"oldest wins",
			[]string{ingressDoc("a", "2024-01-01T00:00:00Z", "5", "Prefix", "/api", "svc-a"), ingressDoc("b", "2025-01-01T00:00:00Z", "1", "Prefix", "/api", "svc-b")},
			"svc-a", 4, "default/b"},
		{"empty path is /",
			[]string{ingressDoc("a", "", "5", "Prefix", "", "svc-a"), ingressDoc("b", "", "1", "Prefix", "/", "svc-b")},
			"svc-b", 0, "default/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Load([]string{"-"}, strings.NewReader(strings.Join(tc.docs, "---\n")), input.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			res, err := Import(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Routes) != 1 || len(res.Routes[0].Spec.Rules) != 1 {
				t.Fatalf("want 1 route with 1 rule, got %+v", res.Routes)
			}
			rule := res.Routes[0].Spec.Rules[0]
			if len(rule.BackendRefs) != 1 || string(rule.BackendRefs[0].Name) != tc.wantBackend {
				t.Errorf("backendRefs = %+v, want %s only", rule.BackendRefs, tc.wantBackend)
			}
			if got := *rule.Retry.Attempts; got != tc.wantRetries {
				t.Errorf("attempts = %d, want %d", got, tc.wantRetries)
			}
			found := false
			for _, f := range res.Report.Findings {
				if f.Ingress == tc.dropped && strings.HasSuffix(f.Annotation, ".backend") {
					found = f.Status == NotCarried
				}
				if f.Ingress == tc.dropped && f.Annotation == Prefix+NextUpstreamTries && f.Status != NotCarried {
					t.Errorf("%s's tries: %s %s, want not-carried", tc.dropped, f.Status, report.WithParams(f.Reason, f.Params))
				}
			}
			if !found {
				t.Errorf("no not-carried finding on the backend of %s: %+v", tc.dropped, res.Report.Findings)
			}
		})
	}
}

// TestRegexHostExactPath: use-regex on a host makes ingress-nginx match
// its Exact paths as case-insensitive prefix regular expressions too; the
// Exact match the rule keeps must say so.
func TestRegexHostExactPath(t *testing.T) {
	doc := ingressDoc("a", "", "3", "Exact", "/exact", "svc-a", `nginx.ingress.kubernetes.io/use-regex: "true"`)
	in, err := Load([]string{"-"}, strings.NewReader(doc), input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if f.Rule == 0 && f.Annotation == Prefix+UseRegex {
			if got, want := fmt.Sprint(f.Status, " ", report.WithParams(f.Reason, f.Params)), "approximated ExactMatchedAsRegex{path=/exact}"; got != want {
				t.Errorf("finding %s, want %s", got, want)
			}
			return
		}
	}
	t.Errorf("no use-regex finding on the Exact rule: %+v", res.Report.Findings)
}

// ing is a compact Ingress for the layout tests: rules is a list of
// "host path svc" ("" host for none), db the defaultBackend Service.
func ing(ns, name, created, class, db string, rules ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: %q\n  namespace: %q\n", name, ns)
	if created != "" {
		fmt.Fprintf(&b, "  creationTimestamp: %q\n", created)
	}
	if a, ok := strings.CutPrefix(class, "annotation:"); ok {
		fmt.Fprintf(&b, "  annotations:\n    kubernetes.io/ingress.class: %q\n", a)
		class = ""
	}
	b.WriteString("spec:\n")
	if class != "" {
		fmt.Fprintf(&b, "  ingressClassName: %s\n", class)
	}
	if db != "" {
		fmt.Fprintf(&b, "  defaultBackend: {service: {name: %s, port: {number: 80}}}\n", db)
	}
	if len(rules) > 0 {
		b.WriteString("  rules:\n")
	}
	for _, r := range rules {
		f := strings.Fields(r)
		if len(f) == 2 {
			f = append([]string{""}, f...)
		}
		fmt.Fprintf(&b, "  - host: %q\n    http:\n      paths:\n      - {path: %s, pathType: Prefix, backend: {service: {name: %s, port: {number: 80}}}}\n", f[0], f[1], f[2])
	}
	return b.String()
}

func importDocs(t *testing.T, opts Options, docs ...string) *Result {
	t.Helper()
	in, err := Load([]string{"-"}, strings.NewReader(strings.Join(docs, "---\n")), input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// routing summarises the routes: "ns/route host path -> svc" per rule.
func routing(res *Result) []string {
	var out []string
	for _, r := range res.Routes {
		host := "*"
		if len(r.Spec.Hostnames) > 0 {
			host = string(r.Spec.Hostnames[0])
		}
		for _, rule := range r.Spec.Rules {
			path := "/"
			if len(rule.Matches) > 0 {
				path = *rule.Matches[0].Path.Value
			}
			for _, ref := range rule.BackendRefs {
				out = append(out, fmt.Sprintf("%s %s%s -> %s", r.Namespace, host, path, ref.Name))
			}
		}
	}
	sort.Strings(out)
	return out
}

// findingFor reports whether res has a finding on ingress and an
// annotation (or field) starting with annotation, with the status and
// the record want ("Reason{name=value, ...}", report.WithParams).
func findingFor(res *Result, ingress, annotation string, status Status, want string) bool {
	for _, f := range res.Report.Findings {
		if f.Ingress == ingress && strings.HasPrefix(f.Annotation, annotation) && f.Status == status && report.WithParams(f.Reason, f.Params) == want {
			return true
		}
	}
	return false
}

// TestLayout checks that the routes send each host and path where
// ingress-nginx's servers and locations (createServers,
// getBackendServers) sent it: a defaultBackend serves only the hosts whose
// server its Ingress created, the catch-all takes the first Ingress
// without rules, one server per host across namespaces.
func TestLayout(t *testing.T) {
	type find struct {
		ingress, annotation string
		status              Status
		record              string
	}
	for _, tc := range []struct {
		name  string
		docs  []string
		want  []string
		finds []find
	}{
		{"defaultBackend serves its own host only",
			[]string{ing("default", "a", "", "nginx", "fb", "a.example.com /api svc-a"), ing("default", "b", "", "nginx", "", "b.example.com /x svc-b")},
			[]string{"default a.example.com/api -> svc-a", "default a.example.com/ -> fb", "default b.example.com/x -> svc-b"},
			[]find{{"default/a", "spec.defaultBackend", Carried, "DefaultBackendCarried{host=a.example.com}"}}},
		{"the older Ingress created the server: the newer one's defaultBackend is unused",
			[]string{ing("default", "old", "2024-01-01T00:00:00Z", "nginx", "", "a.example.com /x svc-x"), ing("default", "new", "2025-01-01T00:00:00Z", "nginx", "fb", "a.example.com /api svc-a")},
			[]string{"default a.example.com/api -> svc-a", "default a.example.com/x -> svc-x"},
			[]find{{"default/new", "spec.defaultBackend", NotCarried, "DefaultBackendOtherServer{host=a.example.com, servedBy=default/old}"}}},
		{"a Prefix / path replaces the defaultBackend's location",
			[]string{ing("default", "a", "2024-01-01T00:00:00Z", "nginx", "fb", "a.example.com /api svc-a"), ing("default", "b", "2025-01-01T00:00:00Z", "nginx", "", "a.example.com / svc-root")},
			[]string{"default a.example.com/ -> svc-root", "default a.example.com/api -> svc-a"},
			[]find{{"default/a", "spec.defaultBackend", NotCarried, "DefaultBackendReplaced{host=a.example.com, replacedBy=default/b}"}}},
		{"host-less rules never use the defaultBackend",
			[]string{ing("default", "a", "", "nginx", "fb", "/api svc-a")},
			[]string{"default */api -> svc-a"},
			[]find{{"default/a", "spec.defaultBackend", NotCarried, "DefaultBackendNotForCatchAll"}}},
		{"catch-all: the first Ingress without rules only",
			[]string{ing("default", "c1", "2024-01-01T00:00:00Z", "nginx", "fb1"), ing("default", "c2", "2025-01-01T00:00:00Z", "nginx", "fb2"), ing("default", "h", "", "nginx", "", "h.example.com /x svc-x")},
			[]string{"default */ -> fb1", "default h.example.com/x -> svc-x"},
			[]find{{"default/c2", "spec.defaultBackend", NotCarried, "DefaultBackendNotFirst{servedBy=default/c1}"},
				{"default/c1", "spec.defaultBackend", Approximated, "CatchAllHost{gateway=default/nginx, hosts=h.example.com}"}}},
		{"same host and path in two namespaces: the older Ingress's location",
			[]string{ing("team-a", "x", "2025-01-01T00:00:00Z", "nginx", "", "shop.example.com /api svc-a", "shop.example.com /a-only svc-a2"), ing("team-b", "y", "2024-01-01T00:00:00Z", "nginx", "", "shop.example.com /api svc-b")},
			[]string{"team-a shop.example.com/a-only -> svc-a2", "team-b shop.example.com/api -> svc-b"},
			[]find{{"team-a/x", "spec.rules[0].http.paths[0].backend", NotCarried, "OtherNamespaceServes{host=shop.example.com, path=/api, pathType=Prefix, servedBy=team-b/y}"}}},
		{"same host and path in two namespaces, no timestamps: the last namespace/name",
			[]string{ing("team-b", "y", "", "nginx", "", "shop.example.com /api svc-b"), ing("team-a", "x", "", "nginx", "", "shop.example.com /api svc-a")},
			[]string{"team-b shop.example.com/api -> svc-b"},
			[]find{{"team-a/x", "spec.rules[0].http.paths[0].backend", NotCarried, "OtherNamespaceServes{host=shop.example.com, path=/api, pathType=Prefix, servedBy=team-b/y}"}}},
		{"the defaultBackend of the namespace that created the host's server",
			[]string{ing("team-a", "x", "2024-01-01T00:00:00Z", "nginx", "fb-a", "shop.example.com /a svc-a"), ing("team-b", "y", "2025-01-01T00:00:00Z", "nginx", "fb-b", "shop.example.com /b svc-b")},
			[]string{"team-a shop.example.com/a -> svc-a", "team-a shop.example.com/ -> fb-a", "team-b shop.example.com/b -> svc-b"},
			[]find{{"team-b/y", "spec.defaultBackend", NotCarried, "DefaultBackendOtherServer{host=shop.example.com, servedBy=team-a/x}"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := importDocs(t, Options{}, tc.docs...)
			sort.Strings(tc.want)
			if got := routing(res); !slices.Equal(got, tc.want) {
				t.Errorf("routes:\n got %q\nwant %q", got, tc.want)
			}
			for _, f := range tc.finds {
				if !findingFor(res, f.ingress, f.annotation, f.status, f.record) {
					t.Errorf("no %s finding %s on %s %s in %+v", f.status, f.record, f.ingress, f.annotation, res.Report.Findings)
				}
			}
		})
	}
}

// TestIngressClass checks that only the Ingresses the controller serves
// (store.GetIngressClass) are imported, and that each other one is named
// in a not-carried finding.
func TestIngressClass(t *testing.T) {
	ic := func(name, controller string) string {
		return fmt.Sprintf("apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: %s\nspec:\n  controller: %s\n", name, controller)
	}
	for _, tc := range []struct {
		name    string
		class   string // as ing() takes it
		classes []string
		opts    Options
		want    bool
		// why is the not-served finding's record.
		why string
	}{
		{"ingressClassName nginx, no IngressClass given", "nginx", nil, Options{}, true, ""},
		{"ingressClassName other, no IngressClass given", "traefik", nil, Options{}, false, "ClassNotInInput{controllerClass=k8s.io/ingress-nginx, ingressClass=nginx}"},
		{"ingressClassName other, an ingress-nginx IngressClass", "internal", []string{ic("internal", "k8s.io/ingress-nginx")}, Options{}, true, ""},
		{"ingressClassName nginx of another controller", "nginx", []string{ic("nginx", "example.com/other")}, Options{}, false, "ClassServedByName{controller=example.com/other}"},
		{"ingressClassName other of another controller", "internal", []string{ic("internal", "example.com/other")}, Options{}, false, "ClassOfOtherController{controller=example.com/other, controllerClass=k8s.io/ingress-nginx}"},
		{"ingressClassName nginx of another controller, by name", "nginx", []string{ic("nginx", "example.com/other")}, Options{ClassByName: true}, true, ""},
		{"controller-class", "internal", []string{ic("internal", "example.com/mine")}, Options{Controller: "example.com/mine"}, true, ""},
		{"annotation nginx", "annotation:nginx", nil, Options{}, true, ""},
		{"annotation other", "annotation:traefik", nil, Options{}, false, "ClassNotServed{ingressClass=nginx}"},
		{"annotation with --ingress-class", "annotation:internal", nil, Options{Class: "internal"}, true, ""},
		{"no class", "", nil, Options{}, false, "NotServed"},
		{"no class, a default IngressClass", "", []string{strings.Replace(ic("nginx", "k8s.io/ingress-nginx"), "metadata:\n", "metadata:\n  annotations:\n    ingressclass.kubernetes.io/is-default-class: \"true\"\n", 1)}, Options{}, false, "NotServed"},
		{"no class, watch-ingress-without-class", "", nil, Options{WatchWithoutClass: true}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := append([]string{ing("default", "a", "", tc.class, "", "a.example.com /api svc-a"),
				ing("default", "keep", "", "nginx", "", "k.example.com /k svc-k")}, tc.classes...)
			res := importDocs(t, tc.opts, docs...)
			got := slices.Contains(routing(res), "default a.example.com/api -> svc-a")
			if got != tc.want {
				t.Errorf("imported = %v, want %v: %q", got, tc.want, routing(res))
			}
			if !tc.want && !findingFor(res, "default/a", "", NotCarried, tc.why) {
				t.Errorf("no not-carried finding %s on default/a: %+v", tc.why, res.Report.Findings)
			}
			for _, r := range res.Routes {
				if p := string(r.Spec.ParentRefs[0].Name); p != cmp.Or(tc.opts.Class, "nginx") {
					t.Errorf("route %s attached to %s", r.Name, p)
				}
			}
		})
	}
}
