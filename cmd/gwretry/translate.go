package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// options are the flags of translate and check.
type options struct {
	target string
	outDir string
	// output is -o: yaml|json, or (deprecated) a directory.
	output string
	// files are -f/--filename: PATHs, as the arguments.
	files              []string
	report             string
	reportFile         string
	failOn             string
	failInclude        string
	failExclude        string
	gate               gate
	listen             string
	endpoints          []string
	retryNonIdempotent bool
	assumeGrants       bool
	tlsDir             string
	certDir            string
	listenTLS          string
	channel            string
	// settings hold the values of the targets' own flags
	// (backends.Flags), by flag name.
	settings map[string]*string
	// available builds the backends from settings: backends.Configured,
	// or a test's own.
	available func(backends.Settings) ([]translate.Backend, error)
	verbosity
	limits input.Limits
	// check is translate --check: compare outDir with what would be
	// written, write nothing.
	check bool
	// format is "yaml" or "json" when -o names a stdout format.
	format  string
	console console
	// cl reads a cluster when no PATH is given.
	cl clusterFlags
}

func newTranslateCmd(stdin io.Reader, stdout, stderr io.Writer, checkOnly bool) *cobra.Command {
	o := &options{limits: input.DefaultLimits(), available: backends.Configured, console: realConsole()}
	cmd := &cobra.Command{
		Use:   "translate [PATH...]",
		Short: "Write data plane configurations and the report",
		Long: `translate reads PATH... (files, directories searched recursively for *.yaml, *.yml and
*.json in sorted order, or - for stdin; -f PATH as kubectl's), validates the manifests as the API
server would, and writes each target's configuration.
Without PATH it reads the cluster of the kubeconfig instead, as kubectl does (--kubeconfig,
KUBECONFIG, ~/.kube/config, or the Pod's service account; --context; -n NAMESPACE, else the
context's, or -A for every namespace; -l SELECTOR of the HTTPRoutes): only get and list, paged by
--chunk-size; objects are named KIND NAMESPACE/NAME instead of FILE:LINE. --dump DIR also writes
what was read as files, to repeat the run offline (docs/cluster.md).

Without --output-dir the configuration of the single target goes to stdout; with --output-dir
DIR every target's files and DIR/report.json are written. The report goes to stderr (--report, text by default; coloured on a terminal, unless
NO_COLOR is set). Warnings go to stderr; the info lines only with -v.
On a terminal, an input that takes more than a second shows a progress line on stderr, erased
when translate ends.

-o yaml and -o json print the single target's configuration on stdout in that format, where its
data plane reads it (Envoy's bootstrap, Traefik's static and dynamic files); nginx and HAProxy
have their own syntax, so -o yaml|json is a usage error for them. -o DIR, the spelling before
--output-dir, still works and says so in a warning.

Without @VERSION a target is written for the newest version the live tests prove (nginx 1.26,
HAProxy 3.0, Traefik 3.6; the others their newest), and a warning says so: --target nginx@1.28
pins a newer one. With --tls-dir, the configurations name the certificates under --cert-dir
(default /etc/gwretry/certs), where the proxy host keeps them, not where gwretry read them.

--check (with --output-dir DIR) writes nothing: it compares what translate would write with what DIR
holds and prints a unified diff per file that differs (paths relative to DIR: patch -p1 -d DIR
applies it). A file missing from DIR differs, and so does a file DIR holds under a target's
directory (DIR/nginx/...) that translate would no longer write. It exits 4 when a file differs.

Exit codes: 0 ok, 1 invalid input, 2 usage, 3 --fail-on reached, 4 --check found a difference
(it wins over 3), 70 an internal error of gwretry.`,
		Example: `  # Envoy bootstrap on stdout, report table on stderr
  gwretry translate route.yaml --target envoy

  # every data plane, for CI: out/ is diffed against goldens
  gwretry translate manifests/ --target all --output-dir out/

  # pin versions; point the proxies at a local backend
  gwretry translate -f route.yaml --target nginx@1.22,haproxy@2.6 --output-dir out/ \
      --listen 127.0.0.1:8080 --endpoint infra-backend-v1:8080=127.0.0.1:3000

  # fail the build when something cannot be honoured
  gwretry translate manifests/ --target traefik@3.6 --output-dir out/ --fail-on unsupported

  # CI: exit 4 with a diff when the committed out/ is not what gwretry writes
  gwretry translate manifests/ --target all --output-dir out/ --check

  # HTTPS listeners: certificates read from ./certs, named in the files under /etc/gwretry/certs
  gwretry translate route.yaml --target nginx --tls-dir certs/

  # Traefik's configuration as JSON on stdout
  gwretry translate route.yaml --target traefik -o json

  # what runs in the cluster of the current context, every namespace (kubectl gwretry as a plugin)
  gwretry translate -A --target all --output-dir out/`,
	}
	if checkOnly {
		cmd.Use = "check [PATH...]"
		cmd.Short = "Validate manifests and report, without writing configurations"
		cmd.Long = `check reads and validates PATH... like translate and prints the report of what each
target honours on stdout, but writes no configuration. Problems and notes go to stderr.
Without PATH it reads the cluster of the kubeconfig, as translate does (-n, -A, -l, --context,
--dump DIR; docs/cluster.md).
Exit codes: 1 invalid input, 2 usage, 3 --fail-on reached, 70 an internal error of gwretry.`
		cmd.Example = `  gwretry check manifests/
  gwretry check route.yaml --target nginx@1.22,haproxy@3.2 -o json
  cat route.yaml | gwretry check - --fail-on approximated
  kubectl gwretry check -n shop --context prod --fail-on unsupported`
	}
	cmd.Args = o.needPaths(cmd.Name())
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		return runTranslate(o, append(args, o.files...), stdin, stdout, stderr, checkOnly)
	}
	f := cmd.Flags()
	names := strings.Join(backendNames(), ", ")
	if checkOnly {
		f.StringVar(&o.target, "target", "all", "comma list of NAME or NAME@VERSION ("+names+") or all")
	} else {
		f.StringVar(&o.target, "target", "", "comma list of NAME or NAME@VERSION ("+names+") or all (required)")
		f.StringVarP(&o.output, "output", "o", "", formatHelp())
		f.StringVar(&o.outDir, "output-dir", "", "`DIR` to write every target's files and report.json under")
		f.BoolVar(&o.check, "check", false, "with --output-dir DIR: write nothing, print a diff of what would change in DIR and exit 4 if anything would")
	}
	if checkOnly {
		// The report is check's output: -o is its format, as everywhere.
		f.StringVarP(&o.report, "report", "o", "text", "report format on stdout: text (a summary, then per rule what is not honoured and why), table (a line per finding: configured, reason or caveats), wide (and its words), json (report.json), sarif (SARIF 2.1.0 for code scanning), github (workflow annotations), markdown (a pull-request comment), html (one self-contained page) or none")
		f.StringVar(&o.reportFile, "report-file", "", "write the report to `FILE` instead of stdout")
	} else {
		f.StringVar(&o.report, "report", "text", "report format on stderr: text (a summary, then per rule what is not honoured and why), table (a line per finding: configured, reason or caveats), wide (and its words), json (report.json), sarif (SARIF 2.1.0 for code scanning), github (workflow annotations), markdown (a pull-request comment), html (one self-contained page) or none")
		f.StringVar(&o.reportFile, "report-file", "", "write the report to `FILE` instead of stderr")
	}
	f.StringVar(&o.failOn, "fail-on", "none", "exit 3 when a finding is at least: none, approximated or unsupported (not-applicable findings never count)")
	f.StringVar(&o.failInclude, "fail-include", "", "with --fail-on: count only findings of these targets, features or reason and caveat codes (`LIST`, comma-separated)")
	f.StringVar(&o.failExclude, "fail-exclude", "", "with --fail-on: never count findings of these targets, features or reasons, nor those whose every caveat is listed (`LIST`)")
	o.addInputFlags(cmd)
	o.verbosity.addFlags(f)
	return cmd
}

