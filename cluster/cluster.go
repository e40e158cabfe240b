// Package cluster reads gwretry's input from a live Kubernetes API server,
// read-only, for the same pipeline as files: every object is handed to
// package input (input.Objects, or the documents the importer decodes),
// which decodes, validates and resolves it exactly as it would a file's.
//
//	Connect   the kubeconfig as kubectl resolves it (--kubeconfig, then
//	          KUBECONFIG, then ~/.kube/config; in a Pod, its service
//	          account), --context, the namespace (-n, else the context's)
//	Read      for each kind gwretry reads (TranslateKinds, ImportKinds):
//	          discovery says whether and in which version the cluster
//	          serves it; then one paged list (limit/continue, --chunk-size)
//	          per kind and namespace scope; the objects stripped of what the
//	          server sets and files do not hold (Strip), sorted by
//	          namespace and name, handed over kind by kind
//	Dump      writes what was read as files (one per kind), so that the
//	          same run repeats offline byte for byte
//
// It only gets and lists (config/rbac/clusterrole.yaml is every rule it
// needs). A kind the cluster does not serve (its CRD is not installed) is a
// note, not a failure, except the kind a command is about (HTTPRoutes,
// Ingresses); a forbidden list is an error naming the resource, the
// namespace and the RBAC rule that would allow it, since carrying on would
// write a configuration without objects that exist, except where reading
// none changes no output (GatewayClasses, Kind.Unused; the one Namespace
// of -n): a warning. Objects read from a
// cluster have no file or line: their Position says the cluster
// (Position.Cluster) and every error and finding names them by kind,
// namespace and name.
package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// DefaultChunkSize is the page size of every list, kubectl's --chunk-size
// default.
const DefaultChunkSize = 500

// Options say which cluster and which objects to read, with kubectl's
// flags.
type Options struct {
	// Kubeconfig is --kubeconfig: the file, instead of KUBECONFIG and
	// ~/.kube/config.
	Kubeconfig string
	// Context is --context: the kubeconfig context, instead of the
	// current one.
	Context string
	// Namespace is -n: the namespace whose objects are read, instead of
	// the context's.
	Namespace string
	// AllNamespaces is -A: every namespace.
	AllNamespaces bool
	// Selector is -l: a label selector on the objects a command is about
	// (HTTPRoutes; Ingresses for the import). The objects around them
	// (Gateways, Services, policies...) are all read: a route selected
	// needs them whatever their labels.
	Selector string
	// ChunkSize is --chunk-size: the most objects one list request
	// returns (0: DefaultChunkSize).
	ChunkSize int64
}

// Kind is one kind gwretry reads from a cluster.
type Kind struct {
	Group, Kind, Resource string
	// Versions are the versions package input reads, preferred first;
	// the first the cluster serves is listed.
	Versions   []string
	Namespaced bool
	// Main is the kind the command is about: -l selects among them, and
	// a cluster that does not serve it is an error.
	Main bool
	// Why says what gwretry reads the kind for, in the note of a cluster
	// that does not serve it.
	Why string
	// Unused, when set, says why reading none of the kind changes no
	// output: a forbidden list of it is then a warning, not an error.
	Unused string
}

// GroupResource is "httproutes.gateway.networking.k8s.io", as kubectl and
// RBAC name a resource ("services" for the core group).
func (k Kind) GroupResource() string {
	if k.Group == "" {
		return k.Resource
	}
	return k.Resource + "." + k.Group
}

