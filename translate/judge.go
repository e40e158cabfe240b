package translate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gwretry/gwretry/report"
)

// Judge reads a backend's generated configuration back and says what the
// data plane will do with each rule's requests. It is the check on the
// report: Run compares every honoured finding (and every approximated one
// that Checked names) with what the judge derived from the files, not with
// what the code that wrote them meant to write.
//
// A judge must read the files as the data plane does (crossplane's parse
// tree, config-parser's sections, the Envoy protos, the Traefik structs) and
// must not reuse the generator's own plan.
type Judge interface {
	// Observe returns, for every rule in the target's scope (by
	// Rule.Name; see Scope) and every method class the rule matches,
	// the behaviour the files configure.
	Observe(m *Model, opts Options, files []File) (map[string]map[MethodClass]Behaviour, error)
}

// TimerKind is how a data plane's timer measures time.
type TimerKind string

// Timer kinds.
const (
	// TimerNone: nothing cuts the try or request.
	TimerNone TimerKind = "none"
	// TimerTotal: cut once Value has passed since the start.
	TimerTotal TimerKind = "total"
	// TimerIdle: cut after Value without progress (between two reads or
	// two writes); a backend that keeps sending is not cut.
	TimerIdle TimerKind = "idle"
	// TimerHeaders: cut when the response headers have not arrived Value
	// after the request was sent; a slow body is not cut.
	TimerHeaders TimerKind = "headers"
)

// Timer is a timeout as a data plane applies it.
type Timer struct {
	Kind  TimerKind
	Value time.Duration
}

func (t Timer) String() string {
	if t.Kind == TimerNone || t.Kind == "" {
		return "none"
	}
	return string(t.Kind) + " " + t.Value.String()
}

// Off reports whether the timer can never fire within the Gateway API's
// range of durations: none at all, or one at least MaxDuration long.
func (t Timer) Off() bool { return t.Kind == TimerNone || t.Kind == "" || t.Value >= MaxDuration }

// ConnRetry is which connection failures a data plane retries.
type ConnRetry string

// Connection failure retries.
const (
	// ConnRetryNone: none.
	ConnRetryNone ConnRetry = "none"
	// ConnRetryUnsent: only failures before the request was sent
	// (refused, connect timeout).
	ConnRetryUnsent ConnRetry = "unsent"
	// ConnRetryAll: also resets and closes after the request was sent.
	ConnRetryAll ConnRetry = "all"
)

// connRank orders ConnRetry from none to all.
func connRank(c ConnRetry) int {
	switch c {
	case ConnRetryAll:
		return 2
	case ConnRetryUnsent:
		return 1
	}
	return 0
}