// addInputFlags defines the flags that say how the input is read and
// resolved and how the backends are set up; translate, check and explain
// share them.
func (o *options) addInputFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	addFilenameFlag(f, &o.files)
	f.StringVar(&o.listen, "listen", "", "`HOST:PORT` every generated proxy listens on (default: the Gateway listener port on 0.0.0.0, or 0.0.0.0:8080)")
	f.StringArrayVar(&o.endpoints, "endpoint", nil, "`NAME[.NAMESPACE]:PORT=HOST:PORT[,HOST:PORT...]` addresses of a Service port (repeatable)")
	f.BoolVar(&o.retryNonIdempotent, "retry-non-idempotent", false, "also retry POST, PATCH and LOCK requests where the data plane can")
	f.StringVar(&o.channel, "channel", "standard", "Gateway API release channel whose v1.7.0 CRDs validate the input: standard or experimental (experimental-only fields are unknown fields in standard)")
	f.StringVar(&o.tlsDir, "tls-dir", "", "generate HTTPS listeners with the certificate of Secret NS/NAME in `DIR`/NS/NAME/tls.crt and tls.key")
	f.StringVar(&o.certDir, "cert-dir", translate.DefaultCertDir, "with --tls-dir: the absolute `DIR` of the proxy host the configurations read the certificates from (DIR/NS/NAME/tls.crt and tls.key); give the --tls-dir directory to run the proxy where gwretry runs")
	f.StringVar(&o.listenTLS, "listen-https", "", "`HOST:PORT` every generated HTTPS listener binds (with --listen, which then applies to HTTP listeners)")
	f.BoolVar(&o.assumeGrants, "assume-reference-grants", false, "permit every cross-namespace backendRef, for inputs without their ReferenceGrants")
	o.settings = map[string]*string{}
	for _, fl := range backends.Flags() {
		o.settings[fl.Name] = f.String(fl.Name, fl.Default, fl.Usage)
	}
	f.Int64Var(&o.limits.MaxInputBytes, "max-input-bytes", o.limits.MaxInputBytes, "maximum bytes read from all inputs")
	f.IntVar(&o.limits.MaxDocumentBytes, "max-document-bytes", o.limits.MaxDocumentBytes, "maximum bytes of one YAML or JSON document")
	f.IntVar(&o.limits.MaxDocuments, "max-documents", o.limits.MaxDocuments, "maximum number of documents")
	f.StringArrayVar(&o.limits.Exclude, "exclude", nil, "`GLOB` of files and directories a directory's walk does not read, matched against the path below the directory given and the base name (repeatable; e.g. --exclude 'charts' --exclude '*-values.yaml')")
	o.cl.add(f, "HTTPRoutes")
}

