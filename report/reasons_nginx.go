package report

// nginxReasons are the reasons and caveats first needed by the nginx target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func nginxReasons() []Entry {
	return nil
}
