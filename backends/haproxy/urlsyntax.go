//gwretry:format
package haproxy

// defaultPort is the port a URL of scheme (http or https) means when it
// names none: shared by the redirect writer (filters.go) and the judge
// (judge_filters.go), which both need the URL syntax.
func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}