// needPaths is the Args check of a command that reads PATH... (or -f), or
// the cluster without them.
func (o *options) needPaths(name string) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		return o.cl.checkSource(name, append(args, o.files...))
	}
}

func backendNames() []string {
	var names []string
	for _, b := range backends.All() {
		names = append(names, b.Name())
	}
	return names
}

// prepare checks the flags that need no input. stderr takes the warning
// of a deprecated spelling.
func (o *options) prepare(checkOnly bool, stderr io.Writer) ([]translate.Target, translate.ResolveOptions, error) {
	ro, err := o.resolveOptions()
	if err != nil {
		return nil, ro, err
	}
	targets, err := o.targets()
	if err != nil {
		return nil, ro, err
	}
	switch {
	case isFormat(o.output):
		o.format = o.output
		if o.outDir != "" {
			return nil, ro, usageErrorf("-o %s prints the configuration on stdout; --output-dir writes it into a directory: give one of them", o.format)
		}
		if len(targets) != 1 {
			return nil, ro, usageErrorf("-o %s prints one target's configuration on stdout; %d targets need --output-dir DIR", o.format, len(targets))
		}
	case o.output != "":
		// -o DIR, the spelling before --output-dir.
		if err := checkOutDir(o.output); err != nil {
			return nil, ro, err
		}
		if o.outDir != "" {
			return nil, ro, usageErrorf("-o %s: -o is the output format (yaml or json); the directory is --output-dir %s", o.output, o.outDir)
		}
		o.outDir = o.output
		fmt.Fprintf(stderr, "warning: -o DIR is deprecated: use --output-dir %s (-o is the output format: yaml or json)\n", o.output)
	}
	if o.check && o.outDir == "" {
		return nil, ro, usageErrorf("--check compares with a directory: it needs --output-dir DIR")
	}
	if !checkOnly && o.outDir == "" && len(targets) != 1 {
		return nil, ro, usageErrorf("%d targets need --output-dir DIR; without it one target's configuration goes to stdout", len(targets))
	}
	switch o.report {
	case "text", "table", "wide", "json", "sarif", "github", "markdown", "html", "none":
	default:
		flag := "--report"
		if checkOnly {
			flag = "-o/--report"
		}
		return nil, ro, usageErrorf("%s %q: want text, table, wide, json, sarif, github, markdown, html or none", flag, o.report)
	}
	if o.gate, err = newGate(o.failOn, o.failInclude, o.failExclude, backendNames()); err != nil {
		return nil, ro, err
	}
	return targets, ro, nil
}

