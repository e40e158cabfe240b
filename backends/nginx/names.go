//gwretry:format
package nginx

import "github.com/gwretry/gwretry/translate"

// How the generated file names what it holds: the link the writer makes
// and the judge follows from a rule of the model to its place in the file.

// locationName names a rule's named location; the "r_" prefix keeps it apart
// from noRoute.
func locationName(r *translate.Rule) string { return "r_" + r.Name }
