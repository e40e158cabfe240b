package ingressnginx

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
)

// A value ingress-nginx's annotation parser refuses makes it serve the
// ConfigMap's value or its default and keep the Ingress
// (internal/ingress/annotations/proxy/main.go): the import did fail
// whole; it now imports what ingress-nginx serves, with an
// InvalidValueIgnored finding on the annotation.
func TestValuesIngressNginxTolerates(t *testing.T) {
	cm := &ConfigMap{Name: "ingress-nginx/ingress-nginx-controller", Data: map[string]string{ReadTimeout: "30", NextUpstream: "error timeout http_503"}}
	for _, tc := range []struct {
		name, annotation, value string
		cm                      *ConfigMap
		attempts                int
		backendRequest          string
		codes                   int
		source                  Source
	}{
		{name: "unit on a timeout", annotation: ReadTimeout, value: "20s", attempts: 2, backendRequest: "1m", source: FromDefault},
		{name: "unit on a timeout, ConfigMap", annotation: ReadTimeout, value: "20s", cm: cm, attempts: 2, backendRequest: "30s", codes: 1, source: FromConfigMap},
		{name: "double space", annotation: NextUpstream, value: "error  timeout  http_502", attempts: 2, backendRequest: "1m", source: FromDefault},
		{name: "double space, ConfigMap", annotation: NextUpstream, value: "error  http_502", cm: cm, attempts: 2, backendRequest: "30s", codes: 1, source: FromConfigMap},
		{name: "tries not a number", annotation: NextUpstreamTries, value: "abc", attempts: 2, backendRequest: "1m", source: FromDefault},
		{name: "empty tries", annotation: NextUpstreamTries, value: "", attempts: 2, backendRequest: "1m", source: FromDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(ingressDoc("a", "", "3", "Prefix", "/api", "svc"),
				"    nginx.ingress.kubernetes.io/proxy-next-upstream-tries: \"3\"\n",
				"    nginx.ingress.kubernetes.io/"+tc.annotation+": \""+tc.value+"\"\n", 1)
			in, err := Load([]string{"-"}, strings.NewReader(doc), input.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			res, err := Import(in, Options{ConfigMap: tc.cm})
			if err != nil {
				t.Fatalf("import failed: %v", err)
			}
			rule := res.Routes[0].Spec.Rules[0]
			if rule.Retry == nil || *rule.Retry.Attempts != tc.attempts || len(rule.Retry.Codes) != tc.codes {
				t.Errorf("retry %+v, want %d attempts, %d codes", rule.Retry, tc.attempts, tc.codes)
			}
			if rule.Timeouts == nil || rule.Timeouts.BackendRequest == nil || string(*rule.Timeouts.BackendRequest) != tc.backendRequest {
				t.Errorf("timeouts %+v, want backendRequest %s", rule.Timeouts, tc.backendRequest)
			}
			var ignored, effective bool
			for _, f := range res.Report.Findings {
				if f.Annotation != Prefix+tc.annotation {
					continue
				}
				switch {
				case f.Reason == ReasonInvalidValueIgnored && f.Status == NotCarried && f.Source == FromAnnotation && f.Value == tc.value && f.Rule == -1:
					ignored = true
				case f.Rule == 0 && f.Source == tc.source:
					effective = true
				}
			}
			if !ignored || !effective {
				t.Errorf("findings of %s: InvalidValueIgnored %v, the %s value's %v: %+v", tc.annotation, ignored, tc.source, effective, res.Report.Findings)
			}
		})
	}
}

// Values ingress-nginx accepts and writes into nginx.conf, which nginx
// or the Gateway API cannot take, stay errors.
func TestValuesIngressNginxPassesOnStayErrors(t *testing.T) {
	for _, v := range [][2]string{{NextUpstreamTries, "-1"}, {ReadTimeout, "0"}, {NextUpstream, "http_500http_502"}} {
		doc := strings.Replace(ingressDoc("a", "", "3", "Prefix", "/api", "svc"),
			"    nginx.ingress.kubernetes.io/proxy-next-upstream-tries: \"3\"\n",
			"    nginx.ingress.kubernetes.io/"+v[0]+": \""+v[1]+"\"\n", 1)
		in, err := Load([]string{"-"}, strings.NewReader(doc), input.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Import(in, Options{}); err == nil {
			t.Errorf("%s %q imported, want an error", v[0], v[1])
		}
	}
}
