package haproxy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	cperrors "github.com/haproxytech/client-native/v5/config-parser/errors"
	"github.com/haproxytech/client-native/v5/config-parser/params"
	"github.com/haproxytech/client-native/v5/config-parser/parsers/http/actions"
	"github.com/haproxytech/client-native/v5/config-parser/types"

	"github.com/gwretry/gwretry/translate"
)

// HAProxy's own defaults when neither the backend nor the defaults section
// sets a value (doc/configuration.txt): 3 connection retries, retry-on
// conn-failure, no server timeout.
const (
	builtinRetries = 3
	builtinRetryOn = "conn-failure"
)

// Observe implements translate.Judge: it parses haproxy.cfg back with
// config-parser and derives, from the rule's backend section and the
// defaults it inherits, what HAProxy does with each method class of each
// rule. It knows HAProxy's semantics: `retries` is read into a C int,
// L7 retries (anything but conn-failure) need the whole request in one
// buffer and are turned off by disable-l7-retry, conn-failure alone
// retries only requests not yet sent, timeout server is an inactivity
// timer that answers 504, and http-request return answers by itself.
func (*Backend) Observe(m *translate.Model, _ translate.Options, files []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	p, err := translate.FileParsed(files, OutputPath, parseSections)
	if err != nil {
		return nil, err
	}
	views, err := readTLS(p, files)
	if err != nil {
		return nil, err
	}
	if err := checkTLS(m, views); err != nil {
		return nil, fmt.Errorf("TLS termination: %w", err)
	}
	c := cfgReader{p: p}
	bufsize := c.int(parser.Global, parser.GlobalSectionName, "tune.bufsize", defaultBufSize)
	maxrewrite := c.int(parser.Global, parser.GlobalSectionName, "tune.maxrewrite", min(defaultMaxRewrite, bufsize/2))
	defs, err := p.SectionsGet(parser.Defaults)
	if err != nil {
		return nil, fmt.Errorf("listing defaults sections: %w", err)
	}
	def := ""
	if len(defs) > 0 {
		def = defs[len(defs)-1] // sections are listed in file order; there is one
	}
	backends, err := p.SectionsGet(parser.Backends)
	if err != nil {
		return nil, fmt.Errorf("listing backends: %w", err)
	}
	// A set: a scan of the list per rule is quadratic in the routes
	// (2.5 of HAProxy's 5 CPU seconds at 10,000 routes).
	haveBackend := make(map[string]bool, len(backends))
	for _, b := range backends {
		haveBackend[b] = true
	}
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	// In file order, so that each batch of sections is parsed once.
	rules := slices.Clone(m.Rules)
	slices.SortStableFunc(rules, func(a, b *translate.Rule) int {
		return cmp.Compare(p.position(parser.Backends, "be_"+a.Name), p.position(parser.Backends, "be_"+b.Name))
	})
	for _, r := range m.Rules {
		if name := "be_" + r.Name; !haveBackend[name] {
			return nil, fmt.Errorf("rule %s: no backend %s in %s", r.Name, name, OutputPath)
		}
	}
	for _, r := range rules {
		name := "be_" + r.Name
		be := c.backend(def, name)
		if c.err != nil {
			return nil, c.err
		}
		fl, err := be.filters.filters(m, r)
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", name, err)
		}
		out[r.Name] = be.behaviours(r, fl, bufsize-maxrewrite)
	}
	return out, nil
}

// cfgReader reads attributes, recording the first error other than "not
// set". It reads haproxy.cfg a batch of sections at a time
// (cfgSections.batch): the parse of the last batch read is kept until
// another is read, so sections are best read in file order.
type cfgReader struct {
	p     *cfgSections
	typ   parser.Section
	batch int
	q     parser.Parser
	err   error
}

