package report

// linkerdReasons are the reasons and caveats first needed by the linkerd target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func linkerdReasons() []Entry {
	return nil
}
