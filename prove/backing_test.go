package prove

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestBacking judges, for every shortfall class, a request that shows it
// with an approximated finding whose decision record backs it and with
// ones whose record does not: another caveat, or the right caveat with
// parameters that disagree with what was seen. Unsupported findings are
// backed (the feature is indeed not in effect); honoured ones never are.
func TestBacking(t *testing.T) {
	cv := report.NewCaveat
	get := Result{Method: "GET", Status: 500, Hits: tries(1, 0, 0)}
	post := Result{Method: "POST", Status: 500, BodyBytes: 100 << 10, Hits: tries(1, 0, 0)}
	post4k := Result{Method: "POST", Status: 500, BodyBytes: 4 << 10, Hits: tries(1, 0, 0)}
	exhausted := Result{Method: "GET", Status: 500, Hits: tries(3, 0, 0)}
	closed := Result{Method: "GET", Err: "EOF", Hits: tries(1, 0, 0)}
	cutLate := Result{Method: "GET", Status: 504, Duration: 2 * time.Second, Hits: tries(1, 0, 0)}
	quick := Result{Method: "GET", Status: 200, Hits: tries(3, 0, 10*time.Millisecond)}
	slowTries := Result{Method: "GET", Status: 500, Duration: 750 * time.Millisecond, Hits: tries(3, 250*time.Millisecond, 0)}
	oneSilentTry := Result{Method: "GET", Status: 200, Duration: time.Second, Hits: tries(1, time.Second, 0)}
	cut600 := Result{Method: "GET", Status: 504, Duration: 600 * time.Millisecond, Hits: tries(1, 0, 0)}
	stray := Result{Method: "GET", Status: 200, Hits: tries(1, 0, 0)}

	clamped := func(configured string) report.Caveat {
		return cv(report.CaveatAttemptsClamped, "configured", configured, "max", configured)
	}
	exempt := cv(report.CaveatNonIdempotentExempt, "methods", "POST, PATCH, LOCK")
	haproxyBuffer := cv(report.CaveatRetryBufferLimitedByHeaders, "bufsize", "16384", "maxrewrite", "1024")
	idle := cv(report.CaveatIdleTimer)

	tests := []struct {
		name      string
		shortfall Shortfall
		seen      Result
		record    report.Decision
		want      Outcome
	}{
		{"listed code: the codes caveat names it", Shortfall{Class: ListedCodeNotRetried, Code: 500}, get,
			approx(cv(report.CaveatCodesNotRetried, "codes", "429, 500")), Backed},
		{"listed code: the codes caveat names others", Shortfall{Class: ListedCodeNotRetried, Code: 500}, get,
			approx(cv(report.CaveatCodesNotRetried, "codes", "502, 503")), Contradicted},
		{"listed code: POST exemption on a GET", Shortfall{Class: ListedCodeNotRetried, Code: 500}, get, approx(exempt), Contradicted},
		{"listed code: POST exemption on a POST", Shortfall{Class: ListedCodeNotRetried, Code: 500}, post, approx(exempt), Backed},
		{"listed code: sent requests not retried, tried once", Shortfall{Class: ListedCodeNotRetried, Code: 500}, get,
			approx(cv(report.CaveatSentRequestNotRetried)), Backed},
		{"listed code: sent requests not retried, tried thrice", Shortfall{Class: ListedCodeNotRetried, Code: 500}, exhausted,
			approx(cv(report.CaveatSentRequestNotRetried)), Contradicted},

		{"unlisted code: the caveat names it", Shortfall{Class: UnlistedCodeRetried, Code: 503}, exhausted,
			approx(cv(report.CaveatUnlistedCodesRetried, "codes", "502, 503", "status", "UNAVAILABLE")), Backed},
		{"unlisted code: the caveat names others", Shortfall{Class: UnlistedCodeRetried, Code: 503}, exhausted,
			approx(cv(report.CaveatUnlistedCodesRetried, "codes", "504", "status", "UNAVAILABLE")), Contradicted},

		{"attempts: clamped to the retries seen", Shortfall{Class: AttemptsNotKept}, exhausted, approx(clamped("2")), Backed},
		{"attempts: clamped to other retries", Shortfall{Class: AttemptsNotKept}, exhausted, approx(clamped("1")), Contradicted},
		{"attempts: POST exemption on a GET", Shortfall{Class: AttemptsNotKept}, exhausted, approx(exempt), Contradicted},

		{"closed: sent requests not retried", Shortfall{Class: ConnectionNotRetried}, closed, approx(cv(report.CaveatSentRequestNotRetried)), Backed},
		{"closed: an idle timer", Shortfall{Class: ConnectionNotRetried}, closed, approx(idle), Contradicted},

		{"refused: connection failures not retried", Shortfall{Class: RefusedNotRetried}, closed,
			approx(cv(report.CaveatConnectionFailuresNotRetried)), Backed},
		{"refused: sent requests not retried", Shortfall{Class: RefusedNotRetried}, closed,
			approx(cv(report.CaveatSentRequestNotRetried)), Contradicted},

		{"cut try: no retry after 1s, cut at 2s", Shortfall{Class: CutTryNotRetried}, cutLate,
			approx(cv(report.CaveatLateRetriesDropped, "after", "1s")), Backed},
		{"cut try: no retry after 10s, cut at 2s", Shortfall{Class: CutTryNotRetried}, cutLate,
			approx(cv(report.CaveatLateRetriesDropped, "after", "10s")), Contradicted},
		{"cut try: cut after headers", Shortfall{Class: CutTryNotRetried}, cutLate,
			approx(cv(report.CaveatNoAnswerAfterHeaders)), Contradicted},

		{"POST not retried: exempt", Shortfall{Class: NonIdempotentNotRetried}, post, approx(exempt), Backed},
		{"POST not retried: LOCK exempt", Shortfall{Class: NonIdempotentNotRetried}, post,
			approx(cv(report.CaveatNonIdempotentExempt, "methods", "LOCK")), Contradicted},
		{"POST not retried: body limit", Shortfall{Class: NonIdempotentNotRetried}, post,
			approx(cv(report.CaveatBodyBufferLimit, "limit", "64 KiB")), Contradicted},

		{"POST retried by default: unsupported", Shortfall{Class: NonIdempotentRetried}, exhausted,
			report.Decide(report.ReasonNotExpressible), Backed},
		{"POST retried by default: exempt", Shortfall{Class: NonIdempotentRetried}, exhausted, approx(exempt), Contradicted},

		{"body: 100 KiB over the header buffer", Shortfall{Class: BodyNotRetried}, post, approx(haproxyBuffer), Backed},
		{"body: 4 KiB within the header buffer", Shortfall{Class: BodyNotRetried}, post4k, approx(haproxyBuffer), Contradicted},
		{"body: 100 KiB over 64 KiB", Shortfall{Class: BodyNotRetried}, post, approx(cv(report.CaveatBodyBufferLimit, "limit", "64 KiB")), Backed},
		{"body: 100 KiB within 1 MiB", Shortfall{Class: BodyNotRetried}, post, approx(cv(report.CaveatBodyBufferLimit, "limit", "1 MiB")), Contradicted},
		{"body: POST exemption", Shortfall{Class: BodyNotRetried}, post, approx(exempt), Contradicted},

		{"backoff: full jitter", Shortfall{Class: NoDelay, Timer: 200 * time.Millisecond}, quick,
			approx(cv(report.CaveatFullJitterBackoff)), Backed},
		{"backoff: the record says retries are immediate", Shortfall{Class: NoDelay, Timer: 200 * time.Millisecond}, quick,
			report.Decide(report.ReasonRetriesImmediate).With(idle), Backed},
		{"backoff: drawn from 50ms", Shortfall{Class: NoDelay, Timer: 200 * time.Millisecond}, quick,
			approx(cv(report.CaveatRandomizedBackoff, "min", "50ms", "max", "1.2s")), Backed},
		{"backoff: drawn from the backoff up", Shortfall{Class: NoDelay, Timer: 200 * time.Millisecond}, quick,
			approx(cv(report.CaveatRandomizedBackoff, "min", "200ms", "max", "1.2s")), Contradicted},
		{"backoff: an idle timer", Shortfall{Class: NoDelay, Timer: 200 * time.Millisecond}, quick, approx(idle), Contradicted},

		{"silent try: clamped to 5s", Shortfall{Class: TryNotCut, Timer: 300 * time.Millisecond}, oneSilentTry,
			approx(cv(report.CaveatTimeoutClamped, "max", "5s")), Backed},
		{"silent try: clamped to 100ms", Shortfall{Class: TryNotCut, Timer: 300 * time.Millisecond}, oneSilentTry,
			approx(cv(report.CaveatTimeoutClamped, "max", "100ms")), Contradicted},
		{"silent try: an idle timer", Shortfall{Class: TryNotCut, Timer: 300 * time.Millisecond}, oneSilentTry, approx(idle), Contradicted},

		{"slow body: an idle timer", Shortfall{Class: BodyNotCut, Timer: 500 * time.Millisecond}, oneSilentTry, approx(idle), Backed},
		{"slow body: no total timer", Shortfall{Class: BodyNotCut, Timer: 500 * time.Millisecond}, oneSilentTry,
			approx(cv(report.CaveatNoTotalRequestTimeout)), Contradicted},

		{"request: no total timer, short tries", Shortfall{Class: RequestNotCut, Timer: 400 * time.Millisecond}, slowTries,
			approx(cv(report.CaveatNoTotalRequestTimeout)), Backed},
		{"request: no total timer, one silent try", Shortfall{Class: RequestNotCut, Timer: 400 * time.Millisecond}, oneSilentTry,
			approx(cv(report.CaveatNoTotalRequestTimeout)), Contradicted},

		{"disabled: a 500ms default cut at 600ms", Shortfall{Class: CutWhileDisabled}, cut600,
			approx(cv(report.CaveatDefaultRouteTimeout, "timeout", "500ms")), Backed},
		{"disabled: a 15s default cut at 600ms", Shortfall{Class: CutWhileDisabled}, cut600,
			approx(cv(report.CaveatDefaultRouteTimeout, "timeout", "15s")), Contradicted},

		{"re-sent: closed unanswered, clients re-send", Shortfall{Class: Resent}, exhausted,
			approx(cv(report.CaveatKeepAliveClosedUnanswered, "version", "2.6")), Backed},
		{"re-sent: an idle timer", Shortfall{Class: Resent}, exhausted, approx(idle), Contradicted},

		{"unanswered: closed unanswered", Shortfall{Class: ClosedUnanswered}, closed,
			approx(cv(report.CaveatKeepAliveClosedUnanswered, "version", "2.6")), Backed},
		{"unanswered: cut after headers", Shortfall{Class: ClosedUnanswered}, closed, approx(cv(report.CaveatNoAnswerAfterHeaders)), Contradicted},

		{"dead rule: the share goes to valid backends", Shortfall{Class: NotAnswered500}, stray,
			approx(cv(report.CaveatInvalidShareToValidBackends, "share", "1", "total", "2")), Backed},
		{"dead rule: an idle timer", Shortfall{Class: NotAnswered500}, stray, approx(idle), Contradicted},

		{"request header: the add caveat names it", Shortfall{Class: RequestHeaderNotModified, Name: "x-add"}, stray,
			approx(cv(report.CaveatHeaderAddReplaces, "headers", "X-Other, X-Add")), Backed},
		{"request header: the add caveat names another", Shortfall{Class: RequestHeaderNotModified, Name: "X-Add"}, stray,
			approx(cv(report.CaveatHeaderAddReplaces, "headers", "X-Other")), Contradicted},
		{"response header: the caveat names it", Shortfall{Class: ResponseHeaderNotModified, Name: "X-C"}, stray,
			approx(cv(report.CaveatHeadersHandledByProxy, "headers", "X-C")), Backed},
		{"response header: an idle timer", Shortfall{Class: ResponseHeaderNotModified, Name: "X-C"}, stray, approx(idle), Contradicted},
		{"host: replaced by the rewrite", Shortfall{Class: HostNotRewritten, Name: "Host"}, stray,
			approx(cv(report.CaveatHostReplacedByRewrite, "hostname", "b.example.com")), Backed},
		{"host: an idle timer", Shortfall{Class: HostNotRewritten, Name: "Host"}, stray, approx(idle), Contradicted},
		{"path: unsupported", Shortfall{Class: PathNotRewritten}, stray, report.Decide(report.ReasonNotExpressible), Backed},
		{"path: an idle timer", Shortfall{Class: PathNotRewritten}, stray, approx(idle), Contradicted},
		{"redirect status: 308 for a POST", Shortfall{Class: RedirectStatusOther, Code: 301}, Result{Method: "POST", Status: 308},
			approx(cv(report.CaveatRedirectStatusByMethod, "status", "301", "get", "301", "other", "308")), Backed},
		{"redirect status: 308 for a GET", Shortfall{Class: RedirectStatusOther, Code: 301}, Result{Method: "GET", Status: 308},
			approx(cv(report.CaveatRedirectStatusByMethod, "status", "301", "get", "301", "other", "308")), Contradicted},
		{"location: unsupported", Shortfall{Class: RedirectLocationOther}, stray, report.Decide(report.ReasonNotExpressible), Backed},
		{"location: an idle timer", Shortfall{Class: RedirectLocationOther}, stray, approx(idle), Contradicted},
		{"mirror: unsupported", Shortfall{Class: NotMirrored}, stray, report.Decide(report.ReasonNotExpressible), Backed},
		{"certificate: chosen by names", Shortfall{Class: CertificateOther}, stray, approx(cv(report.CaveatCertificateChosenByNames)), Backed},
		{"certificate: an idle timer", Shortfall{Class: CertificateOther}, stray, approx(idle), Contradicted},
		{"mirror: a rounded share", Shortfall{Class: NotMirrored}, stray,
			approx(cv(report.CaveatMirrorShareRounded, "share", "1/3", "rounded", "33%")), Contradicted},
	}
	seen := map[Class][2]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := translate.Finding{Target: "x", Route: "e2e/p", Feature: translate.FeatureRetryAttempts}
			f.Decide(tc.record)
			test := Test{Spec: Expect{Status: 299}, Claims: []Claim{{Feature: f.Feature, Shortfall: tc.shortfall, Otherwise: []Expect{{}}}}}
			v := Judge(test, []translate.Finding{f}, Observation{tc.seen})[0]
			if v.Outcome != tc.want {
				t.Errorf("%s with %s = %s, want %s: %s", tc.shortfall, RecordText(tc.record), v.Outcome, tc.want, v.Reason)
			}
			s := seen[tc.shortfall.Class]
			s[0] = s[0] || v.Outcome == Backed
			s[1] = s[1] || v.Outcome == Contradicted
			seen[tc.shortfall.Class] = s

			// Claimed honoured, the same shortfall contradicts the record.
			f.Status = translate.Honoured
			if v := Judge(test, []translate.Finding{f}, Observation{tc.seen})[0]; v.Outcome != Contradicted {
				t.Errorf("honoured with %s = %s, want contradicted", tc.shortfall, v.Outcome)
			}
		})
	}
	for class := range backing {
		if s := seen[class]; !s[0] || !s[1] {
			t.Errorf("class %q: backed seen %v, contradicted seen %v; want a case of each", class, s[0], s[1])
		}
	}
}

