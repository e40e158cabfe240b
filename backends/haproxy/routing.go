package haproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/translate"
	"github.com/haproxytech/client-native/v5/config-parser/types"
)

// noRouteBackend answers 404 to requests no route matches. Rule backends
// are named "be_<rule>", so it cannot clash with one.
const noRouteBackend = "no_route"

// hostFetch is the request host without a port, lower-cased: Host
// "A.example.com:8080" matches hostname "a.example.com".
const hostFetch = "req.hdr(host),field(1,:),lower"

// frontendPlan is the routing of one listener: binds, ACLs and use_backend
// rules in the Model's precedence order.
type frontendPlan struct {
	name        string
	bind        string
	acls        []types.ACL
	useBackends []types.UseBackend
	// tls is the TLS termination of an HTTPS listener; nil for HTTP.
	tls *tlsPlan
	// conn holds the client-side connection timeouts of its Gateways.
	conn connPlan
}

// planFrontend translates one listener. Virtual hosts are tried in the
// Model's order (exact, then wildcards, then the catch-all). A virtual
// host's routes already hold, after its own, those of every less specific
// hostname that covers it (see translate.VirtualHost), so once a request's
// host selects a virtual host, the no_route backend answers 404 only when
// none of those routes matches; the later virtual hosts are not consulted.
func planFrontend(l *translate.Listener, ck *tokenChecker) frontendPlan {
	f := frontendPlan{
		name: "fe_" + ck.word("listener name", l.Name),
		bind: bindAddress(ck.word("listener "+l.Name+" address", l.Address), l.Port),
	}
	if l.TLS {
		f.tls = planTLS(l, ck)
	}
	for vi, vh := range l.VirtualHosts {
		var hostACL string
		if vh.Hostname != "" {
			hostACL = fmt.Sprintf("vh%d_host", vi)
			f.acls = append(f.acls, hostMatch(hostACL, vh.Hostname, ck))
		}
		for mi, rm := range vh.Routes {
			prefix := fmt.Sprintf("vh%d_m%d", vi, mi)
			acls, names := matchACLs(prefix, rm.Match, ck)
			f.acls = append(f.acls, acls...)
			if hostACL != "" {
				names = append([]string{hostACL}, names...)
			}
			f.useBackends = append(f.useBackends, useBackend(ruleBackendName(rm.Rule, ck), names))
		}
		if hostACL != "" {
			f.useBackends = append(f.useBackends, useBackend(noRouteBackend, []string{hostACL}))
		}
	}
	return f
}

func useBackend(backend string, acls []string) types.UseBackend {
	u := types.UseBackend{Name: backend}
	if len(acls) > 0 {
		u.Cond = "if"
		u.CondTest = strings.Join(acls, " ")
	}
	return u
}

// bindAddress writes address:port, with brackets around an IPv6 address.
func bindAddress(addr string, port int) string {
	if a, err := netip.ParseAddr(addr); err == nil && a.Is6() {
		addr = "[" + addr + "]"
	}
	return addr + ":" + strconv.Itoa(port)
}

// hostMatch matches an exact hostname, or a wildcard "*.example.com" as a
// suffix ".example.com" (so the apex example.com does not match).
func hostMatch(name, hostname string, ck *tokenChecker) types.ACL {
	if suffix, ok := strings.CutPrefix(hostname, "*"); ok {
		return types.ACL{Name: name, Criterion: hostFetch, Value: "-m end " + ck.word("hostname", suffix)}
	}
	return types.ACL{Name: name, Criterion: hostFetch, Value: "-m str " + ck.word("hostname", hostname)}
}