// targets parses --target with the backends built from the settings.
func (o *options) targets() ([]translate.Target, error) {
	if o.target == "" {
		return nil, usageErrorf("--target is required: %s, a comma list of them, NAME@VERSION, or all", strings.Join(backendNames(), ", "))
	}
	settings := backends.Settings{}
	for name, v := range o.settings {
		settings[name] = *v
	}
	available, err := o.available(settings)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	targets, err := translate.ParseTargets(o.target, available)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return targets, nil
}

// resolveOptions checks the input flags (addInputFlags).
func (o *options) resolveOptions() (translate.ResolveOptions, error) {
	ro := translate.ResolveOptions{AssumeReferenceGrants: o.assumeGrants}
	ch, err := translate.ParseChannel(o.channel)
	if err != nil {
		return ro, usageErrorf("--%v", err)
	}
	ro.Channel = ch
	if o.limits.MaxInputBytes <= 0 || o.limits.MaxDocumentBytes <= 0 || o.limits.MaxDocuments <= 0 {
		return ro, usageErrorf("--max-input-bytes, --max-document-bytes and --max-documents must be positive")
	}
	if err := input.CheckExclude(o.limits.Exclude); err != nil {
		return ro, usageErrorf("%v", err)
	}
	if o.tlsDir != "" {
		abs, err := filepath.Abs(o.tlsDir)
		if err != nil {
			return ro, usageErrorf("--tls-dir %q: %v", o.tlsDir, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return ro, usageErrorf("--tls-dir %q is not a directory", o.tlsDir)
		}
		ro.TLSDir = abs
	}
	if ro.CertDir, err = certDir(o.certDir); err != nil {
		return ro, err
	}
	if o.listenTLS != "" {
		if ro.ListenTLS, err = translate.ParseListen(o.listenTLS); err != nil {
			return ro, &exitError{code: exitUsage, err: fmt.Errorf("--listen-https: %w", err)}
		}
	}
	if o.listen != "" {
		if ro.Listen, err = translate.ParseListen(o.listen); err != nil {
			return ro, &exitError{code: exitUsage, err: err}
		}
	}
	for _, e := range o.endpoints {
		ep, err := translate.ParseEndpoint(e)
		if err != nil {
			return ro, &exitError{code: exitUsage, err: err}
		}
		ro.Endpoints = append(ro.Endpoints, ep)
	}
	return ro, nil
}

// certDir checks --cert-dir: an absolute path of the proxy host, written
// into the configurations as a slash path, whatever directory and OS
// gwretry runs on. "" is translate.DefaultCertDir.
func certDir(dir string) (string, error) {
	if dir == "" {
		return translate.DefaultCertDir, nil
	}
	d := filepath.ToSlash(dir)
	if !path.IsAbs(d) {
		return "", usageErrorf("--cert-dir %q: want an absolute path of the proxy host (default %s)", dir, translate.DefaultCertDir)
	}
	d = path.Clean(d)
	if err := translate.CheckFilePath(d); err != nil {
		return "", usageErrorf("--cert-dir: %v", err)
	}
	return d, nil
}

// loadModel reads paths and builds the model; every problem of the input
// is listed at once. prog, when not nil, shows the step on a terminal.
func (o *options) loadModel(paths []string, stdin io.Reader, ro translate.ResolveOptions, prog *progress) (*input.Input, *translate.Model, error) {
	in, loadErr := o.cl.load(paths, stdin, o.limits)
	if in == nil {
		return nil, nil, inputError(loadErr)
	}
	rules := 0
	for _, rt := range in.Routes {
		rules += len(rt.Obj.Spec.Rules)
	}
	setMemoryLimit(rules)
	if loadErr == nil && len(in.Routes) == 0 {
		where := strings.Join(paths, ", ")
		if len(paths) == 0 {
			where = o.cl.where(paths)
		}
		return nil, nil, inputError(fmt.Errorf("no HTTPRoute (gateway.networking.k8s.io/v1 or v1beta1) in %s: found %s", where, input.Found(in)))
	}
	// The documents that decoded are validated even when others did not,
	// so that every problem is listed at once.
	prog.set("validating and resolving %d routes", len(in.Routes))
	m, err := resolve.Build(in, ro)
	if loadErr != nil {
		var loaded, built input.ErrorList
		if errors.As(loadErr, &loaded) && errors.As(err, &built) {
			return nil, nil, inputError(slices.Concat(loaded, built))
		}
		if err == nil {
			return nil, nil, inputError(loadErr)
		}
	}
	if err != nil {
		return nil, nil, inputError(err)
	}
	if err := resolve.CheckEndpoints(in, ro.Endpoints); err != nil {
		return nil, nil, &exitError{code: exitUsage, err: err}
	}
	return in, m, nil
}

func runTranslate(o *options, paths []string, stdin io.Reader, stdout, stderr io.Writer, checkOnly bool) error {
	targets, ro, err := o.prepare(checkOnly, stderr)
	if err != nil {
		return err
	}
	prog := startProgress(o.console, stderr, time.Second)
	defer func() { prog.end() }()
	if len(paths) > 0 {
		prog.set("reading %s", strings.Join(paths, ", "))
	} else {
		prog.set("reading the cluster")
	}
	in, m, err := o.loadModel(paths, stdin, ro, prog)
	if err != nil {
		return err
	}
	// The notes are all that is left to use of the input: the decoded
	// documents the model does not keep are not held while the targets
	// generate.
	inNotes := append(in.Notes, assumedVersions(o.target, targets)...)
	prog.set("generating and reading back %d target(s) for %d rules", len(targets), len(m.Rules))
	// Each target's files go where they are going as soon as the target
	// is done (translate.RunTo), rather than all held to the end: -o DIR
	// stages them in DIR/.gwretry-* until every target has succeeded,
	// --check keeps only their diffs.
	out, err := o.newOutput(targets, checkOnly, stdout)
	if err != nil {
		return err
	}
	defer out.abort()
	// The input HTTPRoutes the model keeps are read by mesh targets
	// alone: they are let go of once the last of them is done (before
	// any target runs when none is given), as nothing reads them after.
	readers := 0
	for i, t := range targets {
		if translate.ReadsRouteObjects(t.Backend) {
			readers = i + 1
		}
	}
	if readers == 0 {
		m.HTTPRoutes = nil
	}
	// A target may write a large file to disk as it makes it rather than
	// hold it (translate.Options.Spool): under -o DIR straight into the
	// staging directory, for stdout and gwretry check into a temporary
	// directory ($TMPDIR). --check and -o yaml|json read the files whole.
	spool := ""
	switch {
	case out.stage != nil:
		if spool, err = out.stage.spool(); err != nil {
			return err
		}
	case out.discard || out.drift == nil && o.format == "":
		if spool, err = os.MkdirTemp("", "gwretry-spool-"); err != nil {
			return err
		}
		defer os.RemoveAll(spool)
	}
	done := 0
	res, err := translate.RunToSpool(m, targets, o.retryNonIdempotent, spool, func(t translate.Target, files []translate.File) error {
		if done++; done == readers {
			m.HTTPRoutes = nil
		}
		return out.add(t, files)
	})
	prog.end()
	prog = nil
	if err != nil {
		if out.err != nil && errors.Is(err, out.err) {
			// Writing, not generating, failed.
			return err
		}
		// The model passed validation and the allowlists: whatever a
		// backend still refuses is gwretry's bug, not the input's.
		var ie *translate.InternalError
		if !errors.As(err, &ie) {
			err = &translate.InternalError{Err: err}
		}
		return &exitError{code: exitInternal, err: err}
	}
	o.verbosity.print(stderr, slices.Concat(inNotes, m.Notes, res.Notes))
	differ, err := out.finish(res.Report)
	if err != nil {
		return err
	}
	for _, n := range out.leftovers {
		fmt.Fprintln(stderr, n.String())
	}
	// check produces nothing but its report, so the report is its output;
	// translate's stdout may carry the configuration.
	reportTo := stderr
	if checkOnly {
		reportTo = stdout
	}
	if err := o.writeReport(res.Report, m.Sources, reportTo); err != nil {
		return err
	}
	if differ > 0 {
		return &exitError{code: exitDrift, err: fmt.Errorf("--check: %d file(s) in %s differ from what translate writes (the diff is on stdout)", differ, o.outDir)}
	}
	return o.gate.check(res.Report, stderr)
}

// formatWords are what users give -o in other tools (kubectl -o wide): a
// format gwretry has not, where it wants a directory. yaml and json are
// formats gwretry has (isFormat).
var formatWords = []string{"yml", "text", "table", "wide", "name"}

// checkOutDir refuses an -o that names a format rather than a directory,
// unless a directory of that name exists.
func checkOutDir(dir string) error {
	if !slices.Contains(formatWords, strings.ToLower(dir)) {
		return nil
	}
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return nil
	}
	return usageErrorf("-o %s: -o is the configuration's format on stdout, yaml or json, and --output-dir DIR the directory to write the configurations and report.json into; for the report's format use --report text|json (and --report-file FILE)", dir)
}

