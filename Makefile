# gwretry: `make run` translates the shipped example; `make test` installs
# what the tests need (nginx and HAProxy from Debian's packages, nginx 1.26
# and HAProxy 3.0 built from Debian's trixie source packages, the Traefik
# test binary built from the Go module proxy; kube-apiserver, Debian's
# etcd-server and the Gateway API CRDs for the API server agreement test)
# and runs every test.

GO            ?= go
TRAEFIK_VERSION := v3.6.12
CACHE_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gwretry
TRAEFIK_BIN   := $(CACHE_DIR)/traefik-$(TRAEFIK_VERSION)
# More versions for the end-to-end suite, built from Debian's source
# packages (tools/build-debian-source.sh) into the cache, once.
NGINX_SRC_VERSION   := 1.26.3
HAPROXY_SRC_VERSION := 3.0.11
SRC_SUITE           := trixie
NGINX_SRC_BIN   := $(CACHE_DIR)/nginx-$(NGINX_SRC_VERSION)/sbin/nginx
HAPROXY_SRC_BIN := $(CACHE_DIR)/haproxy-$(HAPROXY_SRC_VERSION)/sbin/haproxy
SUDO          := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export GWRETRY_TRAEFIK ?= $(TRAEFIK_BIN)

# The targets, and those with a data plane binary (comma-separated), as the
# registry (backends/registry.go) lists them; evaluated only by the rules
# that use them.
TARGETS      = $(shell $(GO) run ./tools/targets)
LIVE_TARGETS = $(shell $(GO) run ./tools/targets -live -sep ,)

.PHONY: all build kubectl-plugin run test fast unit e2e matrix docs bench bench-all corpus fuzz deps nginx nginx-lua haproxy traefik versions sarif-schema chromium egctl kube-apiserver etcd gateway-api-crds fmt vet check-fmt clean

all: build

build:
	$(GO) build -o bin/gwretry ./cmd/gwretry

## kubectl-plugin: bin/kubectl-gwretry, the kubectl plugin "kubectl gwretry",
## and bin/kubectl_complete-gwretry, the script kubectl (1.26 and later) runs
## to complete it: put bin/ on the PATH (docs/cluster.md).
kubectl-plugin: build
	ln -sf gwretry bin/kubectl-gwretry
	printf '#!/bin/sh\n# kubectl runs this to complete "kubectl gwretry ..." (kubectl 1.26 and later).\nexec kubectl-gwretry __complete "$$@"\n' > bin/kubectl_complete-gwretry
	chmod +x bin/kubectl_complete-gwretry

## run: translate the shipped example to Envoy; config on stdout, report on stderr.
run: build
	./bin/gwretry translate testdata/examples/retry.yaml --target envoy

## test: install the data planes when missing, then vet, format check, the
## fast tier under the race detector, and every test (the live ones too).
## TEST_TIMEOUT bounds each package's test binary: go test's default of 10m
## is too short for e2e/ (every scenario on every installed nginx, HAProxy
## and Traefik, one after the other) on a loaded 2-core machine.
TEST_TIMEOUT ?= 30m
test: deps vet check-fmt fast
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

## fast: the fast tier: every test that runs no data plane (go test -short
## skips the live tests and the long corpus runs), under the race detector.
fast:
	$(GO) test -short -race -count=1 ./...

## unit: every test, without installing anything (real-proxy tests skip if absent).
unit:
	$(GO) test ./...

## e2e: only the end-to-end suite against real nginx, HAProxy and Traefik
## (with the unit tests of its machinery, prove/).
e2e: deps
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./e2e/ ./prove/ ./internal/flaky/ ./internal/proxytest/

## matrix: run the end-to-end scenarios with gwretry prove on every installed
## data plane version and write docs/matrix.md from the verdicts.
matrix: deps build
	./bin/gwretry prove --suite --target $(LIVE_TARGETS) --matrix docs/matrix.md

## docs: write docs/cli.md (every command's --help) from the cobra commands.
docs:
	$(GO) test -count=1 -run '^TestCLIDoc$$' ./cmd/gwretry/ -update

## bench: whole processes on generated corpora of ROUTES routes (default
## 1000,10000): per size the decode-only baseline's wall and CPU seconds
## and peak resident set, then `translate --target all --output-dir DIR`
## and each target alone, each with its ratios to a decode run taken just
## before it (BenchmarkProcess; see docs/performance.md). bench-all runs
## every benchmark of every package (in-process stages, allocations).
ROUTES    ?= 1000,10000
BENCHTIME ?= 1x
bench:
	GWRETRY_BENCH_ROUTES=$(ROUTES) $(GO) test -run '^$$' -bench '^BenchmarkProcess$$' -benchtime $(BENCHTIME) -timeout 120m ./cmd/gwretry/