// approx is a record with reason Configured and caveats cs: approximated.
func approx(cs ...report.Caveat) report.Decision {
	return report.Decide(report.ReasonConfigured).With(cs...)
}

// TestBackingCatalogue: every reason of the backing table is in the
// catalogue, and every parameter an entry checks is one the reason has.
func TestBackingCatalogue(t *testing.T) {
	probe := Result{Method: "GET", Hits: []flaky.Hit{{}}}
	for class, bs := range backing {
		for _, b := range bs {
			e, ok := report.Lookup(b.Reason)
			if !ok {
				t.Errorf("%s: %s is not in the catalogue", class, b.Reason)
				continue
			}
			if b.Agrees == nil {
				continue
			}
			// An entry that checks parameters reads only the reason's own:
			// with all of them missing it must not back anything.
			if b.Agrees(report.Params{}, Shortfall{Class: class}, probe) && len(e.Params) > 0 {
				t.Errorf("%s: %s backs the shortfall without any of its parameters %v", class, b.Reason, e.Params)
			}
		}
	}
}

// TestVerdictsReadNoMessage: the judges and prove decide from decision
// records alone. No file of the e2e package or of prove reads or writes
// a finding's Message.
func TestVerdictsReadNoMessage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	proveFiles, err := filepath.Glob(filepath.Join("..", "cmd", "gwretry", "prove*.go"))
	if err != nil || len(proveFiles) == 0 {
		t.Fatalf("no prove sources: %v", err)
	}
	fset := token.NewFileSet()
	for _, path := range slices.Concat(files, proveFiles) {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "Message" {
					t.Errorf("%s: reads .Message", fset.Position(n.Pos()))
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Message" {
					t.Errorf("%s: sets Message", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}