// inputError marks err as a problem with the input: exit code 1, unless it
// is gwretry's own bug.
func inputError(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	var ie *translate.InternalError
	if errors.As(err, &ie) {
		return &exitError{code: exitInternal, err: err}
	}
	var l input.ErrorList
	if errors.As(err, &l) {
		return &exitError{code: exitInput, err: fmt.Errorf("invalid input (%d problem(s)):\n%w", len(l), locatedList{l})}
	}
	var e *input.InputError
	if errors.As(err, &e) && e.Error() == err.Error() {
		return &exitError{code: exitInput, err: locatedError{e}}
	}
	return &exitError{code: exitInput, err: err}
}

// output is where translate's files go, each target's as it comes
// (add, a translate.Sink), and then the rest (finish): staged under -o DIR
// and moved into place at the end, compared with DIR for --check, held
// for stdout (one target), or dropped (check).
type output struct {
	o       *options
	targets []translate.Target
	stdout  io.Writer
	// discard: gwretry check writes no configuration.
	discard bool
	stage   *stage
	drift   *drifter
	// files are the one target's files for stdout.
	files []translate.File
	// err is the first error of add, which RunTo returns as it is.
	err error
	// leftovers warn of what -o DIR holds that the run did not write.
	leftovers []translate.Note
}

