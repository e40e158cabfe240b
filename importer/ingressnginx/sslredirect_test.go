package ingressnginx

import (
	"fmt"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
)

// tlsIngress is an Ingress of host shop.example.com with path, and tls
// when withTLS, with the annotations ann.
func tlsIngress(withTLS bool, path string, ann ...string) string {
	a := ""
	for _, x := range ann {
		a += "    nginx.ingress.kubernetes.io/" + x + "\n"
	}
	if a != "" {
		a = "  annotations:\n" + a
	}
	tls := ""
	if withTLS {
		tls = "  tls:\n  - {hosts: [shop.example.com], secretName: shop-tls}\n"
	}
	return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: default
` + a + `spec:
  ingressClassName: nginx
` + tls + `  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: "` + path + `", pathType: Prefix, backend: {service: {name: shop, port: {number: 80}}}}
`
}

func importDoc(t *testing.T, doc string, cm *ConfigMap) *Result {
	t.Helper()
	in, err := Load([]string{"-"}, strings.NewReader(doc), input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(in, Options{ConfigMap: cm})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An Ingress with tls was served in plain HTTP on port 80; ingress-nginx
// redirects it to HTTPS (ssl-redirect, true by default; force-ssl-redirect
// without tls too), with http-redirect-code (308 by default).
func TestSSLRedirect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     string
		cm      map[string]string
		section string // of the route's parentRef, "" for both listeners
		code    int    // of the redirect route, 0 for none
		reason  Reason
		source  Source
	}{
		{name: "tls: redirected by default", doc: tlsIngress(true, "/"), section: "shop-example-com-https", code: 308, reason: ReasonHTTPSRedirectKeepsSlash, source: FromDefault},
		{name: "preserve-trailing-slash", doc: tlsIngress(true, "/", `preserve-trailing-slash: "true"`), section: "shop-example-com-https", code: 308, reason: ReasonHTTPSRedirectCarried, source: FromDefault},
		{name: "ssl-redirect false", doc: tlsIngress(true, "/", `ssl-redirect: "false"`)},
		{name: "ssl-redirect false in the ConfigMap", doc: tlsIngress(true, "/"), cm: map[string]string{"ssl-redirect": "false"}},
		{name: "ConfigMap false, annotation true", doc: tlsIngress(true, "/", `ssl-redirect: "true"`), cm: map[string]string{"ssl-redirect": "false"}, section: "shop-example-com-https", code: 308, reason: ReasonHTTPSRedirectKeepsSlash, source: FromAnnotation},
		{name: "http-redirect-code", doc: tlsIngress(true, "/"), cm: map[string]string{"http-redirect-code": "301"}, section: "shop-example-com-https", code: 301, reason: ReasonHTTPSRedirectKeepsSlash, source: FromDefault},
		{name: "http-redirect-code ingress-nginx ignores", doc: tlsIngress(true, "/"), cm: map[string]string{"http-redirect-code": "303"}, section: "shop-example-com-https", code: 308, reason: ReasonHTTPSRedirectKeepsSlash, source: FromDefault},
		{name: "force-ssl-redirect with tls", doc: tlsIngress(true, "/", `force-ssl-redirect: "true"`, `ssl-redirect: "false"`), section: "shop-example-com-https", code: 308, reason: ReasonHTTPSRedirectKeepsSlash, source: FromAnnotation},
		{name: "force-ssl-redirect without tls", doc: tlsIngress(false, "/", `force-ssl-redirect: "true"`), reason: ReasonHTTPSRedirectWithoutTLS, source: FromAnnotation},
		{name: "no tls", doc: tlsIngress(false, "/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cm *ConfigMap
			if tc.cm != nil {
				cm = &ConfigMap{Name: "ingress-nginx/c", Data: tc.cm}
			}
			res := importDoc(t, tc.doc, cm)
			main := res.Routes[0]
			if got := main.Spec.ParentRefs[0].SectionName; (got == nil) != (tc.section == "") || got != nil && string(*got) != tc.section {
				t.Errorf("parentRef sectionName %v, want %q", got, tc.section)
			}
			var redirect *gwv1.HTTPRoute
			for _, r := range res.Routes {
				if strings.HasSuffix(r.Name, "-ssl-redirect") {
					redirect = r
				}
			}
			switch {
			case tc.code == 0 && redirect != nil:
				t.Errorf("redirect route %+v, want none", redirect.Spec)
			case tc.code != 0 && redirect == nil:
				t.Fatalf("no redirect route")
			case tc.code != 0:
				f := redirect.Spec.Rules[0].Filters[0].RequestRedirect
				if string(*redirect.Spec.ParentRefs[0].SectionName) != "shop-example-com-http" || *f.Scheme != "https" || *f.StatusCode != tc.code || f.Path != nil || f.Port != nil {
					t.Errorf("redirect route %+v, filter %+v", redirect.Spec, f)
				}
				if *redirect.Spec.Rules[0].Matches[0].Path.Value != *main.Spec.Rules[0].Matches[0].Path.Value {
					t.Errorf("redirect matches %+v, want the rule's", redirect.Spec.Rules[0].Matches)
				}
			}
			var got []string
			for _, f := range res.Report.Findings {
				if strings.HasPrefix(string(f.Reason), "HTTPSRedirect") {
					got = append(got, report.WithParams(f.Reason, f.Params)+" "+string(f.Source))
				}
			}
			want := ""
			if tc.reason != "" {
				want = string(tc.reason) + " " + string(tc.source)
			}
			if tc.code != 0 {
				want = fmt.Sprintf("%s{code=%d, route=default/shop-shop-example-com-ssl-redirect} %s", tc.reason, tc.code, tc.source)
			}
			if strings.Join(got, ",") != want {
				t.Errorf("redirect findings %v, want %q", got, want)
			}
		})
	}
}

// Prefix /foo/ becomes PathPrefix /foo/, which matches /foo too; nginx's
// location "/foo/" does not, and answers /foo 301 to /foo/.
func TestBarePathRedirect(t *testing.T) {
	res := importDoc(t, tlsIngress(false, "/foo/"), nil)
	rules := res.Routes[0].Spec.Rules
	if len(rules) != 2 {
		t.Fatalf("%d rules, want the path's and the redirect of /foo", len(rules))
	}
	r := rules[1]
	f := r.Filters[0].RequestRedirect
	if *r.Matches[0].Path.Type != gwv1.PathMatchExact || *r.Matches[0].Path.Value != "/foo" || *f.StatusCode != 301 ||
		f.Path.Type != gwv1.FullPathHTTPPathModifier || *f.Path.ReplaceFullPath != "/foo/" || f.Scheme != nil || len(r.BackendRefs) != 0 {
		t.Errorf("rule %+v, filter %+v", r, f)
	}
	found := false
	for _, f := range res.Report.Findings {
		found = found || report.WithParams(f.Reason, f.Params) == "BarePathRedirected{bare=/foo, path=/foo/}" && f.Rule == 1 && f.Status == Carried
	}
	if !found {
		t.Errorf("no BarePathRedirected finding on rule 1: %+v", res.Report.Findings)
	}
	// Not when a path of the host is /foo itself, nor for Prefix /.
	for _, doc := range []string{
		tlsIngress(false, "/foo/") + "      - {path: /foo, pathType: Exact, backend: {service: {name: shop, port: {number: 80}}}}\n",
		tlsIngress(false, "/"),
		tlsIngress(false, "/foo"),
	} {
		res := importDoc(t, doc, nil)
		for _, r := range res.Routes[0].Spec.Rules {
			if len(r.Filters) > 0 {
				t.Errorf("%s: a redirect rule %+v", doc, r)
			}
		}
	}
}
