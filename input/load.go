package input

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/translate"
)

// InputError is one problem with the input, located as precisely as we can.
type InputError struct {
	Pos Position
	// Object is "Kind namespace/name", or "" when unknown.
	Object string
	// Field is the field path ("spec.rules[0].retry.codes[1]"), or "".
	Field string
	Msg   string
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	if e.Object != "" {
		b.WriteString(": " + e.Object)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// ErrorList is every problem found in the input. Load and Resolve return
// one so that users see all their mistakes at once.
type ErrorList []*InputError

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// IsInputError reports whether err is a problem with the user's input (as
// opposed to an internal or I/O error).
func IsInputError(err error) bool {
	var l ErrorList
	var e *InputError
	return errors.As(err, &l) || errors.As(err, &e)
}

// Load reads manifests from paths: files, directories (recursively, *.yaml,
// *.yml and *.json in sorted order) or "-" for stdin. It decodes strictly, as
// the API server does: unknown fields, duplicate keys and wrong-case keys are
// errors. YAML aliases are rejected before decoding. The same object (kind,
// namespace, name) read twice is an error naming both places, unless the two
// decode to the same JSON: then a note says so and the object is used once.
//
// skippedRetryKinds are kinds gwretry does not read that limit the retries
// of the rules they reach: skipping one is a warning (which -q keeps), not
// an info line, since the generated configuration then retries more than
// the cluster would.
var skippedRetryKinds = map[string]string{
	"XBackendTrafficPolicy": "its retryConstraint (GEP-3388 retry budget: retries at most budget.percent of active requests, at least minRetryRate) and sessionPersistence limit and pin the retries of the rules whose backends it targets; no target gets them, so those rules retry without a budget",
}

// When documents are invalid, Load returns the ErrorList of every problem
// together with the Input of the objects that did decode, so that the
// caller can validate those too and list every problem at once. Any other
// error (a file that cannot be read, a limit reached) comes with a nil Input.
func Load(paths []string, stdin io.Reader, lim Limits) (*Input, error) {
	l := &loader{lim: lim, in: &Input{Skipped: map[string]int{}}, seen: map[objectKey]seenObject{}}
	if err := l.readPaths(paths, stdin); err != nil {
		return nil, err
	}
	return l.finish()
}

// finish notes the skipped kinds and returns what Load returns.
func (l *loader) finish() (*Input, error) {
	kinds := make([]string, 0, len(l.in.Skipped))
	for k := range l.in.Skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if why, ok := skippedRetryKinds[strings.SplitN(k, " ", 2)[0]]; ok {
			l.in.Notes = append(l.in.Notes, translate.Warning("", "skipped %d %s object(s), not carried to any target: %s", l.in.Skipped[k], k, why))
			continue
		}
		l.in.Notes = append(l.in.Notes, translate.Info("", "skipped %d %s object(s): gwretry does not read this kind", l.in.Skipped[k], k))
	}
	if len(l.errs) > 0 {
		return l.in, l.errs
	}
	return l.in, nil
}

// readPaths reads every file of paths ("-" is stdin).
func (l *loader) readPaths(paths []string, stdin io.Reader) error {
	for _, p := range paths {
		if p == "-" {
			if err := l.readStream("<stdin>", stdin, false); err != nil {
				return err
			}
			continue
		}
		files, err := l.expand(p)
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := l.readFile(f.path, f.walked); err != nil {
				return err
			}
		}
	}
	return nil
}

// Found says what the input holds, for a message when it has no HTTPRoute:
// "2 Services, 1 Gateway, 3 skipped ConfigMap (v1) objects", or "no
// Kubernetes object".
func Found(in *Input) string {
	var parts []string
	count := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	count(len(in.Routes), "HTTPRoute", "HTTPRoutes")
	count(len(in.Gateways), "Gateway", "Gateways")
	count(len(in.GatewayClasses), "GatewayClass", "GatewayClasses")
	count(len(in.ReferenceGrants), "ReferenceGrant", "ReferenceGrants")
	count(len(in.Services), "Service", "Services")
	count(len(in.EndpointSlices), "EndpointSlice", "EndpointSlices")
	count(len(in.Namespaces), "Namespace", "Namespaces")
	count(len(in.ConnectionTimeoutPolicies), "ConnectionTimeoutPolicy", "ConnectionTimeoutPolicies")
	policyCounts(in, count)
	kinds := make([]string, 0, len(in.Skipped))
	for k := range in.Skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		count(in.Skipped[k], "skipped "+k+" object", "skipped "+k+" objects")
	}
	if len(parts) == 0 {
		return "no Kubernetes object"
	}
	return strings.Join(parts, ", ")
}