// Behaviour is what a data plane, as configured, does with the requests of
// one rule in one method class.
type Behaviour struct {
	// Answer is the status the data plane answers by itself, without
	// contacting any backend (500 for a dead rule); 0 when it proxies.
	Answer int
	// InvalidShareAnswered: the share of traffic of the rule's invalid
	// backendRefs is answered 500 rather than sent to the valid ones.
	InvalidShareAnswered bool
	// Retries is the number of retries after the first try when a retry
	// condition holds on every try.
	Retries int
	// ExtraRetries: the data plane may re-send a request on its own,
	// beyond Retries (Go's transport after a reused connection closed).
	ExtraRetries bool
	// Codes are the response codes that are retried, sorted.
	Codes []int
	// ConnErrors is which connection failures are retried.
	ConnErrors ConnRetry
	// MaxRetriedBody is the largest request body that is still retried, or
	// -1 when any size is.
	MaxRetriedBody int64
	// MinGap is the least pause guaranteed between the end of a try and
	// the start of the next (Backoff.MinGap of Retries where a judge
	// reads the backoff).
	MinGap time.Duration
	// Backoff is how the data plane draws the pause before each retry;
	// the zero value: retries start at once.
	Backoff Backoff
	// RetryBudget: no retry starts once this much time has passed since
	// the first try started, counted when the failed try ends (nginx's
	// proxy_next_upstream_timeout, Traefik's retry.timeout); a try
	// already started runs on. 0 when there is none.
	RetryBudget time.Duration
	// RetriesSource names what in the configuration sets Retries, in the
	// data plane's own terms ("retries 3", "maxAttempts 5, the most gRPC
	// clients make"), for explanations; "" when the judge does not say.
	RetriesSource string
	// TryTimeout cuts each try.
	TryTimeout Timer
	// LastTryTimeout, when its Kind is set, cuts the last try the retry
	// policy allows instead of TryTimeout (Linkerd removes the timer of
	// retry.linkerd.io/timeout on it).
	LastTryTimeout Timer
	// TimeoutRetried: a try cut by TryTimeout is retried.
	TimeoutRetried bool
	// RequestTimeout cuts the whole request, retries included.
	RequestTimeout Timer
	// TimeoutStatus is what the client gets when a timer cuts the request
	// (504 in the Gateway API); 0 when unknown or not applicable.
	TimeoutStatus int
	// TLS maps each HTTPS virtual host that serves the rule (TLSKey: port
	// and hostname, "" for the catch-all) to the certificate the data
	// plane presents for it, read back from the files. A judge fills it
	// only where it reads TLS back.
	TLS map[string]Certificate
	// Filters are the rule-level filters the configuration applies to the
	// rule's requests and responses, read back into the model's terms
	// (a redirect answered, headers set, added and removed, a rewrite, the
	// mirrors). A judge leaves out what it does not read back.
	Filters Filters
}

// CheckClaims compares every finding of rule r that Checked names (the
// honoured ones, and those approximated only by runtime caveats) with what
// the data plane does (observed, by method class). It returns one error per claim
// that the configuration contradicts, naming both sides.
// A listener.https claim needs the model's certificates, which only Run
// knows: CheckClaims treats the rule as served on no HTTPS host.
func CheckClaims(r *Rule, findings []Finding, observed map[MethodClass]Behaviour) []error {
	return checkClaims(r, findings, observed, nil)
}

// checkClaims is CheckClaims with wantTLS, the certificate each HTTPS
// virtual host serving r must present (keyed by TLSKey).
func checkClaims(r *Rule, findings []Finding, observed map[MethodClass]Behaviour, wantTLS map[string]Certificate) []error {
	var errs []error
	for _, f := range findings {
		if !Checked(f) || f.Route != r.Route || f.Rule != r.Index {
			continue
		}
		for _, c := range r.MethodClasses() {
			b, ok := observed[c]
			if !ok {
				errs = append(errs, fmt.Errorf("%s rule %d: %s is claimed %s, but the configuration says nothing about %s requests", r.Route, r.Index, f.Feature, f.Status, c))
				continue
			}
			if why := contradiction(r, f.Feature, b, wantTLS); why != "" {
				errs = append(errs, fmt.Errorf("%s rule %d (%s requests): the report says %s is %s (%q), but the configuration %s",
					r.Route, r.Index, c, f.Feature, f.Status, f.Text(), why))
			}
		}
	}
	return errs
}

// runtimeCaveats are the caveats that say how a data plane configured
// exactly as the Gateway API defines still acts otherwise on some traffic
// (a backend's 1xx taken as the final response, a server timer that also
// runs during an upload): they change nothing in the configuration a judge
// reads back, so a finding approximated by them alone is still checked as
// an honoured one is. PathRebuiltNormalized is one too: nginx matches the
// normalised path, and the judge reads the path modifier only where both
// ways of rebuilding the path (as sent, and from the normalised path) are
// there, with the same prefixes and value. HeadersHandledByProxy is
// not one: Traefik's judge reads a hop-by-hop header as not set at all.
var runtimeCaveats = map[report.Reason]bool{
	report.CaveatInterimResponseIsFinal:      true,
	report.CaveatServerTimerRunsDuringUpload: true,
	report.CaveatPathRebuiltNormalized:       true,
}

