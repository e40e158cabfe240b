package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gwretry/gwretry/cluster"
	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// clusterFlags are kubectl's flags that say which cluster, namespace and
// routes a command reads when it is given no PATH (docs/cluster.md).
type clusterFlags struct {
	opts cluster.Options
	dump string
	// command names the command in the usage error when there is neither
	// PATH nor cluster.
	command string
	flags   *pflag.FlagSet
	// client is the cluster read, once connected.
	client *cluster.Client
}

// clusterFlagNames are the flags of clusterFlags, in the order defined.
var clusterFlagNames = []string{"kubeconfig", "context", "namespace", "all-namespaces", "selector", "chunk-size", "dump"}

// add defines the flags. main names the kind -l selects.
func (c *clusterFlags) add(f *pflag.FlagSet, main string) {
	f.StringVar(&c.opts.Kubeconfig, "kubeconfig", "", "without PATH: the kubeconfig `FILE` of the cluster to read (default: KUBECONFIG, then ~/.kube/config, then the Pod's service account)")
	f.StringVar(&c.opts.Context, "context", "", "without PATH: the kubeconfig `CONTEXT` whose cluster is read (default: the current context)")
	f.StringVarP(&c.opts.Namespace, "namespace", "n", "", "without PATH: the `NAMESPACE` whose objects are read (default: the context's)")
	f.BoolVarP(&c.opts.AllNamespaces, "all-namespaces", "A", false, "without PATH: read every namespace")
	f.StringVarP(&c.opts.Selector, "selector", "l", "", "without PATH: label `SELECTOR` of the "+main+" to read (what they refer to is read whatever its labels)")
	f.Int64Var(&c.opts.ChunkSize, "chunk-size", cluster.DefaultChunkSize, "without PATH: the most objects one list request returns (lists are paged)")
	f.StringVar(&c.dump, "dump", "", "without PATH: also write the objects read to `DIR`, one file per kind, so that the same command on DIR repeats the run offline")
	c.flags = f
}

// set is the first cluster flag given, "" when none is.
func (c *clusterFlags) set() string {
	if c.flags == nil {
		return ""
	}
	for _, n := range clusterFlagNames {
		if fl := c.flags.Lookup(n); fl != nil && fl.Changed {
			return n
		}
	}
	return ""
}

// checkSource is the Args check of a command that reads PATH... (or -f)
// or, without, the cluster: a cluster flag with PATH is a usage error.
func (c *clusterFlags) checkSource(name string, paths []string) error {
	c.command = name
	if len(paths) > 0 {
		if f := c.set(); f != "" {
			return usageErrorf("--%s says which cluster to read, PATH which files: give one of them (without PATH, %s reads the cluster of the kubeconfig)", f, name)
		}
	}
	if c.opts.Namespace != "" && c.opts.AllNamespaces {
		return usageErrorf("-n/--namespace and -A/--all-namespaces: give one of them")
	}
	return nil
}

// connect connects to the cluster, once.
func (c *clusterFlags) connect() (*cluster.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	cl, err := cluster.Connect(c.opts)
	if err != nil {
		var nc *cluster.NoConfigError
		if errors.As(err, &nc) && c.set() == "" {
			return nil, usageErrorf("%s needs at least one PATH (a file, a directory or - for stdin), as an argument or with -f, or a cluster to read: %v", c.command, err)
		}
		return nil, &exitError{code: exitUsage, err: err}
	}
	c.client = cl
	return cl, nil
}

// input reads the cluster into an Input as input.Load reads files, and
// writes --dump. A cluster that cannot be read (unreachable, forbidden,
// the main kind not served) is exit 1, as a file that cannot be read.
func (c *clusterFlags) input(lim input.Limits) (*input.Input, error) {
	cl, err := c.connect()
	if err != nil {
		return nil, err
	}
	var dump *cluster.Dump
	if c.dump != "" {
		if dump, err = cluster.NewDump(c.dump); err != nil {
			return nil, err
		}
	}
	in, err := cl.Input(context.Background(), lim, dump)
	if dump != nil {
		if cerr := dump.Close(); cerr != nil && err == nil {
			return nil, cerr
		}
		if in != nil {
			in.Notes = append(in.Notes, dumpNote(dump, c.command))
		}
	}
	return in, err
}

// dumpNote says what --dump wrote and how to repeat the run.
func dumpNote(d *cluster.Dump, command string) translate.Note {
	return translate.Info("", "--dump: wrote %d object(s) read from the cluster to %s: gwretry %s %s repeats this run offline", d.Objects, d.Dir(), command, d.Dir())
}

// where names the input for messages: the paths, or the cluster's scope.
func (c *clusterFlags) where(paths []string) string {
	if len(paths) == 0 && c.client != nil {
		return c.client.Scope()
	}
	return fmt.Sprint(paths)
}