// manifestFile is a file to read: named on the command line, or found
// by walking a directory (walked), where what is not a Kubernetes object
// is skipped with a note rather than an error (readStream).
type manifestFile struct {
	path   string
	walked bool
}

// expand lists the manifest files under p. A directory's walk skips, each
// with one note: a Helm chart (a directory holding Chart.yaml: its
// templates are not manifests until rendered), gwretry's own output
// directory (one holding a report.json gwretry wrote), .git, and what
// --exclude matches.
func (l *loader) expand(p string) ([]manifestFile, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []manifestFile{{path: p}}, nil
	}
	var files []manifestFile
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p, path)
		if rel != "." && l.excluded(path, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			switch {
			case d.Name() == ".git" && rel != ".":
				return filepath.SkipDir
			case isHelmChart(path):
				l.in.Notes = append(l.in.Notes, translate.Warning("", "%s: skipped: a Helm chart, whose templates are not Kubernetes objects until rendered: render it and pass the output (helm template %s | gwretry ... -)", path, path))
				return filepath.SkipDir
			case isGwretryOutput(path):
				l.in.Notes = append(l.in.Notes, translate.Info("", "%s: skipped: gwretry's own output (it holds gwretry's report.json)", path))
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if isKustomization(d.Name()) {
				l.in.Notes = append(l.in.Notes, translate.Warning("", "%s: skipped: a kustomization, not a Kubernetes object; the files of its directory are read as they are, not as kustomize builds them: to read what kustomize builds, pass its output (kustomize build %s | gwretry ... -)", path, filepath.Dir(path)))
				return nil
			}
			files = append(files, manifestFile{path: path, walked: true})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files%s", p, l.skippedWhy())
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files, nil
}

// skippedWhy adds the notes of what a walk skipped to the error of a
// directory with nothing left to read.
func (l *loader) skippedWhy() string {
	if len(l.in.Notes) == 0 {
		return ""
	}
	return " left to read: " + translate.NotesText(l.in.Notes)
}

// excluded reports whether --exclude matches the walked path (rel to the
// directory given).
func (l *loader) excluded(path, rel string) bool {
	for _, g := range l.lim.Exclude {
		for _, s := range []string{filepath.ToSlash(rel), filepath.Base(path), filepath.ToSlash(path)} {
			if ok, _ := pathpkg.Match(g, s); ok {
				return true
			}
		}
	}
	return false
}

// CheckExclude checks the syntax of --exclude's globs.
func CheckExclude(globs []string) error {
	for _, g := range globs {
		if _, err := pathpkg.Match(g, ""); err != nil {
			return fmt.Errorf("--exclude %q: %v (a glob: *, ?, [...])", g, err)
		}
	}
	return nil
}

// isHelmChart reports whether dir is a Helm chart's root.
func isHelmChart(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// isKustomization reports whether name is one kustomize reads.
func isKustomization(name string) bool {
	switch name {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// isGwretryOutput reports whether dir holds a report.json that gwretry
// wrote (its schemaVersion, targets and rules): the directory is -o DIR of
// an earlier run, whose files are configurations, not manifests.
func isGwretryOutput(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "report.json"))
	if err != nil {
		return false
	}
	defer f.Close()
	var r struct {
		SchemaVersion *int            `json:"schemaVersion"`
		Targets       json.RawMessage `json:"targets"`
		Rules         *int            `json:"rules"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&r); err != nil {
		return false
	}
	return r.SchemaVersion != nil && len(r.Targets) > 0 && r.Rules != nil
}

type loader struct {
	lim  Limits
	in   *Input
	errs ErrorList
	read int64
	docs int
	// seen holds every object read, to find the same object twice.
	seen map[objectKey]seenObject
	// raw, when set, receives every object undecoded (ReadDocuments).
	raw *[]Document
}

// objectKey identifies an object as the API server does: kind, namespace
// ("default" when unset; "" for cluster-scoped kinds) and name.
type objectKey struct{ kind, namespace, name string }

// seenObject is where an object was first read and a digest of its JSON.
type seenObject struct {
	pos    Position
	digest [sha256.Size]byte
}

func (l *loader) readFile(name string, walked bool) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return l.readStream(name, f, walked)
}

// readStream reads the documents of one file. A file found by walking a
// directory (walked) that is no Kubernetes object is skipped with a note
// (notKubernetes); one named on the command line is read strictly.
func (l *loader) readStream(name string, r io.Reader, walked bool) error {
	remaining := l.lim.MaxInputBytes - l.read
	data, err := io.ReadAll(io.LimitReader(r, remaining+1))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > remaining {
		return fmt.Errorf("%s: input exceeds %d bytes in total (raise --max-input-bytes)", name, l.lim.MaxInputBytes)
	}
	l.read += int64(len(data))
	if enc := utf16or32(data); enc != "" {
		// yaml.v2 and yaml.v3 decode it, but the documents are split on
		// UTF-8 "---" lines first: every document after the first was
		// silently dropped.
		l.errs = append(l.errs, &InputError{Pos: Position{File: name, Doc: 1},
			Msg: "the file is " + enc + " (it starts with a byte order mark); gwretry reads UTF-8: convert it, e.g. iconv -f " + enc + " -t UTF-8"})
		return nil
	}
	// The documents are split first, then converted to JSON on every core
	// (the YAML parsing is most of the work and each document's is its
	// own), then decoded in their order, so that errors, notes and objects
	// come in the same order whatever the number of cores.
	type document struct {
		pos  Position
		raw  []byte
		stop *InputError // the splitting failed here: nothing after it
	}
	var docs []document
	yr := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	// start is the line where the next document starts: the reader
	// returns each document's lines and drops the one "---" line that
	// ends it.
	start := 1
	for doc := 1; ; doc++ {
		raw, err := yr.Read()
		if err == io.EOF {
			break
		}
		pos := Position{File: name, Doc: doc, Line: start}
		start += bytes.Count(raw, []byte("\n")) + 1
		if err != nil {
			docs = append(docs, document{pos: pos, stop: &InputError{Pos: pos, Msg: "cannot split YAML documents: " + err.Error()}})
			break
		}
		if len(raw) > l.lim.MaxDocumentBytes {
			docs = append(docs, document{pos: pos, stop: &InputError{Pos: pos, Msg: fmt.Sprintf("document is %d bytes, more than the limit of %d (raise --max-document-bytes)", len(raw), l.lim.MaxDocumentBytes)}})
			continue
		}
		docs = append(docs, document{pos: pos, raw: raw})
	}
	converted := make([]converted, len(docs))
	panics := make([]any, len(docs))
	translate.Parallel(len(docs), func(i int) {
		// A panic on a worker would end the process before the command's
		// recover sees it: it is raised again on this goroutine.
		defer func() { panics[i] = recover() }()
		if docs[i].stop == nil {
			converted[i] = toJSON(docs[i].pos, docs[i].raw)
		}
	})
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	if walked {
		stops := make([]bool, len(docs))
		for i, d := range docs {
			stops[i] = d.stop != nil
		}
		if why, template := notKubernetes(data, stops, converted); why != "" {
			note := translate.Info
			if template {
				// It may hold routes: what it leaves out is not nothing.
				note = translate.Warning
			}
			l.in.Notes = append(l.in.Notes, note("", "%s: skipped: %s", name, why))
			return nil
		}
	}
	for i, d := range docs {
		docs[i].raw = nil
		if d.stop != nil {
			l.errs = append(l.errs, d.stop)
			continue
		}
		c := converted[i]
		converted[i] = nil
		if c.err != nil {
			l.errs = append(l.errs, c.err)
			continue
		}
		if c.json == nil {
			continue // empty or comment-only document
		}
		lines := c.lines.shift(d.pos.Line - 1)
		if err := l.decodeObject(lines.at(d.pos), c.json, lines.items); err != nil {
			return err
		}
	}
	return nil
}

// notKubernetes says why a file found in a directory is not Kubernetes
// objects, or "" when it is (or is one with mistakes, which are errors):
// a template that is not YAML until rendered ({{ }}), or YAML of which no
// document has apiVersion and kind (a CI workflow, a values file, a
// package.json).
func notKubernetes(data []byte, stops []bool, docs []converted) (why string, template bool) {
	objects, broken := 0, false
	for i, c := range docs {
		switch {
		case stops[i] || c == nil:
			broken = broken || stops[i]
		case c.err != nil:
			broken = true
		case c.json != nil:
			var tm typeMeta
			if json.Unmarshal(c.json, &tm) == nil && (tm.APIVersion != "" && tm.Kind != "" || tm.Metadata.Name != "") {
				objects++ // an object, or one that lacks apiVersion or kind by mistake
			}
		}
	}
	switch {
	case broken && bytes.Contains(data, []byte("{{")) && bytes.Contains(data, []byte("}}")):
		return "a template ({{ }}), not YAML until rendered: render it and pass the output", true
	case broken || objects > 0:
		return "", false
	}
	for _, c := range docs {
		if c != nil && c.json != nil {
			return "not a Kubernetes object (no document has apiVersion and kind)", false
		}
	}
	return "", false
}

// converted is a document as JSON, nil for an empty one, or why it has
// none.
type converted = *struct {
	json  []byte
	err   *InputError
	lines objectLines
}

// objectLines are where an object, its rules and its List items start:
// lines of the document (toJSON), then of the file (shift).
type objectLines struct {
	line  int
	rules []int
	items []objectLines
}

// shift adds d to every line of ol.
func (ol objectLines) shift(d int) objectLines {
	if ol.line == 0 {
		return objectLines{}
	}
	out := objectLines{line: ol.line + d}
	for _, r := range ol.rules {
		out.rules = append(out.rules, r+d)
	}
	for _, it := range ol.items {
		out.items = append(out.items, it.shift(d))
	}
	return out
}

// at is pos at the lines of ol, when known.
func (ol objectLines) at(pos Position) Position {
	if ol.line > 0 {
		pos.Line, pos.RuleLines = ol.line, ol.rules
	}
	return pos
}

// linesOf finds the lines of the object n, its spec.rules and its items.
func linesOf(n *yaml3.Node) objectLines {
	if n.Kind == yaml3.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	ol := objectLines{line: n.Line}
	field := func(m *yaml3.Node, key string) *yaml3.Node {
		if m == nil || m.Kind != yaml3.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	if rules := field(field(n, "spec"), "rules"); rules != nil && rules.Kind == yaml3.SequenceNode {
		for _, r := range rules.Content {
			ol.rules = append(ol.rules, r.Line)
		}
	}
	if items := field(n, "items"); items != nil && items.Kind == yaml3.SequenceNode {
		for _, it := range items.Content {
			ol.items = append(ol.items, linesOf(it))
		}
	}
	return ol
}

// toJSON checks one document for aliases and converts it to JSON, with
// duplicate keys rejected. It reads nothing but its arguments, so that
// documents are converted concurrently.
func toJSON(pos Position, raw []byte) converted {
	out := &struct {
		json  []byte
		err   *InputError
		lines objectLines
	}{}
	if err := rejectAliases(raw, &out.lines); err != nil {
		out.err = atDocumentLine(pos, err.Error())
		return out
	}
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		out.err = atDocumentLine(pos, "invalid YAML: "+err.Error())
		return out
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || bytes.Equal(j, []byte("null")) || bytes.Equal(j, []byte("{}")) {
		return out // empty or comment-only document
	}
	out.json = j
	return out
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func (l *loader) decodeObject(pos Position, j []byte, items []objectLines) error {
	l.docs++
	if l.docs > l.lim.MaxDocuments {
		return fmt.Errorf("%s: more than %d documents (raise --max-documents)", pos, l.lim.MaxDocuments)
	}
	var tm typeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		e := decodeError(pos, "", j, err)
		if e.Field == "" {
			e.Msg = "not a Kubernetes object: " + e.Msg
		}
		l.errs = append(l.errs, e)
		return nil
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		l.errs = append(l.errs, &InputError{Pos: pos, Field: missingTypeField(tm), Msg: "required: every object needs apiVersion and kind"})
		return nil
	}
	group, _, _ := strings.Cut(tm.APIVersion, "/")
	if !strings.Contains(tm.APIVersion, "/") {
		group = ""
	}
	if e := unknownKind(pos, tm); e != nil {
		l.errs = append(l.errs, e)
		return nil
	}
	switch {
	case tm.Kind == "List" || strings.HasSuffix(tm.Kind, "List") && tm.Kind != "List" && (isKnownList(tm) || groupListKind(group, tm.Kind)):
		return l.decodeList(pos, j, items)
	case l.raw != nil:
		l.collect(pos, j, tm)
		return nil
	case group == "gateway.networking.k8s.io" && (tm.APIVersion == "gateway.networking.k8s.io/v1" || tm.APIVersion == "gateway.networking.k8s.io/v1beta1"):
		switch tm.Kind {
		case "HTTPRoute":
			decodeGatewayAPI(l, pos, j, tm, &l.in.Routes)
			return nil
		case "Gateway":
			decodeGatewayAPI(l, pos, j, tm, &l.in.Gateways)
			return nil
		case "GatewayClass":
			decodeGatewayAPI(l, pos, j, tm, &l.in.GatewayClasses)
			return nil
		case "ReferenceGrant":
			decodeInto(l, pos, j, tm, &l.in.ReferenceGrants)
			return nil
		}
	case tm.APIVersion == translate.ConnectionTimeoutPolicyAPIVersion && tm.Kind == translate.ConnectionTimeoutPolicyKind:
		decodeRequired(l, pos, j, tm, &l.in.ConnectionTimeoutPolicies, policyAbsentRequired(pos, tm, j))
		return nil
	case tm.APIVersion == "v1" && tm.Kind == "Service":
		decodeInto(l, pos, j, tm, &l.in.Services)
		return nil
	case tm.APIVersion == "v1" && tm.Kind == "Namespace":
		decodeInto(l, pos, j, tm, &l.in.Namespaces)
		return nil
	case tm.APIVersion == "discovery.k8s.io/v1" && tm.Kind == "EndpointSlice":
		decodeInto(l, pos, j, tm, &l.in.EndpointSlices)
		return nil
	}
	if l.decodePolicy(pos, j, tm) {
		return nil
	}
	l.in.Skipped[tm.Kind+" ("+tm.APIVersion+")"]++
	return nil
}

func missingTypeField(tm typeMeta) string {
	if tm.APIVersion == "" {
		return "apiVersion"
	}
	return "kind"
}

// isKnownList reports whether tm is a typed list such as HTTPRouteList.
func isKnownList(tm typeMeta) bool {
	switch tm.Kind {
	case "HTTPRouteList", "GatewayList", "GatewayClassList", "ServiceList", "EndpointSliceList",
		"ReferenceGrantList", "NamespaceList":
		return true
	}
	return isPolicyList(tm.Kind)
}

func (l *loader) decodeList(pos Position, j []byte, lines []objectLines) error {
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   json.RawMessage   `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if errs := decodeStrict(pos, list.Kind, j, &list); len(errs) > 0 {
		l.errs = append(l.errs, errs...)
		return nil
	}
	for i, item := range list.Items {
		ipos := pos
		ipos.Item = fmt.Sprintf("%sitems[%d]", prefixItem(pos.Item), i)
		ipos.RuleLines = nil
		var items []objectLines
		if i < len(lines) {
			ipos = lines[i].at(ipos)
			items = lines[i].items
		}
		if err := l.decodeObject(ipos, item, items); err != nil {
			return err
		}
	}
	return nil
}

func prefixItem(s string) string {
	if s == "" {
		return ""
	}
	return s + "."
}

// decodeInto strictly decodes j into a new T and appends it to dst, unless
// the same object was read before.
func decodeInto[T any](l *loader, pos Position, j []byte, tm typeMeta, dst *[]Object[T]) {
	obj := new(T)
	object := ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name)
	if errs := decodeStrict(pos, object, j, obj); len(errs) > 0 {
		l.errs = append(l.errs, errs...)
		return
	}
	if l.readBefore(pos, j, tm, object) {
		return
	}
	*dst = append(*dst, Object[T]{Pos: pos, Obj: obj})
}

// decodeGatewayAPI is decodeInto for the kinds gwretry validates with the
// Gateway API's CRDs: an object that lacks a property its CRD requires is
// refused here, as the API server does, since the Go types cannot tell an
// absent value from an empty one (absentRequired).
func decodeGatewayAPI[T any](l *loader, pos Position, j []byte, tm typeMeta, dst *[]Object[T]) {
	object := ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name)
	decodeRequired(l, pos, j, tm, dst, gatewayAPIAbsentRequired(pos, tm.Kind, object, j))
}

// decodeRequired is decodeInto unless absent (the errors of properties the
// object's CRD requires and it lacks) is not empty: then those errors and
// any of strict decoding are the object's.
func decodeRequired[T any](l *loader, pos Position, j []byte, tm typeMeta, dst *[]Object[T], absent ErrorList) {
	object := ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name)
	if errs := absent; len(errs) > 0 {
		l.errs = append(l.errs, errs...)
		l.errs = append(l.errs, decodeStrict(pos, object, j, new(T))...)
		return
	}
	decodeInto(l, pos, j, tm, dst)
}