func (c *cfgReader) get(typ parser.Section, section, attr string) any {
	if section == "" {
		return nil
	}
	q := c.p.head
	if typ == parser.Frontends || typ == parser.Backends {
		if b := c.p.batchOf(typ, section); c.q == nil || c.typ != typ || c.batch != b {
			var err error
			if q, err = c.p.batch(typ, b); err != nil {
				if c.err == nil {
					c.err = fmt.Errorf("%s %s: reading %s: %w", typ, section, attr, err)
				}
				return nil
			}
			c.typ, c.batch, c.q = typ, b, q
		}
		q = c.q
	}
	v, err := q.Get(typ, section, attr)
	if err != nil {
		if !errors.Is(err, cperrors.ErrFetch) && c.err == nil {
			c.err = fmt.Errorf("%s %s: reading %s: %w", typ, section, attr, err)
		}
		return nil
	}
	return v
}

func (c *cfgReader) int(typ parser.Section, section, attr string, dflt int64) int64 {
	if v, ok := c.get(typ, section, attr).(*types.Int64C); ok {
		return v.Value
	}
	return dflt
}

// inherited returns the backend's value of attr, else the defaults'.
func (c *cfgReader) inherited(def, be, attr string) any {
	if v := c.get(parser.Backends, be, attr); v != nil {
		return v
	}
	return c.get(parser.Defaults, def, attr)
}

// backendView is what a backend section, with what it inherits, says.
type backendView struct {
	retries       int64 // as HAProxy stores it: a C int
	retryOn       map[string]bool
	codes         []int
	bufferRequest bool
	serverTimeout translate.Timer
	// answer is the status of an unconditional http-request return.
	answer int
	// share500 is the fraction of requests a conditional
	// `return status 500 if { rand(T) lt I }` answers, or 0.
	share500 float64
	// l7Off are the methods for which disable-l7-retry applies; allOff
	// when it is unconditional.
	l7Off  []string
	allOff bool
	// servers counts servers with a positive weight.
	servers int
	// connectTimeout is timeout connect (0: unset, infinite); redispatch
	// is option redispatch with an interval other than 0.
	connectTimeout time.Duration
	redispatch     bool
	// filters are the header, path and redirect rules.
	filters filterView
	err     error
}

func (c *cfgReader) backend(def, name string) backendView {
	v := backendView{retries: builtinRetries}
	if x, ok := c.inherited(def, name, "retries").(*types.Int64C); ok {
		v.retries = int64(int32(x.Value)) // atol() into an int
	}
	v.retries = max(v.retries, 0)
	retryOn := builtinRetryOn
	if x, ok := c.inherited(def, name, "retry-on").(*types.StringC); ok {
		retryOn = x.Value
	}
	v.retryOn = map[string]bool{}
	for _, w := range strings.Fields(retryOn) {
		if n, err := strconv.Atoi(w); err == nil {
			v.codes = append(v.codes, n)
			continue
		}
		if w == "all-retryable-errors" {
			for _, t := range []string{"conn-failure", "empty-response", "junk-response", "response-timeout", "0rtt-rejected"} {
				v.retryOn[t] = true
			}
			v.codes = append(v.codes, 500, 502, 503, 504)
			continue
		}
		v.retryOn[w] = true
	}
	if v.retryOn["none"] {
		v.retryOn, v.codes = map[string]bool{}, nil
	}
	slices.Sort(v.codes)
	v.codes = slices.Compact(v.codes)
	if x, ok := c.inherited(def, name, "option http-buffer-request").(*types.SimpleOption); ok {
		v.bufferRequest = !x.NoOption
	}
	v.serverTimeout = translate.Timer{Kind: translate.TimerNone}
	if x, ok := c.inherited(def, name, "timeout server").(*types.SimpleTimeout); ok {
		d, err := parseHAProxyTime(x.Value)
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("backend %s: timeout server: %w", name, err)
		}
		if d > 0 {
			v.serverTimeout = translate.Timer{Kind: translate.TimerIdle, Value: d}
		}
	}
	if x, ok := c.inherited(def, name, "timeout connect").(*types.SimpleTimeout); ok {
		d, err := parseHAProxyTime(x.Value)
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("backend %s: timeout connect: %w", name, err)
		}
		v.connectTimeout = d
	}
	if x, ok := c.inherited(def, name, "option redispatch").(*types.OptionRedispatch); ok {
		v.redispatch = !x.NoOption && (x.Interval == nil || *x.Interval != 0)
	}
	if rules, ok := c.get(parser.Backends, name, "http-request").([]types.Action); ok {
		for _, a := range rules {
			v.httpRequest(a)
		}
	}
	if rules, ok := c.get(parser.Backends, name, "http-after-response").([]types.Action); ok {
		for _, a := range rules {
			op, err := readHeaderOp(a)
			switch {
			case err != nil && v.err == nil:
				v.err = fmt.Errorf("http-after-response: %w", err)
			case op != nil:
				v.filters.response = append(v.filters.response, *op)
			}
		}
	}
	if v.err != nil && c.err == nil {
		c.err = fmt.Errorf("backend %s: %w", name, v.err)
	}
	if srvs, ok := c.get(parser.Backends, name, "server").([]types.Server); ok {
		for _, s := range srvs {
			if serverWeight(s) > 0 {
				v.servers++
			}
		}
	}
	return v
}