// Checked reports whether Run compares finding f with what the judge reads
// back from the files: every honoured finding, and every approximated one
// whose caveats are all runtimeCaveats (and whose reason is honoured
// without them).
func Checked(f Finding) bool {
	switch f.Status {
	case Honoured:
		return true
	case Approximated:
		if e, ok := report.Lookup(f.Reason); !ok || e.Status != Honoured || len(f.Caveats) == 0 {
			return false
		}
		for _, c := range f.Caveats {
			if !runtimeCaveats[c.Reason] {
				return false
			}
		}
		return true
	}
	return false
}

// contradiction returns why behaviour b does not honour feature f of rule
// r as the Gateway API defines it, or "".
func contradiction(r *Rule, f Feature, b Behaviour, wantTLS map[string]Certificate) string {
	if !judged(f) {
		// Behaviour says nothing about filters or listeners yet: a claim
		// the judge cannot read back is not taken on trust.
		return fmt.Sprintf("is not read back for %s by gwretry's judge, so an honoured claim cannot be checked", f)
	}
	if why, ok := filterContradiction(r, f, b); ok {
		return why
	}
	if f == FeatureListenerHTTPS {
		return tlsContradiction(r, b, wantTLS)
	}
	if f == FeatureBackendRefs {
		switch {
		case r.Dead() && b.Answer != 500:
			return fmt.Sprintf("does not answer 500 for a rule with no usable backend (answer %d)", b.Answer)
		case !r.Dead() && !b.InvalidShareAnswered:
			return "sends the share of the invalid backendRefs to the valid ones instead of answering 500"
		}
		return ""
	}
	if r.Dead() {
		return fmt.Sprintf("can never apply it: the rule has no usable backend (answer %d)", b.Answer)
	}
	if b.Answer != 0 {
		return fmt.Sprintf("answers %d itself and never contacts a backend", b.Answer)
	}
	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	be, req := r.Timeouts.BackendRequest, r.Timeouts.Request
	retriesExactly := func() string {
		switch {
		case b.Retries != attempts:
			return fmt.Sprintf("retries %d times, not %d", b.Retries, attempts)
		case b.ExtraRetries:
			return "can also re-send the request on its own"
		case attempts > 0 && b.MaxRetriedBody >= 0:
			return fmt.Sprintf("does not retry request bodies larger than %d bytes", b.MaxRetriedBody)
		}
		return ""
	}
	switch f {
	case FeatureRetryAttempts:
		if why := retriesExactly(); why != "" || attempts == 0 {
			return why
		}
		if want := r.Retry.ConnRetried(); connRank(b.ConnErrors) < connRank(want) {
			// Connection failures are the retry condition every rule
			// has (those its policy's retryOn names); retrying fewer is
			// not the count.
			return fmt.Sprintf("retries only %q connection failures, not %q, so a request whose connection failed is not retried %d times", b.ConnErrors, want, attempts)
		}
	case FeatureRetryCodes:
		if why := retriesExactly(); why != "" || attempts == 0 {
			return why
		}
		if !slices.Equal(b.Codes, r.Retry.Codes) {
			return fmt.Sprintf("retries codes %v, not %v", b.Codes, r.Retry.Codes)
		}
	case FeatureRetryConnectionErrors:
		if why := retriesExactly(); why != "" || attempts == 0 {
			return why
		}
		if want := r.Retry.ConnRetried(); b.ConnErrors != want {
			return fmt.Sprintf("retries connection failures %q, not %q", b.ConnErrors, want)
		}
	case FeatureRetryBackoff:
		if attempts == 0 {
			return retriesExactly()
		}
		if b.MinGap < r.Retry.Backoff.Value {
			return fmt.Sprintf("guarantees a pause of only %s between tries, not %s", b.MinGap, r.Retry.Backoff.Value)
		}
	case FeatureRetryBackendTimeout:
		if why := tryTimer(be, b); why != "" {
			return why
		}
		if be.IsZero() {
			// No try is ever cut, so none is retried for it.
			return ""
		}
		if attempts == 0 {
			return retriesExactly()
		}
		switch want := r.Retry.TimeoutRetried(); {
		case want && !b.TimeoutRetried:
			return "does not retry a try cut by its timer"
		case !want && b.TimeoutRetried:
			return "retries a try cut by its timer, which the rule's retry condition does not ask for"
		}
		return retriesExactly()
	case FeatureBackendRequestTimeout:
		if why := tryTimer(be, b); why != "" {
			return why
		}
		if !be.IsZero() && b.TimeoutStatus != 504 {
			return fmt.Sprintf("answers %d, not 504, when the timer cuts the request", b.TimeoutStatus)
		}
	case FeatureRequestTimeout:
		if req.IsZero() {
			if !b.RequestTimeout.Off() {
				return fmt.Sprintf("cuts the request (%s) although request is 0s", b.RequestTimeout)
			}
			return ""
		}
		// A total of request is what the Gateway API defines. When a
		// single try, never retried, is cut at a shorter backendRequest,
		// that try ends the request sooner: a request timer of
		// backendRequest then does the same.
		total := b.RequestTimeout.Kind == TimerTotal
		shortened := b.Retries == 0 && !b.ExtraRetries && be != nil && !be.IsZero() && be.Value < req.Value && b.RequestTimeout.Value == be.Value
		if !total || (b.RequestTimeout.Value != req.Value && !shortened) {
			return fmt.Sprintf("cuts the request by %s, not a total of %s", b.RequestTimeout, req.Value)
		}
		if b.TimeoutStatus != 504 {
			return fmt.Sprintf("answers %d, not 504, when the timer cuts the request", b.TimeoutStatus)
		}
	}
	return ""
}

