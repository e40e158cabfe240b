package ingressnginx

import (
	"github.com/gwretry/gwretry/report"
)

// Reason is a stable CamelCase code for why an ingress-nginx setting has
// its status in the import's report: a reason of report.ImportCatalogue,
// where each is documented with its parameters and text.
type Reason = report.Reason

// The import's reasons (Reasons lists them with their status and text).
const (
	ReasonNotServed                      = report.ImportNotServed
	ReasonClassNotServed                 = report.ImportClassNotServed
	ReasonClassOfOtherController         = report.ImportClassOfOtherController
	ReasonClassServedByName              = report.ImportClassServedByName
	ReasonClassNotInInput                = report.ImportClassNotInInput
	ReasonCanaryNotImported              = report.ImportCanaryNotImported
	ReasonPathTypesKept                  = report.ImportPathTypesKept
	ReasonPathsBecomeRegexes             = report.ImportPathsBecomeRegexes
	ReasonAnnotationNotCarried           = report.ImportAnnotationNotCarried
	ReasonRewriteTargetDropped           = report.ImportRewriteTargetDropped
	ReasonOtherNamespaceServes           = report.ImportOtherNamespaceServes
	ReasonOtherIngressServes             = report.ImportOtherIngressServes
	ReasonOtherIngressSettings           = report.ImportOtherIngressSettings
	ReasonImplementationSpecificAsPrefix = report.ImportImplementationSpecificAsPrefix
	ReasonExactMatchedAsRegex            = report.ImportExactMatchedAsRegex
	ReasonRegexSemanticsDiffer           = report.ImportRegexSemanticsDiffer
	ReasonDefaultBackendCarried          = report.ImportDefaultBackendCarried
	ReasonDefaultBackendUnused           = report.ImportDefaultBackendUnused
	ReasonDefaultBackendNotFirst         = report.ImportDefaultBackendNotFirst
	ReasonDefaultBackendNotForCatchAll   = report.ImportDefaultBackendNotForCatchAll
	ReasonDefaultBackendOtherServer      = report.ImportDefaultBackendOtherServer
	ReasonDefaultBackendReplaced         = report.ImportDefaultBackendReplaced
	ReasonCatchAllHost                   = report.ImportCatchAllHost
	ReasonCatchAllOtherNamespaces        = report.ImportCatchAllOtherNamespaces
	ReasonRetriesOff                     = report.ImportRetriesOff
	ReasonNoRetryCondition               = report.ImportNoRetryCondition
	ReasonNothingRetried                 = report.ImportNothingRetried
	ReasonConditionsCarried              = report.ImportConditionsCarried
	ReasonConditionsCarriedAllMethods    = report.ImportConditionsCarriedAllMethods
	ReasonUnlimitedTries                 = report.ImportUnlimitedTries
	ReasonTriesCarried                   = report.ImportTriesCarried
	ReasonNoLimit                        = report.ImportNoLimit
	ReasonRequestTimeoutEndsAll          = report.ImportRequestTimeoutEndsAll
	ReasonRetryWindowDropped             = report.ImportRetryWindowDropped
	ReasonNoConnectTimeout               = report.ImportNoConnectTimeout
	ReasonIdleTimerBecomesTotal          = report.ImportIdleTimerBecomesTotal
	ReasonNoSendTimeout                  = report.ImportNoSendTimeout
	ReasonSeeNextUpstream                = report.ImportSeeNextUpstream
	ReasonInvalidValueIgnored            = report.ImportInvalidValueIgnored
	ReasonHTTPSRedirectCarried           = report.ImportHTTPSRedirectCarried
	ReasonHTTPSRedirectKeepsSlash        = report.ImportHTTPSRedirectKeepsSlash
	ReasonHTTPSRedirectNotCarried        = report.ImportHTTPSRedirectNotCarried
	ReasonHTTPSRedirectWithoutTLS        = report.ImportHTTPSRedirectWithoutTLS
	ReasonBarePathRedirected             = report.ImportBarePathRedirected

	// Caveats of the retry conditions: each makes a carried finding
	// approximated.
	CaveatErrorNotListed         = report.ImportCaveatErrorNotListed
	CaveatTimeoutNotListed       = report.ImportCaveatTimeoutNotListed
	CaveatInvalidHeaderUnmapped  = report.ImportCaveatInvalidHeaderUnmapped
	CaveatNonIdempotentNotListed = report.ImportCaveatNonIdempotentNotListed
)

// ReasonEntry is one reason of the import's catalogue.
type ReasonEntry struct {
	Reason Reason
	Status Status
	// Params names the parameters a finding with this reason carries.
	Params []string
	// Text is the short rendering, with {name} for each parameter.
	Text string
}

// Reasons is the import's catalogue of finding reasons (caveats left
// out), sorted by code: report.ImportCatalogue's.
func Reasons() []ReasonEntry {
	var es []ReasonEntry
	for _, e := range report.ImportCatalogue() {
		if !e.IsCaveat() {
			es = append(es, ReasonEntry{Reason: e.Reason, Status: Status(e.Status), Params: e.Params, Text: e.Text})
		}
	}
	return es
}
