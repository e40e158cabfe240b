package report

// grpcReasons are the reasons and caveats first needed by the grpc target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func grpcReasons() []Entry {
	return nil
}