bench-all:
	GWRETRY_BENCH_ROUTES=$(ROUTES) $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 120m ./...

## corpus: write the benchmark corpus of N routes (default 10000) to out/.
N ?= 10000
corpus:
	@mkdir -p out
	$(GO) run ./tools/gencorpus -routes $(N) > out/corpus-$(N).yaml
	@echo out/corpus-$(N).yaml

## fuzz: long randomized runs (FUZZTIME per target, default 10m): random
## valid models through every backend and version, each judged by reading
## its configuration back; then Go's fuzzer on loading and resolution.
FUZZTIME ?= 10m
fuzz:
	for t in $(TARGETS); do \
		$(GO) test -count=1 -timeout 0 -run '^TestRandomModels$$' ./backends/ -v \
			-random-for=$(FUZZTIME) -random-target=$$t || exit 1; \
	done
	$(GO) test -run '^$$' -fuzz '^FuzzLoadAndBuild$$' -fuzztime $(FUZZTIME) ./resolve/

deps: nginx nginx-lua haproxy traefik versions sarif-schema chromium egctl kube-apiserver etcd gateway-api-crds

# A real API server, the authority on which Gateway API objects are valid
# (internal/kubeapitest; TestAPIServerAgrees in input/): kube-apiserver
# built from the Go module proxy by tools/build-kube-apiserver.sh into the
# cache when missing (about 3 minutes and 2.1 GB idle, once), Debian's
# etcd-server, and the Gateway API's CRDs copied from the module zip of
# sigs.k8s.io/gateway-api into the cache. Never committed.
KUBE_APISERVER_VERSION := v1.34.2
KUBE_APISERVER_BIN     := $(CACHE_DIR)/kube-apiserver-$(KUBE_APISERVER_VERSION)
export GWRETRY_KUBE_APISERVER ?= $(KUBE_APISERVER_BIN)
GATEWAY_API_VERSION := v1.7.0
GATEWAY_API_CRDS    := $(CACHE_DIR)/gateway-api-$(GATEWAY_API_VERSION)/crd
export GWRETRY_GATEWAY_API_CRDS ?= $(GATEWAY_API_CRDS)

kube-apiserver: $(KUBE_APISERVER_BIN)

$(KUBE_APISERVER_BIN):
	GO=$(GO) sh tools/build-kube-apiserver.sh $(KUBE_APISERVER_VERSION) $@

