// Package report is the vocabulary of gwretry's report: the features a
// rule or Gateway can set, the statuses a target gives them, and the
// decision record behind every finding, a stable reason code with its
// caveats as data, drawn from one catalogue (Catalogue).
//
// A target's planner decides each claim once and records it here; the
// report, report.json and the tests read the record. The status of a
// finding follows from its record (Derive): unsupported when its reason
// says nothing is configured, approximated when its reason or any caveat
// says the behaviour differs from the Gateway API's, honoured otherwise.
// Run checks that every finding agrees with its record (Check).
//
// The package knows no data plane and imports nothing of gwretry's.
package report