// TranslateKinds are the kinds translate, check, explain, diff and prove
// read (package input's kinds that resolve uses), in the order they are
// read.
var TranslateKinds = []Kind{
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Resource: "gatewayclasses", Versions: []string{"v1", "v1beta1"}, Why: "the Gateways' classes",
		Unused: "gwretry validates GatewayClasses but resolves no route through them, so nothing else changes"},
	{Group: "gateway.networking.k8s.io", Kind: "Gateway", Resource: "gateways", Versions: []string{"v1", "v1beta1"}, Namespaced: true, Why: "the listeners routes attach to"},
	{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Resource: "httproutes", Versions: []string{"v1", "v1beta1"}, Namespaced: true, Main: true, Why: "the routes to translate"},
	{Group: "gateway.networking.k8s.io", Kind: "ReferenceGrant", Resource: "referencegrants", Versions: []string{"v1", "v1beta1"}, Namespaced: true, Why: "cross-namespace references are then refused, as the Gateway API does without a grant"},
	{Group: "", Kind: "Namespace", Resource: "namespaces", Versions: []string{"v1"}, Why: "the labels allowedRoutes selectors match"},
	{Group: "", Kind: "Service", Resource: "services", Versions: []string{"v1"}, Namespaced: true, Why: "the backends"},
	{Group: "discovery.k8s.io", Kind: "EndpointSlice", Resource: "endpointslices", Versions: []string{"v1"}, Namespaced: true, Why: "the backends' addresses"},
	{Group: "gwretry.io", Kind: "RetryPolicy", Resource: "retrypolicies", Versions: []string{"v1alpha1"}, Namespaced: true, Why: "gwretry's retry policies (config/crd)"},
	{Group: "gwretry.io", Kind: "ConnectionTimeoutPolicy", Resource: "connectiontimeoutpolicies", Versions: []string{"v1alpha1"}, Namespaced: true, Why: "gwretry's connection timeout policies (config/crd)"},
	{Group: "gateway.envoyproxy.io", Kind: "BackendTrafficPolicy", Resource: "backendtrafficpolicies", Versions: []string{"v1alpha1"}, Namespaced: true, Why: "Envoy Gateway's retry and timeout policies"},
}

// ImportKinds are the kinds import ingress-nginx reads; the controller's
// ConfigMap is got by name (Client.ConfigMap).
var ImportKinds = []Kind{
	{Group: "networking.k8s.io", Kind: "IngressClass", Resource: "ingressclasses", Versions: []string{"v1"}, Why: "which Ingresses the controller serves"},
	{Group: "networking.k8s.io", Kind: "Ingress", Resource: "ingresses", Versions: []string{"v1"}, Namespaced: true, Main: true, Why: "the Ingresses to import"},
	{Group: "", Kind: "Service", Resource: "services", Versions: []string{"v1"}, Namespaced: true, Why: "the backends' port names"},
}

// Client reads one cluster.
type Client struct {
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	// name is "cluster CONTEXT": the Position of every object read.
	name string
	// ns is the namespace read, "" for every namespace.
	ns   string
	opts Options
	// served caches discovery: the resources of each group/version, nil
	// when the cluster does not serve it.
	served map[string]map[string]bool
}

// Connect resolves the kubeconfig as kubectl does and returns a client of
// its cluster. Nothing is requested yet.
func Connect(o Options) (*Client, error) {
	if o.ChunkSize < 0 {
		return nil, fmt.Errorf("--chunk-size %d: want a positive number of objects per list request (0: %d)", o.ChunkSize, DefaultChunkSize)
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, &NoConfigError{Err: err}
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns := o.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	if o.AllNamespaces {
		ns = ""
	}
	name := o.Context
	if name == "" {
		if raw, err := cc.RawConfig(); err == nil {
			name = raw.CurrentContext
		}
	}
	if name == "" {
		name = "(in-cluster)"
	}
	return newClient(cfg, "cluster "+name, ns, o)
}

// NoConfigError is Connect's error when no kubeconfig is found: no
// --kubeconfig, KUBECONFIG or ~/.kube/config, and not in a Pod.
type NoConfigError struct{ Err error }

func (e *NoConfigError) Error() string {
	return "no cluster to read: no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config) and not running in a Pod: " + e.Err.Error()
}
func (e *NoConfigError) Unwrap() error { return e.Err }

// ForConfig returns a client of the cluster cfg names, read as name
// ("cluster NAME"), of namespace ns ("" for all): for tests and callers
// that have a rest.Config already.
func ForConfig(cfg *rest.Config, name, ns string, o Options) (*Client, error) {
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	return newClient(cfg, name, ns, o)
}

func newClient(cfg *rest.Config, name, ns string, o Options) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "gwretry (read-only)"
	if cfg.QPS == 0 && cfg.Burst == 0 {
		// kubectl's: client-go's default of 5 per second would make
		// the pages of a large cluster wait.
		cfg.QPS, cfg.Burst = 50, 300
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{dyn: dyn, disc: disc, name: name, ns: ns, opts: o, served: map[string]map[string]bool{}}, nil
}

// Name is "cluster CONTEXT".
func (c *Client) Name() string { return c.name }

// Scope says what is read: "cluster CONTEXT, namespace NS" or "cluster
// CONTEXT, all namespaces".
func (c *Client) Scope() string {
	s := c.name + ", all namespaces"
	if c.ns != "" {
		s = c.name + ", namespace " + c.ns
	}
	if c.opts.Selector != "" {
		s += ", selector " + c.opts.Selector
	}
	return s
}

// version is the version of k the cluster serves, "" when it serves none
// of those gwretry reads.
func (c *Client) version(ctx context.Context, k Kind) (string, error) {
	for _, v := range k.Versions {
		gv := schema.GroupVersion{Group: k.Group, Version: v}.String()
		res, ok := c.served[gv]
		if !ok {
			list, err := c.disc.ServerResourcesForGroupVersion(gv)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return "", fmt.Errorf("%s: discovery of %s: %w", c.name, gv, err)
			default:
				res = map[string]bool{}
				for _, r := range list.APIResources {
					res[r.Name] = true
				}
			}
			c.served[gv] = res
		}
		if res[k.Resource] {
			return v, nil
		}
	}
	return "", nil
}