// matchACLs returns the ACL lines of one match and the names to AND in its
// use_backend condition. Lines sharing a name are ORed by HAProxy.
func matchACLs(prefix string, m translate.Match, ck *tokenChecker) ([]types.ACL, []string) {
	var acls []types.ACL
	var names []string
	add := func(name string, lines ...types.ACL) {
		acls = append(acls, lines...)
		names = append(names, name)
	}
	switch m.PathType {
	case translate.PathExact:
		n := prefix + "_path"
		add(n, types.ACL{Name: n, Criterion: "path", Value: "-m str " + ck.quoted("path", m.Path)})
	case translate.PathPrefix:
		// Element-wise: "/a" matches /a and /a/..., not /ab. A trailing
		// '/' in the prefix is ignored; "/" matches every path.
		p := strings.TrimRight(m.Path, "/")
		if p != "" {
			n := prefix + "_path"
			add(n,
				types.ACL{Name: n, Criterion: "path", Value: "-m str " + ck.quoted("path", p)},
				types.ACL{Name: n, Criterion: "path", Value: "-m beg " + ck.quoted("path", p+"/")})
		}
	case translate.PathRegex:
		n := prefix + "_path"
		add(n, types.ACL{Name: n, Criterion: "path", Value: "-m reg " + ck.quoted("path regular expression", anchored(m.Path))})
	default:
		ck.fail(fmt.Errorf("unknown path match type %q", m.PathType))
	}
	if m.Method != "" {
		n := prefix + "_method"
		add(n, types.ACL{Name: n, Criterion: "method", Value: ck.word("method", m.Method)})
	}
	for i, h := range m.Headers {
		n := fmt.Sprintf("%s_h%d", prefix, i)
		fetch := "req.fhdr(" + ck.word("header name", h.Name) + ")"
		add(n, valueMatch(n, fetch, h, ck))
	}
	for i, q := range m.Query {
		n := fmt.Sprintf("%s_q%d", prefix, i)
		fetch := queryFetch(ck, q.Name)
		add(n, valueMatch(n, fetch, q, ck))
	}
	return acls, names
}

// queryFetch is the sample fetch urlp(NAME) of a query parameter: one
// plain word when the name is one; else the name with each '\” escaped
// for HAProxy's argument parser (\', which reads quotes in arguments),
// and the whole fetch in strong quotes for its config tokenizer
// (quoteWord: '#', '$', '\” and the rest as they are).
func queryFetch(ck *tokenChecker, name string) string {
	if strings.ContainsAny(name, "&#") {
		ck.fail(fmt.Errorf("query parameter name %q: '&' or '#'", shorten(name)))
	}
	if checkWord(name) == nil {
		return "urlp(" + ck.word("query parameter name", name) + ")"
	}
	if err := translate.CheckValue(translate.KindQueryName, name); err != nil {
		ck.fail(err)
	}
	return quoteWord("urlp(" + strings.ReplaceAll(name, "'", `\'`) + ")")
}

// valueMatch matches a header (whole value, commas included, any
// occurrence) or a query parameter (any occurrence) exactly or by a
// regular expression anchored at both ends.
func valueMatch(name, fetch string, v translate.ValueMatch, ck *tokenChecker) types.ACL {
	a := types.ACL{Name: name, Criterion: fetch}
	switch v.Type {
	case translate.StringExact:
		switch {
		case v.Value == "":
			a.Value = "-m len 0"
		case strings.HasPrefix(v.Value, "-"):
			a.Value = "-m str -- " + ck.quoted(v.Name+" value", v.Value)
		default:
			a.Value = "-m str " + ck.quoted(v.Name+" value", v.Value)
		}
	case translate.StringRegex:
		a.Value = "-m reg " + ck.quoted(v.Name+" regular expression", anchored(v.Value))
	default:
		ck.fail(fmt.Errorf("%s: unknown match type %q", v.Name, v.Type))
	}
	return a
}

// anchored makes HAProxy's regular expression search a full match, as the
// Gateway API implementations based on RE2 do.
func anchored(re string) string {
	return "^(" + re + ")$"
}

func ruleBackendName(r *translate.Rule, ck *tokenChecker) string {
	return "be_" + ck.word("rule name", r.Name)
}
