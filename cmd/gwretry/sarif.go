package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// SARIF 2.1.0 (OASIS), the subset gwretry writes: what GitHub code
// scanning and other SARIF readers show.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool      `json:"tool"`
	Results []sarifResult  `json:"results"`
	Props   map[string]any `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	HelpURI              string         `json:"helpUri"`
	DefaultConfiguration sarifLevel     `json:"defaultConfiguration"`
	Props                map[string]any `json:"properties,omitempty"`
}

type sarifLevel struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Props               sarifFinding      `json:"properties"`
}

type sarifLocation struct {
	Physical sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	Artifact sarifArtifact `json:"artifactLocation"`
	Region   *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// sarifFinding is the decision record of a result, as report.json has it,
// and the target's version.
type sarifFinding struct {
	translate.Finding
	Version string `json:"version"`
}

const (
	sarifSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	gwretryURI   = "https://github.com/gwretry/gwretry"
	catalogueURI = gwretryURI + "/blob/main/docs/report.md#the-catalogue"
)

// sarifLevelOf is a status as a SARIF level: unsupported is an error,
// approximated a warning.
func sarifLevelOf(s report.Status) string {
	if s == report.Unsupported {
		return "error"
	}
	return "warning"
}

// writeSARIF writes r as a SARIF 2.1.0 log: one result per finding that is
// approximated or unsupported, its ruleId the reason, or the first caveat
// of an approximated finding (properties.caveats has them all), located at
// the rule in its manifest; the rules are the catalogue entries the results
// use, their words the catalogue's.
func writeSARIF(w io.Writer, r *translate.Report, sources map[string]translate.Position) error {
	gs := gaps(r, sources)
	// The rules, in the catalogue's order, and each result's index.
	used := map[report.Reason]bool{}
	for _, g := range gs {
		used[codes(g.f)[0]] = true
	}
	var rules []sarifRule
	index := map[report.Reason]int{}
	for _, e := range report.Catalogue() {
		if !used[e.Reason] {
			continue
		}
		level, kind := sarifLevelOf(e.Status), "reason"
		if e.IsCaveat() {
			level, kind = "warning", "caveat"
		}
		props := map[string]any{"kind": kind}
		if len(e.Params) > 0 {
			props["parameters"] = e.Params
		}
		index[e.Reason] = len(rules)
		rules = append(rules, sarifRule{
			ID: string(e.Reason), Name: string(e.Reason),
			ShortDescription:     sarifText{e.Text},
			HelpURI:              catalogueURI,
			DefaultConfiguration: sarifLevel{level},
			Props:                props,
		})
	}
	results := make([]sarifResult, 0, len(gs))
	for _, g := range gs {
		f := g.f
		id := codes(f)[0]
		res := sarifResult{
			RuleID: string(id), RuleIndex: index[id], Level: sarifLevelOf(f.Status),
			Message:             sarifText{gapMessage(g)},
			PartialFingerprints: map[string]string{"gwretryFinding/v1": fingerprint(f)},
			Props:               sarifFinding{Finding: *f, Version: g.version},
		}
		if g.file != "" {
			loc := sarifLocation{Physical: sarifPhysical{Artifact: sarifArtifact{URI: sarifURI(g.file)}}}
			if g.line > 0 {
				loc.Physical.Region = &sarifRegion{StartLine: g.line}
			}
			res.Locations = []sarifLocation{loc}
		}
		results = append(results, res)
	}
	var targets []string
	for _, t := range r.Targets {
		targets = append(targets, t.Name+"@"+t.Version)
	}
	log := sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{{
		Tool:    sarifTool{Driver: sarifDriver{Name: "gwretry", Version: toolVersion(), InformationURI: gwretryURI, Rules: rules}},
		Results: results,
		Props:   map[string]any{"targets": targets, "routes": r.Routes, "rules": r.Rules},
	}}}
	if log.Runs[0].Tool.Driver.Rules == nil {
		log.Runs[0].Tool.Driver.Rules = []sarifRule{}
	}
	b, err := json.MarshalIndent(log, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// sarifURI is a relative path as a URI reference: each segment escaped.
func sarifURI(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// fingerprint identifies a finding across runs whatever its line: the
// target, the rule or Gateway and the feature.
func fingerprint(f *translate.Finding) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{f.Target, f.Gateway, f.Route, f.RuleName, strconv.Itoa(f.Rule), string(f.Feature)}, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// toolVersion is gwretry's module version, "(devel)" for a build from a
// clone.
func toolVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(bi).Version
}
