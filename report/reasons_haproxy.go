package report

// haproxyReasons are the reasons and caveats first needed by the haproxy target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func haproxyReasons() []Entry {
	return nil
}