// httpRequest applies one http-request rule. Rules after an unconditional
// return never run.
func (v *backendView) httpRequest(a types.Action) {
	if v.answer != 0 {
		return
	}
	switch a := a.(type) {
	case *actions.Return:
		status := 200
		if a.Status != nil {
			status = int(*a.Status)
		}
		switch {
		case a.Cond == "":
			v.answer = status
		case a.Cond == "if" && status == deadStatus:
			var total, lt int64
			if _, err := fmt.Sscanf(a.CondTest, "{ rand(%d) lt %d }", &total, &lt); err != nil || total <= 0 {
				v.err = fmt.Errorf("http-request return if %s: condition not understood", a.CondTest)
				return
			}
			v.share500 = float64(min(max(lt, 0), total)) / float64(total)
		default:
			v.err = fmt.Errorf("http-request return %s %s: condition not understood", a.Cond, a.CondTest)
		}
	case *actions.DisableL7Retry:
		switch {
		case a.Cond == "":
			v.allOff = true
		case a.Cond == "if" && strings.HasPrefix(a.CondTest, "{ method ") && strings.HasSuffix(a.CondTest, " }"):
			v.l7Off = append(v.l7Off, strings.Fields(strings.TrimSuffix(strings.TrimPrefix(a.CondTest, "{ method "), " }"))...)
		default:
			// A condition the judge cannot read may apply to any request.
			v.allOff = true
		}
	default:
		ok, err := v.filters.requestAction(a)
		switch {
		case err != nil:
			v.err = err
		case !ok:
			v.err = fmt.Errorf("http-request %T: not an action gwretry writes", a)
		}
	}
}

func serverWeight(s types.Server) int64 {
	w := int64(1)
	for _, p := range s.Params {
		if o, ok := p.(*params.ServerOptionValue); ok && o.Name == "weight" {
			if n, err := strconv.ParseInt(o.Value, 10, 64); err == nil {
				w = n
			}
		}
	}
	return w
}