// load is input.Load of paths, or of the cluster without them.
func (c *clusterFlags) load(paths []string, stdin io.Reader, lim input.Limits) (*input.Input, error) {
	if len(paths) == 0 {
		return c.input(lim)
	}
	return input.Load(paths, stdin, lim)
}

// defaultControllerConfigMap is the ConfigMap ingress-nginx's Helm chart
// and static manifests create for the controller.
const defaultControllerConfigMap = "ingress-nginx/ingress-nginx-controller"

// readCluster reads import ingress-nginx's input from the cluster: the
// Ingresses, IngressClasses and Services, and the controller's ConfigMap
// (--configmap NAMESPACE/NAME, else defaultControllerConfigMap: missing,
// a warning and ingress-nginx's built-in defaults).
func (o *importOptions) readCluster() (*ingressnginx.Input, *ingressnginx.ConfigMap, error) {
	cl, err := o.cl.connect()
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	var dump *cluster.Dump
	if o.cl.dump != "" {
		if dump, err = cluster.NewDump(o.cl.dump); err != nil {
			return nil, nil, err
		}
	}
	var docs []input.Document
	notes, err := cl.Read(ctx, cluster.ImportKinds, func(d input.Document) error {
		docs = append(docs, d)
		if dump != nil {
			return dump.Add(d)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	ref := o.configMap
	if ref == "" {
		ref = defaultControllerConfigMap
	}
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, nil, usageErrorf("--configmap %q: without PATH, the controller's ConfigMap in the cluster as NAMESPACE/NAME", o.configMap)
	}
	var cm *ingressnginx.ConfigMap
	d, err := cl.ConfigMap(ctx, ns, name)
	switch {
	case err != nil:
		return nil, nil, err
	case d == nil && o.configMap != "":
		return nil, nil, fmt.Errorf("--configmap %s: %s has no ConfigMap %s/%s", o.configMap, cl.Name(), ns, name)
	case d == nil:
		notes = append(notes, translate.Warning("", "%s has no ConfigMap %s (the controller's, as ingress-nginx's chart names it): ingress-nginx's built-in defaults are used; --configmap NAMESPACE/NAME names another", cl.Name(), ref))
	default:
		if cm, err = ingressnginx.ConfigMapOf(*d); err != nil {
			return nil, nil, err
		}
		if dump != nil {
			// Apart from the objects: gwretry import ingress-nginx DIR
			// --configmap DIR/configmap.yaml repeats the run.
			cmDump, err := cluster.NewDump(filepath.Join(o.cl.dump, "controller"))
			if err == nil {
				err = cmDump.Add(*d)
			}
			if cerr := cmDump.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	if dump != nil {
		if err := dump.Close(); err != nil {
			return nil, nil, err
		}
		again := o.cl.dump
		if cm != nil {
			again += " --exclude controller --configmap " + filepath.Join(o.cl.dump, "controller", cluster.FileOf("v1", "ConfigMap"))
		}
		notes = append(notes, translate.Info("", "--dump: wrote %d object(s) read from the cluster to %s: gwretry import ingress-nginx %s repeats this run offline", dump.Objects, o.cl.dump, again))
	}
	in, err := ingressnginx.FromDocuments(docs, nil, nil)
	if in != nil {
		in.Notes = append(notes, in.Notes...)
	}
	return in, cm, err
}

// snapshot reads the cluster into --dump DIR, or a temporary directory
// that cleanup removes, for a command that reads its input more than once
// (prove, per scenario). The objects are checked as they are read.
func (c *clusterFlags) snapshot(lim input.Limits) (dir string, cleanup func(), err error) {
	cleanup = func() {}
	if c.dump == "" {
		tmp, err := os.MkdirTemp("", "gwretry-cluster-")
		if err != nil {
			return "", cleanup, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		c.dump = tmp
		defer func() { c.dump = "" }()
	}
	if _, err := c.input(lim); err != nil {
		cleanup()
		return "", func() {}, inputError(err)
	}
	return c.dump, cleanup, nil
}

// completeContexts offers the contexts of the kubeconfig to --context.
func completeContexts(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	kubeconfig, _ := cmd.Flags().GetString("kubeconfig")
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for name := range raw.Contexts {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces offers the namespaces of the cluster to -n, as
// kubectl does: one list, cut short after a few seconds.
func completeNamespaces(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var o cluster.Options
	o.Kubeconfig, _ = cmd.Flags().GetString("kubeconfig")
	o.Context, _ = cmd.Flags().GetString("context")
	o.AllNamespaces = true
	cl, err := cluster.Connect(o)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []string
	_, _ = cl.Read(ctx, []cluster.Kind{{Kind: "Namespace", Resource: "namespaces", Versions: []string{"v1"}}}, func(d input.Document) error {
		out = append(out, d.Name)
		return nil
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}