// Read lists every kind of kinds and hands each object to emit, kind by
// kind in the order given and, in each kind, sorted by namespace and name.
// The notes say which kinds the cluster does not serve. A forbidden list,
// a main kind not served and any other failure of the API server are
// errors.
func (c *Client) Read(ctx context.Context, kinds []Kind, emit func(input.Document) error) ([]translate.Note, error) {
	var notes []translate.Note
	for _, k := range kinds {
		v, err := c.version(ctx, k)
		if err != nil {
			return notes, err
		}
		if v == "" {
			msg := fmt.Sprintf("%s does not serve %s (%s; its CRD is not installed): none read", c.name, k.GroupResource(), strings.Join(versions(k), ", "))
			if k.Main {
				return notes, fmt.Errorf("%s: %s", msg, "nothing to read: kubectl get crd "+k.GroupResource()+" says whether it is installed")
			}
			notes = append(notes, translate.Info("", "%s; %s", msg, k.Why))
			continue
		}
		docs, err := c.list(ctx, k, v)
		if err != nil {
			var skip *skipError
			if errors.As(err, &skip) {
				notes = append(notes, translate.Warning("", "%s", skip.msg))
				continue
			}
			return notes, err
		}
		for i := range docs {
			if err := emit(docs[i]); err != nil {
				return notes, err
			}
			docs[i].JSON = nil
		}
	}
	return notes, nil
}

// skipError is a read that is a warning, not a failure: the one Namespace
// of -n that RBAC does not let the user get.
type skipError struct{ msg string }

func (e *skipError) Error() string { return e.msg }

func versions(k Kind) []string {
	out := make([]string, len(k.Versions))
	for i, v := range k.Versions {
		out[i] = schema.GroupVersion{Group: k.Group, Version: v}.String()
	}
	return out
}