// readBefore reports whether the object was read before. Read twice with
// the same JSON, it is used once and a note names both places; with other
// JSON, it is an error naming both: which one the user means is unknown.
func (l *loader) readBefore(pos Position, j []byte, tm typeMeta, object string) bool {
	key := objectKey{kind: tm.Kind, namespace: tm.Metadata.Namespace, name: tm.Metadata.Name}
	switch {
	case tm.Kind == "Namespace" || tm.Kind == "GatewayClass":
		key.namespace = "" // cluster-scoped
		object = tm.Kind + " " + tm.Metadata.Name
	case key.namespace == "":
		key.namespace = "default"
	}
	digest := sha256.Sum256(j)
	first, dup := l.seen[key]
	switch {
	case !dup:
		l.seen[key] = seenObject{pos: pos, digest: digest}
		return false
	case first.digest == digest:
		l.in.Notes = append(l.in.Notes, translate.Info(object, "read twice, identically, in %s and in %s: used once", first.pos, pos))
	default:
		l.errs = append(l.errs, &InputError{Pos: pos, Object: object,
			Msg: fmt.Sprintf("also read from %s, with different content: the same object twice is ambiguous, keep one of them", first.pos)})
	}
	return true
}

func ObjectName(kind, ns, name string) string {
	if ns == "" {
		ns = "default"
	}
	if name == "" {
		return kind + " " + ns + "/<no name>"
	}
	return kind + " " + ns + "/" + name
}