// judged reports whether the judge reads feature f back: backendRefs, the
// retry and timeout features and the rule-level Standard filters.
func judged(f Feature) bool {
	switch f {
	case FeatureBackendRefs, FeatureRetryAttempts, FeatureRetryBackendTimeout, FeatureRetryBackoff,
		FeatureRetryCodes, FeatureRetryConnectionErrors, FeatureBackendRequestTimeout, FeatureRequestTimeout,
		FeatureRequestHeaderModifier, FeatureResponseHeaderModifier, FeatureRequestRedirect, FeatureURLRewrite,
		FeatureRequestMirror, FeatureListenerHTTPS:
		return true
	}
	return false
}

// tryTimer checks the per-try timer against backendRequest.
func tryTimer(be *Duration, b Behaviour) string {
	switch {
	case be == nil:
		return ""
	case be.IsZero():
		if !b.TryTimeout.Off() {
			return fmt.Sprintf("cuts each try (%s) although backendRequest is 0s", b.TryTimeout)
		}
		if b.LastTryTimeout.Kind != "" && !b.LastTryTimeout.Off() {
			return fmt.Sprintf("cuts the last try (%s) although backendRequest is 0s", b.LastTryTimeout)
		}
	case b.TryTimeout.Kind != TimerTotal || b.TryTimeout.Value != be.Value:
		return fmt.Sprintf("cuts each try by %s, not a total of %s", b.TryTimeout, be.Value)
	case b.LastTryTimeout.Kind != "" && b.LastTryTimeout != b.TryTimeout:
		return fmt.Sprintf("cuts the last try by %s, not a total of %s", b.LastTryTimeout, be.Value)
	}
	return ""
}

