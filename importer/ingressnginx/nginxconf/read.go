package nginxconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/translate"
)

// UnboundedRetries stands for no bound on the retries
// (proxy_next_upstream_tries 0 with the Lua balancer): more than any
// timeline lists.
const UnboundedRetries = 1 << 20

// Read parses data, a file Generate wrote, with crossplane and derives
// from its directives alone what ingress-nginx does with the requests of
// each location, per method class: loc names the blocks (server_name and
// location arguments) to read, nothing else. The blocks of one location
// must behave the same. A location Generate did not write (no upstream)
// gets nil.
func Read(data []byte, locs []Location) ([]map[translate.MethodClass]translate.Behaviour, error) {
	payload, err := crossplane.Parse("ingress-nginx.conf", &crossplane.ParseOptions{
		Open:               func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		Glob:               func(string) ([]string, error) { return nil, errors.New("include is not allowed") },
		SingleFile:         true,
		StopParsingOnError: true,
	})
	if err != nil {
		return nil, fmt.Errorf("ingress-nginx configuration does not parse: %w", err)
	}
	if len(payload.Errors) > 0 {
		return nil, fmt.Errorf("ingress-nginx configuration does not parse: %v", payload.Errors[0].Error)
	}
	var http crossplane.Directives
	for _, d := range payload.Config[0].Parsed {
		if d.Directive == "http" {
			http = d.Block
		}
	}
	ups := map[string]upstream{}
	type scope struct{ server, location crossplane.Directives }
	blocks := map[string]scope{} // server_name \x00 location args
	for _, d := range http {
		switch d.Directive {
		case "upstream":
			var u upstream
			for _, s := range d.Block {
				switch s.Directive {
				case "server":
					u.entries++
				case "keepalive":
					u.keepalive = true
				}
			}
			ups[d.Args[0]] = u
		case "server":
			names, _ := nginx.Lookup([]crossplane.Directives{d.Block}, "server_name")
			for _, l := range d.Block {
				if l.Directive == "location" {
					for _, n := range names {
						blocks[n+"\x00"+strings.Join(l.Args, " ")] = scope{nginx.Leaves(d.Block), l.Block}
					}
				}
			}
		}
	}
	out := make([]map[translate.MethodClass]translate.Behaviour, len(locs))
	for i, loc := range locs {
		name := loc.Host
		if name == "" {
			name = "_"
		}
		if loc.Upstream == "" {
			continue
		}
		for j, args := range loc.Blocks {
			sc, ok := blocks[name+"\x00"+strings.Join(args, " ")]
			if !ok {
				return nil, fmt.Errorf("%s: no location %q in server %s", loc.Path, strings.Join(args, " "), name)
			}
			bh, err := readLocation([]crossplane.Directives{sc.location, sc.server, nginx.Leaves(http)}, ups)
			if err != nil {
				return nil, fmt.Errorf("Ingress %s, %s: %w", loc.Ingress, loc.Path, err)
			}
			if j == 0 {
				out[i] = bh
			} else if !reflect.DeepEqual(out[i], bh) {
				return nil, fmt.Errorf("Ingress %s, %s: its locations behave differently", loc.Ingress, loc.Path)
			}
		}
	}
	return out, nil
}