// docLine is "line N: " in a YAML parser's message, N of the document.
var docLine = regexp.MustCompile(`line ([0-9]+): `)

// atDocumentLine is the input error msg at pos, the document's start: the
// line of the document that msg names ("line 3: ") is the error's line in
// the file.
func atDocumentLine(pos Position, msg string) *InputError {
	if m := docLine.FindStringSubmatch(msg); m != nil && pos.Line > 0 {
		if n, err := strconv.Atoi(m[1]); err == nil {
			pos.Line += n - 1
		}
	}
	return &InputError{Pos: pos, Msg: msg}
}

// rejectAliases walks the YAML node tree without expanding aliases and
// rejects any alias: expanding them is how alias bombs exhaust memory, and
// manifests have no need for them.
//
// It also rejects a second YAML document in raw: the documents are split
// on "---" lines, and one that follows a "..." end marker or a JSON object
// without a "---" was silently dropped, since only the first document is
// converted. It records where the object, its rules and its items start
// in lines.
func rejectAliases(raw []byte, lines *objectLines) error {
	var n yaml3.Node
	dec := yaml3.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&n); err != nil {
		if err == io.EOF {
			return nil
		}
		return fmt.Errorf("invalid YAML: %v", err)
	}
	*lines = linesOf(&n)
	var next yaml3.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return fmt.Errorf("invalid YAML: something follows the first YAML document without a \"---\" line (%v): start every document, after a \"...\" end marker or a JSON object, with a \"---\" line", err)
	default:
		return fmt.Errorf("line %d: a second YAML document without a \"---\" line: start every document, after a \"...\" end marker or a JSON object, with a \"---\" line", next.Line)
	}
	stack := []*yaml3.Node{&n}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if cur.Kind == yaml3.AliasNode {
			return fmt.Errorf("line %d: YAML aliases (*%s) are not accepted: expand them in the manifest", cur.Line, cur.Value)
		}
		if cur.Anchor != "" {
			return fmt.Errorf("line %d: YAML anchors (&%s) are not accepted: expand them in the manifest", cur.Line, cur.Anchor)
		}
		stack = append(stack, slices.Clone(cur.Content)...)
	}
	return nil
}

// utf16or32 names the encoding of data when it starts with a UTF-16 or
// UTF-32 byte order mark, else "".
func utf16or32(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0x00, 0x00, 0xfe, 0xff}):
		return "UTF-32BE"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0x00, 0x00}):
		return "UTF-32LE"
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return "UTF-16BE"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		return "UTF-16LE"
	}
	return ""
}

// The types the layers hand each other live in package translate, which
// every layer imports; these are their names here.
type (
	// Limits bound what Load reads (Limits).
	Limits = translate.Limits
	// Position locates an object in the input (Position).
	Position = translate.Position
	// Object is one decoded object and where it came from (Object).
	Object[T any] = translate.Object[T]
	// Input is everything Load read that gwretry uses (Input).
	Input = translate.Input
)

// DefaultLimits are the limits of the CLI (translate.DefaultLimits).
func DefaultLimits() Limits { return translate.DefaultLimits() }
