package report

// envoyReasons are the reasons and caveats first needed by the envoy target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func envoyReasons() []Entry {
	return nil
}
