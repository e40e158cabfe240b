package report

// traefikReasons are the reasons and caveats first needed by the traefik target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func traefikReasons() []Entry {
	return nil
}