etcd:
	@command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || \
		{ echo "installing etcd-server from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; }
	@[ -x /usr/bin/etcd ] || command -v etcd >/dev/null

# The Gateway API releases whose CRDs Linkerd bundles (linkerd2's
# charts/linkerd-crds at version-2.16 and 2.17: v0.7.1 experimental; 2.18
# to 2.20: v1.1.1 experimental, the module's files unchanged but for Helm's
# templating): TestBundledCRDsAPIServer (backends/linkerd) installs them
# on the API server and dry-runs the Linkerd output of each version.
LINKERD_GATEWAY_API_VERSIONS := v0.7.1 v1.1.1

gateway-api-crds: $(GATEWAY_API_CRDS)/standard/gateway.networking.k8s.io_httproutes.yaml \
	$(foreach v,$(LINKERD_GATEWAY_API_VERSIONS),$(CACHE_DIR)/gateway-api-$(v)/crd/standard/gateway.networking.k8s.io_httproutes.yaml)

# $* is the release (v1.7.0, v0.7.1...).
$(CACHE_DIR)/gateway-api-%/crd/standard/gateway.networking.k8s.io_httproutes.yaml:
	@command -v unzip >/dev/null 2>&1 || \
		{ echo "installing unzip from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unzip >/dev/null; }
	@# The zip, not the extracted module: go refuses to extract a module
	@# whose go.mod needs a newer Go ("requires go >= 1.27.0") but
	@# downloads and verifies its zip.
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		zip=$$(cd "$$tmp" && $(GO) mod download -json sigs.k8s.io/gateway-api@$* | sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$$/\1/p') && \
		[ -f "$$zip" ] && unzip -q "$$zip" 'sigs.k8s.io/gateway-api@$*/config/crd/standard/*' 'sigs.k8s.io/gateway-api@$*/config/crd/experimental/*' -d "$$tmp/x" && \
		mkdir -p $(CACHE_DIR)/gateway-api-$* && rm -rf $(CACHE_DIR)/gateway-api-$*/crd && \
		mv "$$tmp/x/sigs.k8s.io/gateway-api@$*/config/crd" $(CACHE_DIR)/gateway-api-$*/crd

# Envoy Gateway's egctl, the authority on its BackendTrafficPolicy: the
# test TestEgctlBTP (backends/envoy) compares gwretry's Envoy routes with
# `egctl x translate`. Built from the Go module proxy into the cache when
# missing (about 5 minutes idle, a 330 MB binary), never committed.
EGCTL_VERSION := v1.9.1
EGCTL_BIN     := $(CACHE_DIR)/egctl-$(EGCTL_VERSION)/egctl
export GWRETRY_EGCTL ?= $(EGCTL_BIN)

egctl: $(EGCTL_BIN)

$(EGCTL_BIN):
	@mkdir -p $(dir $@)
	@echo "building Envoy Gateway egctl $(EGCTL_VERSION) into $@ (once)"
	GOBIN=$(dir $@) $(GO) install github.com/envoyproxy/gateway/cmd/egctl@$(EGCTL_VERSION)

# The official SARIF 2.1.0 JSON schema (2.1.0-rtm.5) that the tests of
# --report sarif validate against, as the npm package @microsoft/jest-sarif
# ships it: fetched with npm into the cache, checked against its pinned
# sha256, never committed.
SARIF_NPM_PACKAGE := @microsoft/jest-sarif@1.0.0-beta.0
SARIF_NPM_FILE    := package/lib/schemas/sarif-2.1.0-rtm.5.json
SARIF_SHA256      := 2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8
SARIF_SCHEMA      := $(CACHE_DIR)/sarif-schema-2.1.0.json
export GWRETRY_SARIF_SCHEMA ?= $(SARIF_SCHEMA)

sarif-schema: $(SARIF_SCHEMA)

$(SARIF_SCHEMA):
	@mkdir -p $(CACHE_DIR)
	@command -v npm >/dev/null 2>&1 || \
		{ echo "installing npm from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; }
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		( cd "$$tmp" && npm pack --silent $(SARIF_NPM_PACKAGE) >/dev/null && tar -xzf ./*.tgz $(SARIF_NPM_FILE) ) && \
		echo "$(SARIF_SHA256)  $$tmp/$(SARIF_NPM_FILE)" | sha256sum -c --quiet - && \
		cp "$$tmp/$(SARIF_NPM_FILE)" $@.tmp && mv $@.tmp $@

# Debian's chromium, in which the test of --report html loads the page
# (headless); installed when missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || \
		{ echo "installing chromium from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null

nginx:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || \
		{ echo "installing nginx from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; }
	@[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null

# The Lua module of Debian's nginx: TestLuaBalancerModel runs ingress-nginx's
# way of balancing (balancer_by_lua, set_more_tries) beside the file gwretry
# diff --from ingress-nginx writes for it.
nginx-lua: nginx
	@[ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] && [ -f /usr/share/lua/5.1/ngx/balancer.lua ] || \
		{ echo "installing nginx's Lua module from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnginx-mod-http-lua >/dev/null; }
	@[ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ]

haproxy:
	@command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || \
		{ echo "installing haproxy from Debian's packages"; \
		  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }
	@[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null

# The Traefik oracle is built from the Go module proxy in its own module
# (tools/traefik) and cached outside the repository; it is rebuilt only when
# missing (about 5 minutes on 2 cores).
traefik: $(TRAEFIK_BIN)

$(TRAEFIK_BIN):
	@mkdir -p $(CACHE_DIR)
	@echo "building Traefik $(TRAEFIK_VERSION) test binary into $@ (once)"
	cd tools/traefik && $(GO) build -o $@.tmp github.com/traefik/traefik/v3/cmd/traefik
	mv $@.tmp $@

# nginx 1.26 and HAProxy 3.0, built from Debian's source packages and cached
# outside the repository like Traefik; rebuilt only when missing (measured
# on a shared, loaded 2-core machine: nginx 55 s, HAProxy 3 min 10 s wall
# clock, 29 s and 81 s of CPU). The e2e suite runs every scenario on each.
versions: $(NGINX_SRC_BIN) $(HAPROXY_SRC_BIN)

$(NGINX_SRC_BIN):
	CACHE_DIR=$(CACHE_DIR) sh tools/build-debian-source.sh nginx $(NGINX_SRC_VERSION) $(SRC_SUITE)

$(HAPROXY_SRC_BIN):
	CACHE_DIR=$(CACHE_DIR) sh tools/build-debian-source.sh haproxy $(HAPROXY_SRC_VERSION) $(SRC_SUITE)

fmt:
	gofmt -w .

check-fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

clean:
	rm -rf bin out
