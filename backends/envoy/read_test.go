package envoy

import (
	"strings"
	"testing"
)

// readBootstrap is a bootstrap as gwretry writes it for one rule at /x:
// POST, PATCH and LOCK take the safe route, every other method the
// retrying one. Tests replace parts of it.
const readBootstrap = `static_resources:
  clusters:
  - connect_timeout: 10s
    load_assignment:
      cluster_name: c
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {address: 127.0.0.1, port_value: 8080}
    name: c
    type: STATIC
  listeners:
  - address:
      socket_address: {address: 127.0.0.1, port_value: 10080}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              '@type': type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
          route_config:
            name: r
            virtual_hosts:
            - domains: ['*']
              name: any
              routes:
              - match:
                  headers:
                  - name: :method
                    string_match:
                      safe_regex: {regex: POST|PATCH|LOCK}
                  path_separated_prefix: /x
                name: safe
                route:
                  cluster: c
                  retry_policy: {num_retries: 2, retry_on: connect-failure}
              - match: {path_separated_prefix: /x}
                name: retrying
                route:
                  cluster: c
                  retry_policy: {num_retries: 2, retry_on: 5xx}
          stat_prefix: s
    name: l
`

func TestReadBootstrapRejectsInvalid(t *testing.T) {
	if _, err := ReadBootstrap([]byte(readBootstrap)); err != nil {
		t.Fatalf("the fixture does not read: %v", err)
	}
	for name, broken := range map[string]string{
		"unknown field":    strings.Replace(readBootstrap, "stat_prefix: s", "stat_prefix: s\n          no_such_field: 1", 1),
		"invalid value":    strings.Replace(readBootstrap, "port_value: 10080", "port_value: 70000", 1),
		"bad typed config": strings.Replace(readBootstrap, "name: r\n", "name: r\n            virtual_hosts_typo: []\n", 1),
		"duplicate key":    strings.Replace(readBootstrap, "stat_prefix: s", "stat_prefix: s\n          stat_prefix: t", 1),
	} {
		if _, err := ReadBootstrap([]byte(broken)); err == nil {
			t.Errorf("%s: ReadBootstrap accepted it", name)
		}
	}
}

// TestFindRoute: the first route whose path and :method match, as Envoy
// picks it, with its clusters.
func TestFindRoute(t *testing.T) {
	bs, err := ReadBootstrap([]byte(readBootstrap))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, method, route string }{
		{"/x", "GET", "retrying"},
		{"/x/y", "PUT", "retrying"},
		{"/x", "POST", "safe"},
		{"/x/y", "LOCK", "safe"},
		{"/xy", "GET", ""},
		{"/", "GET", ""},
	} {
		got, err := FindRoute(bs, tc.path, tc.method)
		if tc.route == "" {
			if err == nil {
				t.Errorf("%s %s: route %s, want none", tc.method, tc.path, got.Route.GetName())
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.method, tc.path, err)
			continue
		}
		if got.Route.GetName() != tc.route || len(got.Clusters) != 1 || got.Clusters[0].GetName() != "c" || got.VirtualHost.GetName() != "any" {
			t.Errorf("%s %s: route %s, clusters %d; want %s to c", tc.method, tc.path, got.Route.GetName(), len(got.Clusters), tc.route)
		}
	}
}

// TestFindRouteInvalidShare: a weighted entry naming no cluster is the
// invalid backendRefs' share only when Envoy answers it 500 and loads the
// table.
func TestFindRouteInvalidShare(t *testing.T) {
	weighted := "cluster_not_found_response_code: INTERNAL_SERVER_ERROR\n                  weighted_clusters: {clusters: [{name: c, weight: 1}, {name: 'gwretry:invalid-backendRefs', weight: 1}]}"
	base := strings.Replace(readBootstrap, "route:\n                  cluster: c\n                  retry_policy: {num_retries: 2, retry_on: 5xx}",
		"route:\n                  "+weighted+"\n                  retry_policy: {num_retries: 2, retry_on: 5xx}", 1)
	unchecked := func(s string) string {
		return strings.Replace(s, "name: r\n", "name: r\n            validate_clusters: false\n", 1)
	}
	for name, tc := range map[string]struct {
		yaml string
		ok   bool
	}{
		"loaded and answered 500": {unchecked(base), true},
		"validated clusters":      {base, false},
		"answered 503":            {unchecked(strings.Replace(base, "INTERNAL_SERVER_ERROR", "SERVICE_UNAVAILABLE", 1)), false},
	} {
		t.Run(name, func(t *testing.T) {
			bs, err := ReadBootstrap([]byte(tc.yaml))
			if err != nil {
				t.Fatalf("%v\n%s", err, tc.yaml)
			}
			got, err := FindRoute(bs, "/x", "GET")
			if (err == nil) != tc.ok {
				t.Fatalf("FindRoute error %v, want ok %v", err, tc.ok)
			}
			if tc.ok && (len(got.Missing) != 1 || len(got.Clusters) != 1) {
				t.Errorf("clusters %d, missing %q; want one of each", len(got.Clusters), got.Missing)
			}
		})
	}
}