// observeChecked runs a backend's judge over its own output, checks every
// finding Checked names against it (the rules in the target's scope) and returns what
// it observed.
func observeChecked(j Judge, m *Model, opts Options, out *Output, scope Scope) (map[string]map[MethodClass]Behaviour, error) {
	observed, err := j.Observe(m, opts, out.Files)
	if err != nil {
		return nil, fmt.Errorf("reading the generated configuration back: %w", err)
	}
	byRule := map[string][]Finding{}
	for _, f := range out.Findings {
		k := f.Route + "#" + fmt.Sprint(f.Rule)
		byRule[k] = append(byRule[k], f)
	}
	expected := expectedTLS(m)
	var msgs []string
	for _, r := range scope.rules(m) {
		for _, e := range checkClaims(r, byRule[r.Route+"#"+fmt.Sprint(r.Index)], observed[r.Name], expected[r]) {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) > 0 {
		return nil, fmt.Errorf("the report claims more than the configuration does:\n  %s", strings.Join(msgs, "\n  "))
	}
	return observed, nil
}

// FileParsed returns the generated file at path as the backend parsed it
// back (File.Parsed) when that is a T, else parse(File.Data): a judge reads
// its backend's one strict parse of the bytes rather than a second parse
// of the same bytes by the same decoder, and files given to it by anyone
// else (tests, an edited file) are parsed.
func FileParsed[T any](files []File, path string, parse func([]byte) (T, error)) (T, error) {
	for _, f := range files {
		if f.Path != path {
			continue
		}
		if p := f.Parsed; p.of(f) {
			if v, ok := p.value.(T); ok {
				return v, nil
			}
		}
		data, err := f.Bytes()
		if err != nil {
			var zero T
			return zero, err
		}
		return parse(data)
	}
	var zero T
	return zero, fmt.Errorf("no %s among the generated files", path)
}

// FileData returns the data of the generated file at path, for a judge.
func FileData(files []File, path string) ([]byte, error) {
	for _, f := range files {
		if f.Path == path {
			return f.Bytes()
		}
	}
	return nil, fmt.Errorf("no %s among the generated files", path)
}

// ByteSize writes n for messages: in KiB or MiB when it is a whole number
// of them, else in bytes.
func ByteSize(n uint64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// filterContradiction compares a rule-level filter feature with what the
// configuration does; ok is false for features that are not filters.
func filterContradiction(r *Rule, f Feature, b Behaviour) (why string, ok bool) {
	want, got := r.Filters, b.Filters
	switch f {
	case FeatureRequestHeaderModifier:
		return headersDiffer("request", want.RequestHeaders, got.RequestHeaders), true
	case FeatureResponseHeaderModifier:
		return headersDiffer("response", want.ResponseHeaders, got.ResponseHeaders), true
	case FeatureRequestRedirect:
		switch {
		case got.Redirect == nil:
			return "does not redirect", true
		case !redirectsEqual(want.Redirect, got.Redirect):
			return fmt.Sprintf("redirects with %s, not %s", redirectText(got.Redirect), redirectText(want.Redirect)), true
		}
		return "", true
	case FeatureURLRewrite:
		switch {
		case got.Rewrite == nil:
			return "does not rewrite the request", true
		case !rewritesEqual(want.Rewrite, got.Rewrite):
			return fmt.Sprintf("rewrites %s, not %s", rewriteText(got.Rewrite), rewriteText(want.Rewrite)), true
		}
		return "", true
	case FeatureRequestMirror:
		w, g := mirrorSet(want.Mirrors), mirrorSet(got.Mirrors)
		if !slices.Equal(w, g) {
			return fmt.Sprintf("mirrors to %v, not %v", g, w), true
		}
		return "", true
	}
	return "", false
}

// headersDiffer compares two header modifiers: names case-insensitively,
// each list as a set.
func headersDiffer(which string, want, got *HeaderModifier) string {
	norm := func(m *HeaderModifier) (set, add, remove []string) {
		if m == nil {
			return nil, nil, nil
		}
		for _, h := range m.Set {
			set = append(set, strings.ToLower(h.Name)+": "+h.Value)
		}
		for _, h := range m.Add {
			add = append(add, strings.ToLower(h.Name)+": "+h.Value)
		}
		for _, n := range m.Remove {
			remove = append(remove, strings.ToLower(n))
		}
		slices.Sort(set)
		slices.Sort(add)
		slices.Sort(remove)
		return set, add, remove
	}
	ws, wa, wr := norm(want)
	gs, ga, gr := norm(got)
	switch {
	case !slices.Equal(ws, gs):
		return fmt.Sprintf("sets %s headers %q, not %q", which, gs, ws)
	case !slices.Equal(wa, ga):
		return fmt.Sprintf("adds %s headers %q, not %q", which, ga, wa)
	case !slices.Equal(wr, gr):
		return fmt.Sprintf("removes %s headers %q, not %q", which, gr, wr)
	}
	return ""
}

func pathsEqual(a, b *PathModifier) bool {
	if a == nil || b == nil {
		return a == b
	}
	norm := func(p *PathModifier) PathModifier {
		q := *p
		if q.Type == ReplacePrefixMatch && q.Value == "/" {
			q.Value = "" // "/" and "" both keep the rest of the path
		}
		return q
	}
	return norm(a) == norm(b)
}

func redirectsEqual(a, b *Redirect) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Scheme == b.Scheme && a.Hostname == b.Hostname && a.Port == b.Port &&
		a.StatusCode == b.StatusCode && pathsEqual(a.Path, b.Path)
}

func rewritesEqual(a, b *Rewrite) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Hostname == b.Hostname && pathsEqual(a.Path, b.Path)
}

