package translate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gwretry/gwretry/report"
)

// Backend turns a Model into one data plane's configuration. Each data plane
// is one package under backends/ that implements it.
type Backend interface {
	// Name is the target name used on the command line ("nginx").
	Name() string
	// Versions lists the data plane versions the backend knows, oldest
	// first, as "MAJOR.MINOR". The last is the newest; --target NAME
	// without a version assumes DefaultVersion.
	Versions() []string
	// Scope is what the target serves; Run reports what is outside it.
	Scope() Scope
	// Generate writes the configuration for m. It returns exactly one
	// finding for every feature that every rule in its scope sets
	// (Rule.Features, Scope.rules) and for every connection timeout when
	// its scope has them, and config files that its data plane loads as
	// they are. It must check every value against an allowlist before
	// writing it and parse its output back before returning it.
	Generate(m *Model, opts Options) (*Output, error)
}

// Options are what a user chooses for every target.
type Options struct {
	// Version is one of the backend's Versions.
	Version string
	// RetryNonIdempotent opts in to retrying POST, PATCH and LOCK requests.
	RetryNonIdempotent bool
	// Shared, when set, shares the parameters and caveats of the target's
	// decisions with the equal ones it decided before (Decisions.Shared):
	// a target's 89,000 findings at 10,000 routes repeat a few hundred
	// distinct decisions, each a map of its own as decided (issue 22).
	// Run sets one for each target; it is not safe for concurrent use.
	Shared *report.Interner
	// Spool, when set, is a directory where a backend may write a large
	// file as it makes it and read it back from there, instead of holding
	// it (File.Spooled): gwretry translate -o DIR sets one inside DIR's
	// staging directory, where the file is then moved into place, and
	// translate to stdout and gwretry check one in $TMPDIR.
	Spool string
}

// Output is what a backend generated.
type Output struct {
	// Files are written under the output directory; Path is slash-separated
	// and relative ("nginx/nginx.conf").
	Files []File
	// Findings, one per feature per rule; the Target field is filled in by
	// Run.
	Findings []Finding
	// Notes are what the user must know beyond the findings: what the
	// data plane does by default, how to run the files (info), a rule whose
	// weights were rounded (a warning naming the rule). Run fills in
	// Target.
	Notes []Note
}

// File is one generated file.
type File struct {
	Path string
	// Data is the file's bytes, unless it is Spooled.
	Data []byte
	// Spooled, when set, is the file in Options.Spool that holds the
	// file's bytes instead of Data, written and read back there by the
	// backend; whoever takes the file moves or removes it (Bytes and
	// WriteTo read it).
	Spooled string
	// Parsed, when not nil, is the backend's own strict parse of Data
	// (its parse-back, already compared with what was meant): its judges
	// read it (FileParsed) instead of parsing the same bytes again, and
	// must not modify it. Generate sets it; Run drops it once the judges
	// have run, so that it is not held with the other targets' output.
	Parsed *Parsed
}

// Bytes returns the file's bytes: Data, or the spooled file's.
func (f File) Bytes() ([]byte, error) {
	if f.Spooled == "" {
		return f.Data, nil
	}
	return os.ReadFile(f.Spooled)
}

// WriteTo writes the file's bytes to w, copying a spooled file a few KB
// at a time.
func (f File) WriteTo(w io.Writer) (int64, error) {
	if f.Spooled == "" {
		n, err := w.Write(f.Data)
		return int64(n), err
	}
	in, err := os.Open(f.Spooled)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	return io.Copy(w, in)
}

