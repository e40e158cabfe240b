package report

// openshiftReasons are the reasons and caveats first needed by the openshift target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func openshiftReasons() []Entry {
	return nil
}