func (o *options) newOutput(targets []translate.Target, checkOnly bool, stdout io.Writer) (*output, error) {
	out := &output{o: o, targets: targets, stdout: stdout, discard: checkOnly}
	switch {
	case checkOnly:
	case o.check:
		var names []string
		for _, t := range targets {
			names = append(names, t.Backend.Name())
		}
		out.drift = newDrifter(o.outDir, names)
	case o.outDir != "":
		st, err := newStage(o.outDir)
		if err != nil {
			return nil, err
		}
		out.stage = st
	}
	return out, nil
}

// add takes one target's files.
func (out *output) add(_ translate.Target, files []translate.File) error {
	var err error
	switch {
	case out.discard:
		for _, f := range files {
			if f.Spooled != "" {
				os.Remove(f.Spooled)
			}
		}
	case out.drift != nil:
		if err = out.drift.add(files); err != nil {
			err = inputError(err)
		}
	case out.stage != nil:
		err = out.stage.add(files)
	case out.o.format != "":
		// A file -o yaml|json cannot print is a usage error: say so now,
		// before the notes and the report of a run that prints nothing.
		if err = checkFormat(out.targets[0].Backend.Name(), out.o.format, files); err == nil {
			out.files = append(out.files, files...)
		}
	default:
		out.files = append(out.files, files...)
	}
	out.err = err
	return err
}

