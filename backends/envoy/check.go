package envoy

import "fmt"

// Check reads an envoy.yaml written by this backend, strictly, and runs
// go-control-plane's ValidateAll over the bootstrap and every typed config
// in it. Golden tests use it; no Envoy binary is needed.
func Check(data []byte) error {
	bs, err := decode(data)
	if err != nil {
		return err
	}
	if err := validate(bs); err != nil {
		return fmt.Errorf("envoy bootstrap fails validation: %w", err)
	}
	return nil
}