func pathText(p *PathModifier) string {
	if p == nil {
		return "the same path"
	}
	return fmt.Sprintf("%s %q", p.Type, p.Value)
}

func redirectText(r *Redirect) string {
	if r == nil {
		return "no redirect"
	}
	return fmt.Sprintf("%d scheme %q host %q port %d path %s", r.StatusCode, r.Scheme, r.Hostname, r.Port, pathText(r.Path))
}

func rewriteText(r *Rewrite) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprintf("host %q path %s", r.Hostname, pathText(r.Path))
}

// mirrorSet describes mirrors as sorted "Service ns/name:port share n/d"
// strings, with the share reduced.
func mirrorSet(ms []*Mirror) []string {
	var out []string
	for _, m := range ms {
		if m == nil || m.Backend == nil {
			continue
		}
		n, d := m.Numerator, m.Denominator
		if g := gcd(n, d); g > 1 {
			n, d = n/g, d/g
		}
		out = append(out, fmt.Sprintf("Service %s:%d share %d/%d", m.Backend.Service, m.Backend.Port, n, d))
	}
	slices.Sort(out)
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	if a < 0 {
		return -a
	}
	return a
}

// TLSKey names an HTTPS virtual host in Behaviour.TLS: its listener's port
// and its hostname ("" for the catch-all).
func TLSKey(port int, hostname string) string { return fmt.Sprintf("%d %s", port, hostname) }

// expectedTLS returns, for every rule served on an HTTPS virtual host of
// m, the certificate the Gateway API says each such host presents (keyed
// by TLSKey). One pass over the listeners.
func expectedTLS(m *Model) map[*Rule]map[string]Certificate {
	out := map[*Rule]map[string]Certificate{}
	for _, l := range m.Listeners {
		if !l.TLS {
			continue
		}
		for _, vh := range l.VirtualHosts {
			if vh.Certificate == nil {
				continue
			}
			for _, rm := range vh.Routes {
				if out[rm.Rule] == nil {
					out[rm.Rule] = map[string]Certificate{}
				}
				out[rm.Rule][TLSKey(l.Port, vh.Hostname)] = *vh.Certificate
			}
		}
	}
	return out
}

// tlsContradiction compares listener.https of rule r with what the data
// plane terminates; want comes from the model (expectedTLS).
func tlsContradiction(r *Rule, b Behaviour, want map[string]Certificate) string {
	if len(r.Ungenerated) > 0 {
		return fmt.Sprintf("cannot serve %s, which gwretry does not generate", ungeneratedText(r.Ungenerated))
	}
	if len(want) == 0 {
		return "serves the rule on no HTTPS listener"
	}
	if len(r.TLSUnrouted) > 0 {
		return fmt.Sprintf("generates nothing for %s on the same port, whose SNI names get another certificate", strings.Join(r.TLSUnrouted, ", "))
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got, ok := b.TLS[k]
		switch {
		case !ok:
			return fmt.Sprintf("does not terminate TLS for %q", k)
		case got.CertFile != want[k].CertFile || got.KeyFile != want[k].KeyFile:
			return fmt.Sprintf("presents %s / %s for %q, not %s / %s", got.CertFile, got.KeyFile, k, want[k].CertFile, want[k].KeyFile)
		}
	}
	return ""
}
