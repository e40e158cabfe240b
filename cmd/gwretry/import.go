package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// importOptions are the flags of import ingress-nginx.
type importOptions struct {
	output     string
	configMap  string
	class      string
	controller string
	noClass    bool
	byName     bool
	report     string
	reportFile string
	// files are -f/--filename; outFile is --output-file.
	files   []string
	outFile string
	verbosity
	limits input.Limits
	// cl reads a cluster when no PATH is given.
	cl clusterFlags
}

func newImportCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import SOURCE [PATH...]",
		Short: "Write Gateway API HTTPRoutes from another controller's objects",
		Long: `import reads another controller's objects and writes the Gateway API HTTPRoutes and
Gateways that gwretry translate reads, with a report of what each setting becomes.`,
		Example: "  gwretry import ingress-nginx ingresses.yaml > routes.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("import needs a source: ingress-nginx")
		},
	}
	cmd.AddCommand(newImportIngressNginxCmd(stdin, stdout, stderr))
	return cmd
}

func newImportIngressNginxCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	o := &importOptions{limits: input.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "ingress-nginx [PATH...]",
		Short: "Write HTTPRoutes and Gateways from Ingresses with ingress-nginx annotations",
		Long: `ingress-nginx reads Ingresses (networking.k8s.io/v1) and Services from PATH... (files,
directories searched recursively for *.yaml, *.yml and *.json, or - for stdin) or, without PATH,
from the cluster of the kubeconfig (-n, -A, -l, --context, --dump DIR as translate; the
controller's ConfigMap is --configmap NAMESPACE/NAME there, by default
ingress-nginx/ingress-nginx-controller) and writes one
HTTPRoute per namespace and host and one Gateway per namespace, named after --ingress-class,
as ingress2gateway maps them, for the Ingresses the controller described by --ingress-class,
--controller-class, --watch-ingress-without-class and --ingress-class-by-name serves (the
others are listed as not imported; give the IngressClasses in PATH too), whose rules[].retry and rules[].timeouts carry ingress-nginx's
proxy-next-upstream, proxy-next-upstream-tries, proxy-next-upstream-timeout,
proxy-connect-timeout, proxy-read-timeout and proxy-send-timeout, from the annotations, else
from the controller's ConfigMap (--configmap), else ingress-nginx's defaults. The YAML goes to
stdout (or --output-file FILE), ready for gwretry translate; the report of every setting (carried,
approximated or not-carried, and how the behaviour changes) goes to stderr.
Exit codes: 0 ok, 1 invalid input, 2 usage, 70 an internal error of gwretry.`,
		Example: `  gwretry import ingress-nginx ingresses.yaml > routes.yaml
  gwretry import ingress-nginx manifests/ --configmap ingress-nginx-controller.yaml --output-file routes.yaml
  kubectl get ingress -A -o yaml | gwretry import ingress-nginx - | gwretry translate - --target nginx
  kubectl gwretry import ingress-nginx -A --output-file routes.yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			return o.cl.checkSource("import ingress-nginx", append(args, o.files...))
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runImportIngressNginx(o, append(args, o.files...), stdin, stdout, stderr)
		},
	}
	f := cmd.Flags()
	addFilenameFlag(f, &o.files)
	f.StringVarP(&o.output, "output", "o", "yaml", "`FORMAT` of the HTTPRoutes and Gateways: yaml (-o FILE, the old spelling of --output-file FILE, still works with a warning)")
	f.StringVar(&o.outFile, "output-file", "", "write the HTTPRoutes and Gateways to `FILE` instead of stdout")
	f.StringVar(&o.configMap, "configmap", "", "the ingress-nginx controller's ConfigMap `FILE`, whose values are the defaults of every Ingress; without PATH, its NAMESPACE/NAME in the cluster (default "+defaultControllerConfigMap+")")
	f.StringVar(&o.class, "ingress-class", "nginx", "the controller's --ingress-class: the kubernetes.io/ingress.class value it serves, the IngressClass assumed its own when not in the input, and the name of the Gateways")
	f.StringVar(&o.controller, "controller-class", ingressnginx.DefaultController, "the controller's --controller-class: IngressClasses with this spec.controller are served")
	f.BoolVar(&o.noClass, "watch-ingress-without-class", false, "the controller's --watch-ingress-without-class: also import Ingresses that name no class")
	f.BoolVar(&o.byName, "ingress-class-by-name", false, "the controller's --ingress-class-by-name: the IngressClass named --ingress-class is served whatever its spec.controller")
	f.StringVar(&o.report, "report", "text", "report format on stderr: text, json or none")
	f.StringVar(&o.reportFile, "report-file", "", "write the report to `FILE` instead of stderr")
	o.verbosity.addFlags(f)
	f.Int64Var(&o.limits.MaxInputBytes, "max-input-bytes", o.limits.MaxInputBytes, "maximum bytes read from all inputs")
	f.IntVar(&o.limits.MaxDocumentBytes, "max-document-bytes", o.limits.MaxDocumentBytes, "maximum bytes of one YAML or JSON document")
	f.IntVar(&o.limits.MaxDocuments, "max-documents", o.limits.MaxDocuments, "maximum number of documents")
	f.StringArrayVar(&o.limits.Exclude, "exclude", nil, "`GLOB` of files and directories a directory's walk does not read, matched against the path below the directory given and the base name (repeatable; e.g. --exclude 'charts' --exclude '*-values.yaml')")
	o.cl.add(f, "Ingresses")
	return cmd
}

func runImportIngressNginx(o *importOptions, paths []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch o.report {
	case "text", "json", "none":
	default:
		return usageErrorf("--report %q: want text, json or none", o.report)
	}
	switch {
	case o.output == formatYAML:
	case o.output == formatJSON:
		return usageErrorf("-o json: import writes YAML only (-o yaml)")
	default:
		// -o FILE, the spelling before --output-file.
		if err := checkOutFile(o.output); err != nil {
			return err
		}
		if o.outFile != "" {
			return usageErrorf("-o %s: -o is the output format (yaml); the file is --output-file %s", o.output, o.outFile)
		}
		o.outFile = o.output
		fmt.Fprintf(stderr, "warning: -o FILE is deprecated: use --output-file %s (-o is the output format: yaml)\n", o.output)
	}
	if o.limits.MaxInputBytes <= 0 || o.limits.MaxDocumentBytes <= 0 || o.limits.MaxDocuments <= 0 {
		return usageErrorf("--max-input-bytes, --max-document-bytes and --max-documents must be positive")
	}
	if err := input.CheckExclude(o.limits.Exclude); err != nil {
		return usageErrorf("%v", err)
	}
	opts := ingressnginx.Options{Class: o.class, Controller: o.controller, WatchWithoutClass: o.noClass, ClassByName: o.byName}
	var in *ingressnginx.Input
	if len(paths) == 0 {
		var err error
		if in, opts.ConfigMap, err = o.readCluster(); err != nil {
			return inputError(err)
		}
	} else {
		if o.configMap != "" {
			cm, err := ingressnginx.LoadConfigMap(o.configMap, o.limits)
			if err != nil {
				return inputError(fmt.Errorf("--configmap: %w", err))
			}
			opts.ConfigMap = cm
		}
		var err error
		if in, err = ingressnginx.Load(paths, stdin, o.limits); err != nil {
			return inputError(err)
		}
	}
	if len(in.Ingresses) == 0 {
		return inputError(fmt.Errorf("no Ingress (networking.k8s.io/v1) in %s", o.cl.where(paths)))
	}
	res, err := ingressnginx.Import(in, opts)
	if err != nil {
		return inputError(err)
	}
	out, err := res.YAML()
	if err != nil {
		return &exitError{code: exitInternal, err: err}
	}
	if err := validateImported(out, o.limits); err != nil {
		return err
	}
	o.verbosity.print(stderr, slices.Concat(in.Notes, res.Notes))
	if o.outFile != "" {
		if err := os.WriteFile(o.outFile, out, 0o644); err != nil {
			return err
		}
	} else if _, err := stdout.Write(out); err != nil {
		return err
	}
	var data []byte
	switch o.report {
	case "none":
		return nil
	case "json":
		b, err := json.MarshalIndent(res.Report, "", "  ")
		if err != nil {
			return err
		}
		data = append(b, '\n')
	default:
		data = importReportText(res.Report, res.Sources)
	}
	if o.reportFile != "" {
		return os.WriteFile(o.reportFile, data, 0o644)
	}
	_, err = stderr.Write(data)
	return err
}

// validateImported reads the output back as gwretry translate does: it
// must load strictly, validate against the CRDs and resolve.
func validateImported(out []byte, lim input.Limits) error {
	in, err := input.Load([]string{"-"}, bytes.NewReader(out), lim)
	if err == nil {
		_, err = resolve.Build(in, translate.ResolveOptions{})
	}
	if err == nil {
		return nil
	}
	if input.IsInputError(err) {
		// A value the input carried (a regular expression, a name) that
		// gwretry translate refuses.
		return &exitError{code: exitInput, err: fmt.Errorf("the imported HTTPRoutes do not pass gwretry's validation (fix the Ingresses and import again):\n%w", err)}
	}
	return &exitError{code: exitInternal, err: &translate.InternalError{Err: err}}
}

// importReportText is the readable report: the findings grouped by
// Ingress, each headed by the file and document it was read from.
func importReportText(r *ingressnginx.Report, sources map[string]input.Position) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "gwretry import ingress-nginx: %d Ingress(es) -> %d HTTPRoute(s), %d Gateway(s); defaults: ", r.Ingresses, r.Routes, r.Gateways)
	if r.ConfigMap != "" {
		fmt.Fprintf(&buf, "ConfigMap %s, then ingress-nginx's built-in ones\n", r.ConfigMap)
	} else {
		buf.WriteString("ingress-nginx's built-in ones (no --configmap)\n")
	}
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	for i, f := range r.Findings {
		if i == 0 || f.Ingress != r.Findings[i-1].Ingress {
			tw.Flush()
			header := "\nIngress " + f.Ingress
			if pos, ok := sources[f.Ingress]; ok {
				header += " (" + pos.String() + ")"
			}
			fmt.Fprintln(&buf, header)
			fmt.Fprintln(tw, "  HTTPROUTE\tRULE\tANNOTATION\tSOURCE\tVALUE\tSTATUS\tREASON\tMESSAGE")
		}
		route, rule := f.Route, strconv.Itoa(f.Rule)
		if f.Rule < 0 {
			route, rule = "-", "-"
		}
		v := f.Value
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", route, rule, f.Annotation, f.Source, v, f.Status, f.Reason, f.Text())
	}
	tw.Flush()
	return buf.Bytes()
}

// checkOutFile refuses an -o that names a format (kubectl's -o yaml) rather
// than a file: import always writes YAML.
func checkOutFile(file string) error {
	if !slices.Contains(formatWords, strings.ToLower(file)) && !isFormat(file) {
		return nil
	}
	return usageErrorf("-o %s: import's -o is the output format, yaml, and --output-file FILE the file to write the routes into; for the report's format use --report text|json", file)
}