// finish writes what comes after every target's files: report.json and
// the move into DIR, the diff of --check (it returns the number of files
// that differ), the configuration on stdout.
func (out *output) finish(r *translate.Report) (int, error) {
	o := out.o
	writeReport := func(w io.Writer) error { return writeReportJSON(w, r) }
	switch {
	case out.discard:
	case out.drift != nil:
		if err := out.drift.addStream("report.json", writeReport); err != nil {
			return 0, inputError(err)
		}
		differ, err := out.drift.finish(out.stdout)
		if err != nil {
			return 0, inputError(err)
		}
		return differ, nil
	case out.stage != nil:
		if err := out.stage.write("report.json", writeReport); err != nil {
			return 0, err
		}
		if err := out.stage.commit(); err != nil {
			return 0, err
		}
		left, err := leftovers(o.outDir, out.targets, out.stage.paths)
		if err != nil {
			return 0, err
		}
		out.leftovers = left
		out.stage = nil
	case o.format != "":
		slices.SortFunc(out.files, func(a, b translate.File) int { return strings.Compare(a.Path, b.Path) })
		return 0, writeFormat(out.stdout, out.targets[0].Backend.Name(), o.format, out.files)
	default:
		slices.SortFunc(out.files, func(a, b translate.File) int { return strings.Compare(a.Path, b.Path) })
		return 0, writeStdout(out.stdout, out.files)
	}
	return 0, nil
}

// leftovers warns of the files of dir that a run which wrote the paths
// written (slash-separated, relative to dir) for targets leaves behind and
// a reader of dir could take for its output: a file under a chosen
// target's directory (one that translate --check calls stale), and the
// directory of a target not chosen (an earlier run's, which report.json no
// longer covers). translate -o deletes no file; it says which to remove.
func leftovers(dir string, targets []translate.Target, written []string) ([]translate.Note, error) {
	owned := map[string]bool{}
	var names []string
	for _, t := range targets {
		owned[t.Backend.Name()] = true
		names = append(names, t.Backend.Name())
	}
	want := map[string]bool{}
	for _, p := range written {
		want[p] = true
		if top, _, ok := strings.Cut(p, "/"); ok {
			owned[top] = true
		}
	}
	var notes []translate.Note
	for _, top := range sortedKeys(owned) {
		files, err := filesUnder(dir, top)
		if err != nil {
			return nil, err
		}
		for _, p := range files {
			if !want[p] {
				notes = append(notes, translate.Warning("", "%s was not written by this run and is left as it was: it is not what gwretry generates now (translate --check reports it as stale); remove it",
					filepath.Join(dir, filepath.FromSlash(p))))
			}
		}
	}
	for _, name := range backendNames() {
		if owned[name] {
			continue
		}
		if st, err := os.Lstat(filepath.Join(dir, name)); err == nil && st.IsDir() {
			notes = append(notes, translate.Warning("", "%s holds target %s's files from an earlier run: this run wrote only %s, and its report.json does not cover them; remove the directory or add the target",
				filepath.Join(dir, name)+string(filepath.Separator), name, strings.Join(names, ", ")))
		}
	}
	return notes, nil
}