// behaviours derives the behaviour of each method class of rule r.
func (v backendView) behaviours(r *translate.Rule, fl translate.Filters, bufLimit int64) map[translate.MethodClass]translate.Behaviour {
	out := map[translate.MethodClass]translate.Behaviour{}
	for _, class := range []translate.MethodClass{translate.Idempotent, translate.NonIdempotent} {
		b := translate.Behaviour{MaxRetriedBody: -1, TryTimeout: v.serverTimeout,
			RequestTimeout: translate.Timer{Kind: translate.TimerNone}, TimeoutStatus: 504, ConnErrors: translate.ConnRetryNone}
		switch {
		case v.answer != 0:
			b.Answer = v.answer
			b.TryTimeout, b.TimeoutStatus = translate.Timer{Kind: translate.TimerNone}, 0
		case fl.Redirect != nil:
			b.Answer = max(fl.Redirect.StatusCode, 300)
			b.TryTimeout, b.TimeoutStatus = translate.Timer{Kind: translate.TimerNone}, 0
			b.Filters.Redirect = fl.Redirect
			b.Filters.ResponseHeaders = fl.ResponseHeaders
		case v.servers == 0:
			b.Answer = 503 // no server can take the request
			b.TryTimeout, b.TimeoutStatus = translate.Timer{Kind: translate.TimerNone}, 0
		}
		if b.Answer == 0 {
			b.InvalidShareAnswered = wantShare(r) == v.share500
			b.Filters = fl
		} else {
			b.InvalidShareAnswered = b.Answer == deadStatus
		}
		l7 := !v.allOff && !v.l7OffFor(class)
		l7Tokens := v.retryOn["empty-response"] || v.retryOn["junk-response"] || v.retryOn["response-timeout"] || len(v.codes) > 0
		if b.Answer == 0 && (v.retryOn["conn-failure"] || (l7 && l7Tokens)) {
			b.Retries = int(v.retries)
		}
		if v.retryOn["conn-failure"] {
			b.ConnErrors = translate.ConnRetryUnsent
		}
		if b.Retries > 0 {
			b.RetriesSource = fmt.Sprintf("retries %d", v.retries)
			if v.retryOn["conn-failure"] {
				b.Backoff.TurnAround = v.turnAround()
			}
		}
		if l7 && l7Tokens {
			if v.retryOn["conn-failure"] && v.retryOn["empty-response"] {
				b.ConnErrors = translate.ConnRetryAll
			}
			b.Codes = v.codes
			b.TimeoutRetried = v.retryOn["response-timeout"]
			// Only a request that fits in one buffer is kept for an L7
			// retry; without http-buffer-request only one that arrived
			// whole before the connection.
			b.MaxRetriedBody = bufLimit
			if !v.bufferRequest {
				b.MaxRetriedBody = 0
			}
		}
		out[class] = b
	}
	return out
}

// turnAround is the pause before retrying a failed connection on the same
// server (back_handle_st_cer): min(timeout connect, 1s). With option
// redispatch and more than one server the retry goes to another server
// at once (stream_choose_redispatch: roundrobin, no persistence).
func (v backendView) turnAround() time.Duration {
	if v.redispatch && v.servers > 1 {
		return 0
	}
	if v.connectTimeout > 0 {
		return min(v.connectTimeout, time.Second)
	}
	return time.Second
}

// l7OffFor reports whether disable-l7-retry covers some method of class.
func (v backendView) l7OffFor(class translate.MethodClass) bool {
	for _, m := range v.l7Off {
		if (class == translate.NonIdempotent) == translate.IsNonIdempotent(m) {
			return true
		}
	}
	return false
}

// wantShare is the fraction of a rule's requests the Gateway API answers
// 500 for its invalid backendRefs: their weight over the weight of all
// its backendRefs. Division rounds exactly, so it equals the fraction
// read from a rand condition of the same ratio in lowest terms.
func wantShare(r *translate.Rule) float64 {
	inv := float64(r.InvalidWeight())
	total := inv
	for _, b := range r.Backends {
		total += float64(max(b.Weight, 0))
	}
	if inv == 0 || total == 0 {
		return 0
	}
	return inv / total
}

// parseHAProxyTime reads a HAProxy time: an integer and an optional unit
// (us, ms, s, m, h, d; ms by default).
func parseHAProxyTime(s string) (time.Duration, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q: %w", s, err)
	}
	units := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[s[i:]]
	if !ok {
		return 0, fmt.Errorf("time %q: unknown unit", s)
	}
	if n > math.MaxInt64/int64(u) {
		return 0, fmt.Errorf("time %q: too large", s)
	}
	return time.Duration(n) * u, nil
}