// list reads every object of k in the namespace scope, paged, stripped
// and sorted.
func (c *Client) list(ctx context.Context, k Kind, version string) ([]input.Document, error) {
	gvr := schema.GroupVersionResource{Group: k.Group, Version: version, Resource: k.Resource}
	apiVersion := schema.GroupVersion{Group: k.Group, Version: version}.String()
	var docs []input.Document
	add := func(obj map[string]any) error {
		obj["apiVersion"], obj["kind"] = apiVersion, k.Kind
		Strip(obj)
		j, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		md, _ := obj["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		docs = append(docs, input.Document{Pos: input.Position{Cluster: c.name}, APIVersion: apiVersion, Kind: k.Kind, Namespace: ns, Name: name, JSON: j})
		return nil
	}
	if k.Kind == "Namespace" && c.ns != "" {
		// -n NS: the one Namespace, for its labels.
		obj, err := c.dyn.Resource(gvr).Get(ctx, c.ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case apierrors.IsForbidden(err):
			return nil, &skipError{msg: c.forbidden(k, "get", "", c.ns, err).Error() + "; read without it: an allowedRoutes selector then matches no route of it"}
		case err != nil:
			return nil, fmt.Errorf("%s: get namespace %s: %w", c.name, c.ns, err)
		}
		return docs, add(obj.Object)
	}
	ns := ""
	if k.Namespaced {
		ns = c.ns
	}
	opts := metav1.ListOptions{Limit: c.opts.ChunkSize}
	if k.Main {
		opts.LabelSelector = c.opts.Selector
	}
	for {
		page, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
		switch {
		case apierrors.IsForbidden(err) && k.Unused != "":
			return nil, &skipError{msg: c.forbidden(k, "list", ns, "", err).Error() + "; read without them: " + k.Unused}
		case apierrors.IsForbidden(err):
			return nil, c.forbidden(k, "list", ns, "", err)
		case err != nil:
			return nil, fmt.Errorf("%s: list %s%s: %w", c.name, k.GroupResource(), inNamespace(ns, k.Namespaced), err)
		}
		for i := range page.Items {
			if err := add(page.Items[i].Object); err != nil {
				return nil, err
			}
			page.Items[i].Object = nil
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			break
		}
	}
	slices.SortFunc(docs, func(a, b input.Document) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return docs, nil
}

func inNamespace(ns string, namespaced bool) string {
	switch {
	case !namespaced:
		return ""
	case ns == "":
		return " in all namespaces"
	}
	return " in namespace " + ns
}

// ForbiddenError is a request RBAC refused: what, where, and the rule
// that would allow it.
type ForbiddenError struct {
	Cluster  string
	Verb     string
	Resource string
	// Namespace is where it was listed ("" for every namespace or a
	// cluster-scoped kind); Name the object got, if one was.
	Namespace, Name string
	Namespaced      bool
	// Rule is the RBAC rule that allows it, as YAML flow.
	Rule string
	Err  error
}

func (e *ForbiddenError) Error() string {
	what := e.Verb + " " + e.Resource
	if e.Name != "" {
		what += " " + e.Name
	}
	where := inNamespace(e.Namespace, e.Namespaced)
	role := "a ClusterRole"
	if e.Namespaced && e.Namespace != "" {
		role = "a Role in namespace " + e.Namespace + " (or a ClusterRole)"
	}
	return fmt.Sprintf("%s: cannot %s%s: forbidden (%v); gwretry needs %s with the rule %s bound to you (config/rbac/clusterrole.yaml holds every rule gwretry reads with)",
		e.Cluster, what, where, apiMessage(e.Err), role, e.Rule)
}
func (e *ForbiddenError) Unwrap() error { return e.Err }

func (c *Client) forbidden(k Kind, verb, ns, name string, err error) error {
	rule := fmt.Sprintf(`{apiGroups: [%q], resources: [%q], verbs: [%q]}`, k.Group, k.Resource, verb)
	if name != "" {
		rule = fmt.Sprintf(`{apiGroups: [%q], resources: [%q], resourceNames: [%q], verbs: [%q]}`, k.Group, k.Resource, name, verb)
	}
	return &ForbiddenError{Cluster: c.name, Verb: verb, Resource: k.GroupResource(), Namespace: ns, Name: name, Namespaced: k.Namespaced, Rule: rule, Err: err}
}

// apiMessage is the API server's own words for err.
func apiMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}

// ConfigMap gets the ConfigMap namespace/name (the ingress-nginx
// controller's), as a document; nil when the cluster has none.
func (c *Client) ConfigMap(ctx context.Context, namespace, name string) (*input.Document, error) {
	k := Kind{Group: "", Kind: "ConfigMap", Resource: "configmaps", Versions: []string{"v1"}, Namespaced: true}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	obj, err := c.dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		return nil, c.forbidden(k, "get", namespace, name, err)
	case err != nil:
		return nil, fmt.Errorf("%s: get configmap %s/%s: %w", c.name, namespace, name, err)
	}
	obj.Object["apiVersion"], obj.Object["kind"] = "v1", "ConfigMap"
	Strip(obj.Object)
	j, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	return &input.Document{Pos: input.Position{Cluster: c.name}, APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: name, JSON: j}, nil
}

// LastApplied is the annotation kubectl apply keeps the applied object in.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Strip removes from an object what the API server sets and a manifest
// does not hold, in place: metadata.managedFields, resourceVersion, uid,
// generation, selfLink, the last-applied-configuration annotation of
// kubectl apply (a second copy of the object), and status, which gwretry
// does not read. It keeps what the semantics need: creationTimestamp
// decides which route and policy is older, and the spec defaults the
// server filled in are the object as the cluster serves it.
func Strip(obj map[string]any) {
	delete(obj, "status")
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "selfLink"} {
		delete(md, f)
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, LastApplied)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
}

// Input reads TranslateKinds into an Input as input.Load reads files (the
// same decoding, checks and notes), each object also written to dump
// when it is not nil. Like Load, problems with objects come back as an
// input.ErrorList together with the Input of those that decoded; any other
// error with a nil Input.
func (c *Client) Input(ctx context.Context, lim input.Limits, dump *Dump) (*input.Input, error) {
	objs := input.NewObjects(lim)
	notes, err := c.Read(ctx, TranslateKinds, func(d input.Document) error {
		if dump != nil {
			if err := dump.Add(d); err != nil {
				return err
			}
		}
		return objs.Add(d.Pos, d.JSON)
	})
	if err != nil {
		return nil, err
	}
	in, err := objs.Input()
	in.Notes = append(notes, in.Notes...)
	return in, err
}