// abort leaves -o DIR as it was when finish did not move the files in.
func (out *output) abort() {
	if out.stage != nil {
		out.stage.abort()
	}
}

// outputFiles are what -o DIR holds: every target's files and report.json.
func outputFiles(res *translate.Result) ([]translate.File, error) {
	files := append([]translate.File(nil), res.Files...)
	report, err := reportJSON(res.Report)
	if err != nil {
		return nil, err
	}
	return append(files, translate.File{Path: "report.json", Data: report}), nil
}

// writeFiles writes every file of res and report.json into dir.
func writeFiles(dir string, res *translate.Result) error {
	files, err := outputFiles(res)
	if err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeStdout prints one target's files; several files are separated by a
// comment naming each. A spooled file is copied a few KB at a time.
func writeStdout(w io.Writer, files []translate.File) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for i, f := range files {
		if len(files) > 1 {
			if i > 0 && strings.HasSuffix(f.Path, ".yaml") {
				bw.WriteString("---\n")
			}
			fmt.Fprintf(bw, "# %s\n", f.Path)
		}
		if _, err := f.WriteTo(bw); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// assumedVersions says, in one warning line, which version was assumed
// for the targets that got none on the command line: the newest the live
// tests prove (translate.DefaultVersion), which may not be the one the
// user runs, and how to pin one (a newer one where gwretry knows it).
func assumedVersions(spec string, targets []translate.Target) []translate.Note {
	given := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		if name, _, ok := strings.Cut(strings.TrimSpace(item), "@"); ok {
			given[name] = true
		}
	}
	var assumed []string
	pin := ""
	for _, t := range targets {
		if given[t.Backend.Name()] {
			continue
		}
		assumed = append(assumed, t.Backend.Name()+"@"+t.Version)
		vs := t.Backend.Versions()
		if newest := vs[len(vs)-1]; pin == "" && newest != t.Version {
			pin = t.Backend.Name() + "@" + newest
		}
	}
	if len(assumed) == 0 {
		return nil
	}
	if pin == "" {
		pin = assumed[0]
	}
	return []translate.Note{translate.Warning("", "no version given: assuming %s, the newest the live tests prove; pin the version you run with --target NAME@VERSION (e.g. --target %s)",
		strings.Join(assumed, ", "), pin)}
}

// setMemoryLimit sets the collector's soft memory limit from the number
// of HTTPRoute rules read, unless GOMEMLIMIT sets one: by default the
// heap grows to twice what is live before the collector runs (GOGC=100),
// and the resident set follows the heap, not what is live. With the limit
// the collector runs earlier once the heap nears it: a soft limit, never
// an error (over it, the collector runs more often, never with more than
// half the CPU). The live heap grows with the rules (each target's plans
// and findings are per rule): at its peak about 64 MiB + 11 KiB per rule
// for --target all (92 MiB at 2,481 rules, 338 MiB at 25,042,
// docs/performance.md). memoryLimitBase plus memoryLimitPerRule per rule
// is 1.7 to 1.9 times that, where the collector costs about 4 % more CPU
// than without a limit (issue 22: the resident set of --target all at
// 10,000 routes 893 -> 668 MB); at 1.3 times it cost 29 %.
//
// Only the gwretry process sets it (main sets autoMemoryLimit): tests
// that call run in their own process keep theirs.
func setMemoryLimit(rules int) {
	if !autoMemoryLimit || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(memoryLimitBase + int64(rules)*memoryLimitPerRule)
}

// autoMemoryLimit is whether setMemoryLimit sets the limit.
var autoMemoryLimit bool

const (
	memoryLimitBase    = 128 << 20
	memoryLimitPerRule = 20 << 10
)
