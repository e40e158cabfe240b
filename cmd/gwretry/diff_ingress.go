package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/importer/ingressnginx/nginxconf"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// ingressNginx is the name --from takes for Ingresses served by
// ingress-nginx.
const ingressNginx = "ingress-nginx"

// ingressDiffInput is what diff --from ingress-nginx reads: the
// Ingresses imported as gwretry import ingress-nginx imports them, the
// model of the HTTPRoutes that the other side translates, and the
// configuration ingress-nginx's template writes for the Ingress paths.
type ingressDiffInput struct {
	res   *ingressnginx.Result
	model *translate.Model
	conf  *nginxconf.Config
}

// loadIngressDiff imports the Ingresses of paths with the ConfigMap file
// (or ingress-nginx's defaults), resolves the HTTPRoutes with ro, and
// writes ingress-nginx's locations with the endpoints the model resolved.
func loadIngressDiff(paths []string, stdin io.Reader, lim input.Limits, ro translate.ResolveOptions, ing ingressFlags, listen string) (*ingressDiffInput, error) {
	opts := ingressnginx.Options{Class: ing.class, Controller: ing.controller, WatchWithoutClass: ing.noClass, ClassByName: ing.byName}
	if ing.configMap != "" {
		cm, err := ingressnginx.LoadConfigMap(ing.configMap, lim)
		if err != nil {
			return nil, inputError(fmt.Errorf("--configmap: %w", err))
		}
		opts.ConfigMap = cm
	}
	in, err := ingressnginx.Load(paths, stdin, lim)
	if err != nil {
		return nil, inputError(err)
	}
	if len(in.Ingresses) == 0 {
		return nil, inputError(fmt.Errorf("--from ingress-nginx: no Ingress (networking.k8s.io/v1) in %s", strings.Join(paths, ", ")))
	}
	res, err := ingressnginx.Import(in, opts)
	if err != nil {
		return nil, inputError(err)
	}
	out, err := res.YAML()
	if err != nil {
		return nil, &exitError{code: exitInternal, err: err}
	}
	gin, err := input.Load([]string{"-"}, bytes.NewReader(out), lim)
	if err != nil {
		return nil, &exitError{code: exitInternal, err: &translate.InternalError{Err: fmt.Errorf("the imported HTTPRoutes do not load: %w", err)}}
	}
	m, err := resolve.Build(gin, ro)
	if err != nil {
		return nil, inputError(fmt.Errorf("the imported HTTPRoutes: %w", err))
	}
	rules := map[diffKey]*translate.Rule{}
	for _, r := range m.Rules {
		rules[diffKey{r.Route, r.Index}] = r
	}
	conf, err := nginxconf.Generate(res, listen, func(route string, rule int) []string {
		var out []string
		if r := rules[diffKey{route, rule}]; r != nil {
			for _, b := range r.Backends {
				for _, e := range b.Endpoints {
					out = append(out, net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
				}
			}
		}
		return out
	})
	if err != nil {
		return nil, &exitError{code: exitInternal, err: &translate.InternalError{Err: err}}
	}
	if len(conf.Locations) == 0 {
		return nil, inputError(fmt.Errorf("--from ingress-nginx: the controller described by --ingress-class, --controller-class, --watch-ingress-without-class and --ingress-class-by-name serves no Ingress path of %s (gwretry import ingress-nginx's report says why)", strings.Join(paths, ", ")))
	}
	return &ingressDiffInput{res: res, model: m, conf: conf}, nil
}

// ingressNginxSide reads the generated configuration back
// (nginxconf.Read) and builds each Ingress path's timelines against the
// HTTPRoute rule the import made of it; the codes behind an aspect are
// the import's findings of the settings behind it.
func ingressNginxSide(d *ingressDiffInput) (*diffSide, error) {
	behaviours, err := nginxconf.Read(d.conf.Data, d.conf.Locations)
	if err != nil {
		return nil, &translate.InternalError{Err: err}
	}
	rules := map[diffKey]*translate.Rule{}
	for _, r := range d.model.Rules {
		rules[diffKey{r.Route, r.Index}] = r
	}
	side := &diffSide{info: translate.TargetInfo{Name: ingressNginx, Version: nginxconf.Version}, paths: map[diffKey]nginxconf.Location{}}
	for i, loc := range d.conf.Locations {
		r := rules[diffKey{loc.Route, loc.Rule}]
		if r == nil {
			// A rule the model does not translate (SkippedRule): no
			// target side to compare it with.
			continue
		}
		side.paths[diffKey{loc.Route, loc.Rule}] = loc
		for _, c := range r.MethodClasses() {
			bh, ok := behaviours[i][c]
			if !ok {
				// No endpoint: not modelled, so nothing is said.
				tl := translate.Timeline{Target: ingressNginx, Version: nginxconf.Version, Route: r.Route, Rule: r.Index, RuleName: r.RuleName,
					Methods: c, Unread: true, RetriedOn: []string{}, Tries: []translate.Try{}, WorstCase: translate.Span{Unbounded: true}}
				side.timelines = append(side.timelines, tl)
				continue
			}
			tl := translate.RuleTimeline(r, bh)
			tl.Target, tl.Version, tl.Route, tl.Rule, tl.RuleName, tl.Methods = ingressNginx, nginxconf.Version, r.Route, r.Index, r.RuleName, c
			side.timelines = append(side.timelines, tl)
		}
	}
	side.why = func(tl translate.Timeline, fs ...report.Feature) string {
		loc, ok := side.paths[diffKey{tl.Route, tl.Rule}]
		if !ok {
			return "-"
		}
		worst, codes := "", []string{}
		rank := -1
		for _, f := range fs {
			for _, key := range settingsBehind[f] {
				fd, ok := loc.Findings[key]
				if !ok {
					continue
				}
				if fd.Status.Rank() > rank {
					worst, rank = string(fd.Status), fd.Status.Rank()
				}
				if fd.Status != ingressnginx.Carried && !slices.Contains(codes, string(fd.Reason)) {
					codes = append(codes, string(fd.Reason))
				}
			}
		}
		return whyText(worst, codes)
	}
	return side, nil
}

// settingsBehind are the ingress-nginx settings behind each aspect's
// features: their import findings name the ingress-nginx side's codes.
var settingsBehind = map[report.Feature][]string{
	report.FeatureRetryAttempts:         {ingressnginx.NextUpstreamTries, ingressnginx.NextUpstream},
	report.FeatureRetryCodes:            {ingressnginx.NextUpstream, ingressnginx.RetryNonIdempotent},
	report.FeatureRetryConnectionErrors: {ingressnginx.NextUpstream},
	report.FeatureBackendRequestTimeout: {ingressnginx.ReadTimeout},
	report.FeatureRequestTimeout:        {ingressnginx.NextUpstreamTimeout},
}

// diffFromIngress diffs ingress-nginx, as its template configures itself
// for the Ingresses of paths, with target to on the imported HTTPRoutes.
func diffFromIngress(o *options, ing *ingressFlags, ro translate.ResolveOptions, to translate.Target, paths []string, stdin io.Reader) (*diffReport, error) {
	listen := o.listen
	if listen == "" {
		listen = "0.0.0.0:8080"
	}
	di, err := loadIngressDiff(paths, stdin, o.limits, ro, *ing, listen)
	if err != nil {
		return nil, err
	}
	if ing.confOut != "" {
		if err := os.WriteFile(ing.confOut, di.conf.Data, 0o644); err != nil {
			return nil, &exitError{code: exitInput, err: err}
		}
	}
	a, err := ingressNginxSide(di)
	if err != nil {
		return nil, err
	}
	b, err := targetSide(di.model, to, o.retryNonIdempotent)
	if err != nil {
		return nil, err
	}
	return diffSides(a, b), nil
}

// defaultIngressClass is ingress-nginx's --ingress-class default.
const defaultIngressClass = "nginx"

// ingressFlags are the flags of --from ingress-nginx (diff and explain):
// the ConfigMap and the controller's flags, as gwretry import
// ingress-nginx takes them.
type ingressFlags struct {
	configMap, class, controller string
	noClass, byName              bool
	// confOut is diff's --ingress-nginx-conf.
	confOut string
}

// addFlags adds the flags; with conf, --ingress-nginx-conf too.
func (ing *ingressFlags) addFlags(f *pflag.FlagSet, conf bool) {
	f.StringVar(&ing.configMap, "configmap", "", "with --from ingress-nginx: the controller's ConfigMap `FILE`, whose values are the defaults of every Ingress")
	f.StringVar(&ing.class, "ingress-class", defaultIngressClass, "with --from ingress-nginx: the controller's --ingress-class")
	f.StringVar(&ing.controller, "controller-class", ingressnginx.DefaultController, "with --from ingress-nginx: the controller's --controller-class")
	f.BoolVar(&ing.noClass, "watch-ingress-without-class", false, "with --from ingress-nginx: the controller's --watch-ingress-without-class")
	f.BoolVar(&ing.byName, "ingress-class-by-name", false, "with --from ingress-nginx: the controller's --ingress-class-by-name")
	if conf {
		f.StringVar(&ing.confOut, "ingress-nginx-conf", "", "with --from ingress-nginx: also write the nginx configuration of ingress-nginx's template for the Ingress paths to `FILE`")
	}
}

// set reports whether a flag of --from ingress-nginx differs from its
// default.
func (ing *ingressFlags) set() bool {
	return ing.configMap != "" || ing.confOut != "" || ing.class != defaultIngressClass ||
		ing.controller != ingressnginx.DefaultController || ing.noClass || ing.byName
}