// readLocation derives what one location does, as ingress-nginx runs it:
// as plain nginx (proxy_next_upstream's conditions, non_idempotent, the
// idle timers, proxy_next_upstream_timeout), except that the tries are
// proxy_next_upstream_tries whatever the number of endpoints (its Lua
// balancer asks for one more try each time, and tries 0 never stops).
func readLocation(scopes []crossplane.Directives, ups map[string]upstream) (map[translate.MethodClass]translate.Behaviour, error) {
	out := map[translate.MethodClass]translate.Behaviour{}
	pass, ok := nginx.Lookup(scopes[:1], "proxy_pass")
	if !ok || len(pass) != 1 || !strings.HasPrefix(pass[0], "http://") {
		return nil, fmt.Errorf("proxy_pass %q: want http://UPSTREAM", pass)
	}
	up, ok := ups[strings.TrimPrefix(pass[0], "http://")]
	if !ok {
		return nil, fmt.Errorf("proxy_pass %s names no upstream", pass[0])
	}
	next, ok := nginx.Lookup(scopes, "proxy_next_upstream")
	if !ok {
		next = []string{"error", "timeout"}
	}
	tries := 0
	if args, ok := nginx.Lookup(scopes, "proxy_next_upstream_tries"); ok {
		n, err := strconv.Atoi(strings.Join(args, " "))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("proxy_next_upstream_tries %q", args)
		}
		tries = n
	}
	// The file stands in for the Lua balancer with one upstream entry per
	// try: fewer entries would make fewer tries than ingress-nginx.
	want := min(tries, MaxEntries)
	if tries == 0 {
		want = CappedTries
	}
	if up.entries < want {
		return nil, fmt.Errorf("upstream %s lists %d entries for %d tries: plain nginx would stop before ingress-nginx's balancer", pass[0], up.entries, want)
	}
	retries := tries - 1
	source := fmt.Sprintf("proxy_next_upstream_tries %d, whatever the number of endpoints: ingress-nginx's Lua balancer asks for one more try each time", tries)
	if tries == 0 {
		retries = UnboundedRetries
		source = "proxy_next_upstream_tries 0: ingress-nginx's Lua balancer asks for one more try each time, without end"
	}
	if slices.Contains(next, "off") {
		retries, source = 0, "proxy_next_upstream off"
	}
	var budget time.Duration
	if args, ok := nginx.Lookup(scopes, "proxy_next_upstream_timeout"); ok && len(args) == 1 {
		d, err := nginx.ParseTime(args[0])
		if err != nil {
			return nil, fmt.Errorf("proxy_next_upstream_timeout %q: %w", args[0], err)
		}
		budget = d
	}
	// A try whose backend accepted the connection and says nothing is
	// cut by proxy_read_timeout (proxy_connect_timeout only bounds the
	// connection, proxy_send_timeout the writes of the request).
	try := 60 * time.Second
	if args, ok := nginx.Lookup(scopes, "proxy_read_timeout"); ok && len(args) == 1 {
		var err error
		if try, err = nginx.ParseTime(args[0]); err != nil {
			return nil, fmt.Errorf("proxy_read_timeout %q: %w", args[0], err)
		}
	}
	maxBody := int64(-1)
	if args, ok := nginx.Lookup(scopes, "proxy_request_buffering"); ok && len(args) == 1 && args[0] == "off" {
		maxBody = 0
	}
	codes, conn, timeoutRetried, err := nginx.NextUpstream(next)
	if err != nil {
		return nil, err
	}
	base := translate.Behaviour{
		Retries:        retries,
		ExtraRetries:   up.keepalive && retries > 0,
		Codes:          codes,
		ConnErrors:     conn,
		MaxRetriedBody: maxBody,
		TryTimeout:     translate.Timer{Kind: translate.TimerIdle, Value: try},
		TimeoutRetried: timeoutRetried,
		RequestTimeout: translate.Timer{Kind: translate.TimerNone},
		TimeoutStatus:  504,
		RetryBudget:    budget,
		RetriesSource:  source,
	}
	if retries == 0 {
		base.Codes, base.ConnErrors, base.TimeoutRetried, base.RetryBudget = nil, translate.ConnRetryNone, false, 0
	}
	for _, c := range []translate.MethodClass{translate.Idempotent, translate.NonIdempotent} {
		bh := base
		if c == translate.NonIdempotent && !slices.Contains(next, "non_idempotent") {
			// A POST, PATCH or LOCK already sent is not retried.
			bh.Codes, bh.TimeoutRetried = nil, false
			if retries > 0 && slices.Contains(next, "error") {
				bh.ConnErrors = translate.ConnRetryUnsent
			}
		}
		out[c] = bh
	}
	return out, nil
}

// upstream is what is read of an upstream block: its server entries and
// whether it caches connections (then nginx re-sends a request whose
// cached connection failed without counting a try).
type upstream struct {
	entries   int
	keepalive bool
}