// CreateSpooled creates a new file in spool for the file named name, open
// for reading and writing, with the mode (0644, less the umask) every
// output file gets.
func CreateSpooled(spool, name string) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := os.OpenFile(filepath.Join(spool, fmt.Sprintf("%d-%s", i, name)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// WriteSpooled writes a new file of spool (CreateSpooled) for the file
// named name with what write writes to it, buffered, and returns its
// path; on an error the file is removed.
func WriteSpooled(spool, name string, write func(w io.Writer) error) (string, error) {
	f, err := CreateSpooled(spool, name)
	if err != nil {
		return "", err
	}
	if err := WriteAndClose(f, write); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// WriteAndClose writes to f, buffered, what write writes, and closes f.
func WriteAndClose(f *os.File, write func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Parsed is what a backend decoded from the bytes of one of its files.
type Parsed struct {
	data    []byte
	spooled string
	value   any
}

// NewParsed records that value is what data decodes to. FileParsed
// returns it only for a File whose Data is that very slice: a File whose
// Data was replaced is parsed again.
func NewParsed(data []byte, value any) *Parsed { return &Parsed{data: data, value: value} }

// NewSpooledParsed records that value is what the spooled file at path
// decodes to. FileParsed returns it only for a File spooled there.
func NewSpooledParsed(path string, value any) *Parsed { return &Parsed{spooled: path, value: value} }

// of reports whether p is the parse of f's bytes.
func (p *Parsed) of(f File) bool {
	if p == nil {
		return false
	}
	if f.Spooled != "" || p.spooled != "" {
		return p.spooled == f.Spooled
	}
	return len(p.data) == len(f.Data) && len(f.Data) > 0 && &p.data[0] == &f.Data[0]
}

// Equal reports whether p and q were decoded from the same bytes, and so
// are the same value (go-cmp compares Outputs with it).
func (p *Parsed) Equal(q *Parsed) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.spooled == q.spooled && bytes.Equal(p.data, q.data)
}

// Target is a backend and the version chosen for it.
type Target struct {
	Backend Backend
	Version string
}

// Defaulter is a Backend whose default version is not the newest it
// knows: the newest one the live tests run (docs/matrix.md), so that
// --target NAME without a version writes for a version gwretry has proved.
type Defaulter interface {
	DefaultVersion() string
}

// DefaultVersion is the version --target NAME (or all) assumes for b: its
// DefaultVersion when it has one of its Versions, else its newest.
func DefaultVersion(b Backend) string {
	if d, ok := b.(Defaulter); ok && slices.Contains(b.Versions(), d.DefaultVersion()) {
		return d.DefaultVersion()
	}
	return latest(b)
}

// ParseTargets parses a --target value: a comma list of NAME or
// NAME@VERSION, or "all". VERSION may be MAJOR.MINOR or MAJOR.MINOR.PATCH;
// without it DefaultVersion is assumed.
func ParseTargets(spec string, available []Backend) ([]Target, error) {
	byName := map[string]Backend{}
	var names []string
	for _, b := range available {
		byName[b.Name()] = b
		names = append(names, b.Name())
	}
	var out []Target
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if item == "all" {
			for _, b := range available {
				if !seen[b.Name()] {
					seen[b.Name()] = true
					out = append(out, Target{Backend: b, Version: DefaultVersion(b)})
				}
			}
			continue
		}
		name, version, hasVersion := strings.Cut(item, "@")
		b, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("unknown target %q: choose from %s or all", name, strings.Join(names, ", "))
		}
		v := DefaultVersion(b)
		if hasVersion {
			var err error
			if v, err = matchVersion(b, version); err != nil {
				return nil, err
			}
		}
		if seen[name] {
			return nil, fmt.Errorf("target %q given twice", name)
		}
		seen[name] = true
		out = append(out, Target{Backend: b, Version: v})
	}
	if len(out) == 0 {
		return nil, errors.New("no target given: use --target with " + strings.Join(names, ", ") + " or all")
	}
	return out, nil
}

func latest(b Backend) string {
	vs := b.Versions()
	return vs[len(vs)-1]
}

func matchVersion(b Backend, v string) (string, error) {
	parts := strings.Split(v, ".")
	if len(parts) >= 2 {
		short := parts[0] + "." + parts[1]
		if slices.Contains(b.Versions(), short) && (len(parts) == 2 || (len(parts) == 3 && isDigits(parts[2]))) {
			return short, nil
		}
	}
	return "", fmt.Errorf("target %s: unsupported version %q: supported versions are %s",
		b.Name(), v, strings.Join(b.Versions(), ", "))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Result is the outcome of running every target over a model.
type Result struct {
	Report *Report
	// Files from every target, sorted by path; Run fills it in, RunTo
	// leaves it empty (its Sink got the files).
	Files []File
	// Notes of every target, with Target set.
	Notes []Note
}

// Sink receives one target's files once the target has been generated and
// its judge has agreed with its findings: the paths are checked, the files
// sorted by path and their Parsed dropped. RunTo calls it for each target
// in the order of the targets, whatever order they finished in, and keeps
// no reference to the files after it returns, so that a sink that writes
// them out lets them go. An error from it ends RunTo, which returns it as
// it is.
type Sink func(t Target, files []File) error

// Run generates every target's configuration for m and builds the report. It
// checks the backends' contract: each feature of each rule has exactly one
// finding, every file path is relative and inside the output directory.
// It holds every target's files until the end (Result.Files); RunTo hands
// each target's files to a Sink instead.
func Run(m *Model, targets []Target, retryNonIdempotent bool) (*Result, error) {
	var files []File
	res, err := RunTo(m, targets, retryNonIdempotent, func(_ Target, fs []File) error {
		files = append(files, fs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	res.Files = files
	return res, nil
}

// RunTo is Run that gives each target's files to sink, in the order of
// the targets, as soon as that target and those before it are done,
// rather than holding them all. At most as many targets generate at once
// as there are cores (GOMAXPROCS), and a target that finished before an
// earlier one waits for it with its files: at most lookahead targets past
// the earliest one not yet given to sink are started. On the first error
// in the order of the targets (a backend's, a broken contract, or sink's)
// it stops starting targets, waits for those under way, and returns that
// error: sink is not called again.
func RunTo(m *Model, targets []Target, retryNonIdempotent bool, sink Sink) (*Result, error) {
	return RunToSpool(m, targets, retryNonIdempotent, "", sink)
}

// RunToSpool is RunTo with Options.Spool set to spool: a backend may hand
// sink a large file written there (File.Spooled) rather than held, and
// sink then moves it where it goes or removes it. The caller removes
// spool, with any file an error left in it.
func RunToSpool(m *Model, targets []Target, retryNonIdempotent bool, spool string, sink Sink) (*Result, error) {
	res := &Result{Report: &Report{SchemaVersion: 3, Routes: m.RouteCount, Rules: m.RuleCount,
		Findings: []Finding{}, Targets: []TargetInfo{}, Effective: m.Effective, Policies: m.Policies}}
	if res.Report.Effective == nil {
		res.Report.Effective = []RuleEffective{}
	}
	if len(m.Listeners) == 0 {
		// Nothing is attached to a generated listener: a configuration
		// would have no listener (HAProxy and nginx refuse to start, Envoy
		// and Traefik serve nothing). The backends still run (their
		// contract and judges are checked) but none is written; each
		// rule's route.attachment finding says why. A mesh target still
		// writes the routes attached to Services.
		text := "no route is attached to a listener that gwretry generates, so no configuration is written (it would have no listener); the report's route.attachment findings say why for each rule"
		if len(m.MeshRules) > 0 {
			text = "no route is attached to a listener that gwretry generates, so gateway targets write no configuration (it would have no listener); only mesh targets (linkerd) write the routes attached to Services"
		}
		res.Notes = append(res.Notes, Warning("", "%s", text))
	}
	// The report holds every target's findings to the end: they are kept
	// packed until then (findingStore).
	store := newFindingStore()
	err := inOrder(len(targets), lookahead(len(targets), m.RouteCount), func(i int) (*Output, error) {
		out, _, err := generate(m, targets[i], retryNonIdempotent, spool)
		return out, err
	}, func(i int, out *Output) error {
		t := targets[i]
		name := t.Backend.Name()
		scope := t.Backend.Scope()
		// Grow the store once per target: it holds every target's
		// findings, and growing it by appends alone allocates unevenly
		// with its size.
		n := len(out.Findings)
		scope.outOfScope(m, func(Finding) { n++ })
		for _, s := range m.Skipped {
			n += len(s.Features)
		}
		store.grow(n)
		for _, f := range out.Findings {
			f.Target = name
			store.add(f)
		}
		out.Findings = nil
		for _, s := range m.Skipped {
			for _, feat := range s.Features {
				f := Finding{Target: name, Route: s.Route, Rule: s.Index, RuleName: s.RuleName, Feature: feat}
				f.Decide(report.Decide(report.ReasonRuleNotTranslated))
				store.add(f)
			}
		}
		// What the target does not serve is reported here, alike for
		// every target: not applicable, not a gap.
		scope.outOfScope(m, func(f Finding) {
			f.Target = name
			store.add(f)
		})
		var files []File
		for _, f := range out.Files {
			if len(m.Listeners) == 0 && !(scope.MeshRoutes && len(m.MeshRules) > 0) {
				if f.Spooled != "" {
					os.Remove(f.Spooled) // not written: see the note above
				}
				continue
			}
			clean := path.Clean(f.Path)
			if clean != f.Path || path.IsAbs(clean) || strings.HasPrefix(clean, "../") || clean == ".." {
				return &InternalError{Err: fmt.Errorf("%s: bad output path %q", name, f.Path)}
			}
			files = append(files, f)
		}
		out.Files = nil
		for _, n := range out.Notes {
			n.Target = name
			res.Notes = append(res.Notes, n)
		}
		res.Report.Targets = append(res.Report.Targets, TargetInfo{Name: name, Version: t.Version})
		slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
		return sink(t, files)
	})
	if err != nil {
		return nil, err
	}
	res.Report.Findings = store.findings()
	applyProvenance(m, res.Report.Findings)
	SortFindings(res.Report.Findings)
	return res, nil
}

// lookahead is how many targets past the earliest one not yet handed on
// may be started: one per core, so that a long target does not leave the
// other cores idle, and one more to work on while a short one's files
// wait for it. From SequentialRoutes routes on, one: each target's
// working memory (its configuration built, written and read back, and
// its judge's reading) is then the largest part of the process's, and
// two at once held twice it (issue 22: 394 MB for --target all against
// 263 MB for Envoy alone at 1,000 routes, 3.3 GB against 1.6 GB at
// 10,000); the load and the validation before still use every core.
// The output is the same bytes either way.
func lookahead(n, routes int) int {
	if routes >= SequentialRoutes {
		return 1
	}
	return min(n, runtime.GOMAXPROCS(0)+1)
}

// SequentialRoutes is the number of routes from which RunTo generates one
// target at a time.
const SequentialRoutes = 2000

// inOrder calls gen(0) … gen(n-1) on up to GOMAXPROCS goroutines, and
// then(i, gen(i)'s output) on the caller's goroutine in the order of i,
// each as soon as gen(i) and every then before it are done. gen(j) starts
// only when j < k+window, k the first index then has not been called for,
// so that at most window outputs are held at once (under way or waiting
// for an earlier one). The first error, in the order of i, of gen or then
// stops it: no gen starts after it, those under way are waited for, and
// then is not called again.
func inOrder(n, window int, gen func(i int) (*Output, error), then func(i int, out *Output) error) error {
	type result struct {
		out *Output
		err error
	}
	window = max(window, 1)
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	// Each token is one output that may be held; a worker takes one before
	// it takes the next index, so the indices that hold tokens are always
	// the ones from the first not yet handed on: the earliest always runs.
	tokens := make(chan struct{}, window)
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), n, window)
	for range workers {
		wg.Go(func() {
			for {
				select {
				case tokens <- struct{}{}:
				case <-stop:
					return
				}
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				out, err := gen(i)
				results[i] <- result{out, err}
			}
		})
	}
	var err error
	for i := range n {
		r := <-results[i]
		if err = r.err; err == nil {
			err = then(i, r.out)
		}
		<-tokens
		if err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	return err
}

// generate runs one target and checks its contract: its findings, and
// its judge's reading of its files, which it returns (nil for a backend
// without a Judge). Targets share the Model, which no backend writes to,
// so Run runs them at once.
func generate(m *Model, t Target, retryNonIdempotent bool, spool string) (_ *Output, observed map[string]map[MethodClass]Behaviour, err error) {
	name := t.Backend.Name()
	// A panic on a worker goroutine would end the process before the
	// command's own recover sees it: it becomes an internal error here.
	defer func() {
		if p := recover(); p != nil {
			err = &InternalError{Err: fmt.Errorf("%s: panic: %v\n%s", name, p, debug.Stack())}
		}
	}()
	opts := Options{Version: t.Version, RetryNonIdempotent: retryNonIdempotent, Shared: report.NewInterner(), Spool: spool}
	// The target writes its own model: the rules with a value its format
	// cannot carry are dead there (ForTarget), and their findings say so.
	tm, unwritten := ForTarget(m, t.Backend)
	out, err := t.Backend.Generate(tm, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	scope := t.Backend.Scope()
	if err := checkFindings(tm, out.Findings, scope); err != nil {
		return nil, nil, &InternalError{Err: fmt.Errorf("%s: %w", name, err)}
	}
	if j, ok := t.Backend.(Judge); ok {
		if observed, err = observeChecked(j, tm, opts, out, scope); err != nil {
			return nil, nil, &InternalError{Err: fmt.Errorf("%s: %w", name, err)}
		}
	}
	if err := checkConnectionClaims(t.Backend, tm, opts, out); err != nil {
		return nil, nil, &InternalError{Err: fmt.Errorf("%s: %w", name, err)}
	}
	if len(unwritten) > 0 {
		out.Findings = unwrittenFindings(m, scope, out.Findings, unwritten)
		out.Notes = append(unwrittenDropped(out.Notes, unwritten), unwrittenNotes(m, unwritten)...)
		if err := checkFindings(m, out.Findings, scope, unwritten); err != nil {
			return nil, nil, &InternalError{Err: fmt.Errorf("%s: %w", name, err)}
		}
	}
	for i := range out.Files {
		out.Files[i].Parsed = nil
	}
	return out, observed, nil
}

// Parallel calls f(0) … f(n-1) on up to GOMAXPROCS goroutines and returns
// when all have returned. Each call must write only its own index's
// results, so that what the caller then reads in index order is the same
// whatever the number of cores and the order the calls ran in.
func Parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// checkFindings verifies that every feature each rule in scope sets has
// exactly one finding, and each connection timeout when the scope has
// them, and that nothing else has one.
func checkFindings(m *Model, fs []Finding, scope Scope, unwritten ...map[*Rule]*Unexpressed) error {
	type key struct {
		gateway string
		route   string
		rule    int
		feature Feature
	}
	want := map[key]bool{}
	for _, g := range m.ConnectionTimeouts {
		for _, c := range g.Timeouts {
			if scope.Connections {
				want[key{gateway: g.Gateway, feature: c.Feature}] = true
			}
		}
	}
	for _, r := range scope.rules(m) {
		fs := r.Features()
		for _, u := range unwritten {
			if _, ok := u[r]; ok {
				fs = unwrittenFeatures(r)
			}
		}
		for _, f := range fs {
			want[key{route: r.Route, rule: r.Index, feature: f}] = true
		}
	}
	got := map[key]bool{}
	for _, f := range fs {
		k := key{f.Gateway, f.Route, f.Rule, f.Feature}
		if f.Gateway != "" && (f.Route != "" || f.Rule != 0 || f.RuleName != "") {
			return fmt.Errorf("finding for Gateway %s feature %s also names route %q rule %d", f.Gateway, f.Feature, f.Route, f.Rule)
		}
		if f.Gateway != "" {
			// Gateway findings are keyed by (gateway, feature).
			f.Route = "Gateway " + f.Gateway
		}
		if !want[k] {
			return fmt.Errorf("finding for %s rule %d feature %s, which the rule does not set", f.Route, f.Rule, f.Feature)
		}
		if got[k] {
			return fmt.Errorf("two findings for %s rule %d feature %s", f.Route, f.Rule, f.Feature)
		}
		if f.Status != Honoured && f.Status != Approximated && f.Status != Unsupported {
			return fmt.Errorf("finding for %s rule %d feature %s has status %q", f.Route, f.Rule, f.Feature, f.Status)
		}
		// Every finding records its decision, and its status is the
		// one the decision gives.
		if err := report.Check(f); err != nil {
			return fmt.Errorf("finding for %s rule %d: %w", f.Route, f.Rule, err)
		}
		got[k] = true
	}
	for k := range want {
		if !got[k] && k.gateway != "" {
			return fmt.Errorf("no finding for Gateway %s feature %s", k.gateway, k.feature)
		}
		if !got[k] {
			return fmt.Errorf("no finding for %s rule %d feature %s", k.route, k.rule, k.feature)
		}
	}
	return nil
}

// InternalError is a bug in gwretry, not a problem with the input: a
// backend broke its contract, or its configuration contradicts its report.
// The command exits with its own code for it.
type InternalError struct{ Err error }

func (e *InternalError) Error() string { return "internal error: " + e.Err.Error() }
func (e *InternalError) Unwrap() error { return e.Err }

// NonIdempotentMethods are the methods that, as in nginx and HAProxy by
// default, are not retried unless Options.RetryNonIdempotent is set.
func NonIdempotentMethods() []string { return []string{"POST", "PATCH", "LOCK"} }

// VersionNames lists the names of a backend's version table, in its order:
// what Backend.Versions returns.
func VersionNames[T any](table []T, name func(T) string) []string {
	out := make([]string, 0, len(table))
	for _, v := range table {
		out = append(out, name(v))
	}
	return out
}

// LookupVersion returns the row of a backend's version table (oldest
// first) whose name is version; "" means the newest, as --target without a
// version does. Every backend looks its versions up with it, so that all
// answer alike.
func LookupVersion[T any](table []T, name func(T) string, version string) (T, error) {
	var zero T
	if len(table) == 0 {
		return zero, errors.New("empty version table")
	}
	if version == "" {
		return table[len(table)-1], nil
	}
	names := make([]string, len(table))
	for i, row := range table {
		if names[i] = name(row); names[i] == version {
			return row, nil
		}
	}
	return zero, fmt.Errorf("unsupported version %q (supported: %s)", version, strings.Join(names, ", "))
}
