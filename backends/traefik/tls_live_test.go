package traefik

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// TestTraefik36HTTPSListenersLive runs the real Traefik v3.6.12 on the
// configuration of tlsManifest (--listen-https 127.0.0.1:PORT, certificates
// made at test time) and checks with a Go TLS client: the certificate
// presented per SNI name (exact, wildcard, none) is the one the finding
// and the judge say, also where it differs from the Gateway API's; the
// request reaches the backend over HTTPS, retried onto the live endpoint
// when the first is refused; a redirect without scheme keeps https and
// the port; plain HTTP on the TLS port is not served; the HTTP listener
// still serves plain HTTP.
func TestTraefik36HTTPSListenersLive(t *testing.T) {
	proxytest.Require(t, "traefik")
	for i, tc := range tlsCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir, pool, leaves := testCA(t, tc.sans)
			live := flaky.New(t, "live")
			dead := proxytest.FreePort(t)
			httpPort, httpsPort := proxytest.FreePort(t), proxytest.FreePort(t)
			m := tlsModel(t, dir, httpPort, httpsPort,
				translate.Endpoint{Host: "127.0.0.1", Port: dead}, translate.Endpoint{Host: "127.0.0.1", Port: live.Port()})
			out := generate(t, m, translate.Options{Version: v36})
			static, dyn := files(t, out)
			httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))
			httpsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(httpsPort))
			cfg := proxytest.WriteTraefikConfig(t, static, dyn, map[string]string{
				"http-" + strconv.Itoa(httpPort): httpAddr, "https-" + strconv.Itoa(httpsPort): httpsAddr})
			p := proxytest.StartTraefik(t, cfg.StaticPath, cfg.API)
			t.Cleanup(p.Stop)
			if err := cfg.WaitLoaded(p, 10*time.Second); err != nil {
				t.Fatalf("Traefik did not load: %v\n%s", err, p.Output())
			}
			obs, err := observeTLS(out.Files, m.CertSource)
			if err != nil {
				t.Fatal(err)
			}

			// The certificate per SNI name.
			for sni, secret := range tc.present {
				conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", httpsAddr,
					&tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
				if err != nil {
					t.Fatalf("SNI %q: %v", sni, err)
				}
				leaf := conn.ConnectionState().PeerCertificates[0]
				conn.Close()
				if !bytes.Equal(leaf.Raw, leaves[secret].Raw) {
					t.Errorf("SNI %q: Traefik presents %q, want %s", sni, leaf.Subject.CommonName, secret)
				}
				// The judge's reading of the files says the same.
				probe := strings.ToLower(sni) // Traefik lowercases the SNI name; the judge probes with Gateway hostnames, lowercase
				if probe == "" {
					probe = "127.0.0.1"
				}
				if got, _ := obs.store.pick(probe); got == nil || got.CertFile != dir+"/ns/"+secret+"/tls.crt" {
					t.Errorf("SNI %q: the judge reads %v, Traefik presents %s", sni, got, secret)
				}
			}
			if i > 0 {
				return
			}

			// HTTPS requests verified against the test CA reach the
			// backend; the refused endpoint is retried onto the live one.
			client := func(sni string) *http.Client {
				return &http.Client{Timeout: 5 * time.Second,
					CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
					Transport:     &http.Transport{TLSClientConfig: &tls.Config{ServerName: sni, RootCAs: pool}}}
			}
			do := func(c *http.Client, url, host, id string) (*http.Response, error) {
				req, err := http.NewRequest("GET", url, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = host
				req.Header.Set(flaky.RequestHeader, id)
				resp, err := c.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return resp, err
			}
			for j, host := range []string{"a.example.com", "b.example.com", "a.example.com", "b.example.com"} {
				id := fmt.Sprintf("tls %d", j)
				resp, err := do(client(host), "https://"+httpsAddr+"/tls/x", host, id)
				if err != nil {
					t.Fatalf("HTTPS %s: %v", host, err)
				}
				if resp.StatusCode != 200 || resp.TLS == nil || !bytes.Equal(resp.TLS.PeerCertificates[0].Raw, leaves[tc.present[host]].Raw) {
					t.Errorf("HTTPS %s: status %d", host, resp.StatusCode)
				}
			}
			if n := len(live.Hits("/tls/x")); n != 4 {
				t.Errorf("the live endpoint got %d of 4 HTTPS requests (the refused one must be retried onto it)", n)
			}
			for _, h := range live.Hits("/tls/x") {
				if h.Host != "a.example.com" && h.Host != "b.example.com" {
					t.Errorf("backend got Host %q", h.Host)
				}
			}
			// HTTP/2 by ALPN, as the finding says: offered, and a request
			// over it is served and retried like one over HTTP/1.1.
			h2 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
				TLSClientConfig: &tls.Config{ServerName: "a.example.com", RootCAs: pool}}}
			before := len(live.Hits("/tls/x"))
			resp, err := do(h2, "https://"+httpsAddr+"/tls/x", "a.example.com", "h2")
			if err != nil {
				t.Fatalf("HTTP/2: %v", err)
			}
			if resp.StatusCode != 200 || resp.ProtoMajor != 2 || resp.TLS.NegotiatedProtocol != "h2" || len(live.Hits("/tls/x")) != before+1 {
				t.Errorf("HTTP/2: %d %s (ALPN %q), live endpoint hits %d, want 200 HTTP/2.0 h2 and one more hit", resp.StatusCode, resp.Proto, resp.TLS.NegotiatedProtocol, len(live.Hits("/tls/x"))-before)
			}
			// A Host of another hostname of the entry point than the SNI
			// name is routed by the Host (no 421), as the finding says.
			resp, err = do(client("a.example.com"), "https://"+httpsAddr+"/tls/cross", "b.example.com", "cross")
			if err != nil {
				t.Fatalf("SNI a, Host b: %v", err)
			}
			if hits := live.Hits("/tls/cross"); resp.StatusCode != 200 || len(hits) != 1 || hits[0].Host != "b.example.com" {
				t.Errorf("SNI a.example.com, Host b.example.com: %d, hits %v, want 200 routed by Host", resp.StatusCode, hits)
			}

			// The backendRequest timeout (responseHeaderTimeout) holds on
			// HTTPS as on HTTP: 504 after about 300ms.
			live.Handle("/slow/x", flaky.DelayAlways(3*time.Second))
			start := time.Now()
			resp, err = do(client("b.example.com"), "https://"+httpsAddr+"/slow/x", "b.example.com", "slow")
			if err != nil {
				t.Fatalf("HTTPS timeout: %v", err)
			}
			if took := time.Since(start); resp.StatusCode != 504 || took > 2*time.Second {
				t.Errorf("HTTPS timeout: %d after %v, want 504 after about 300ms", resp.StatusCode, took)
			}

			// A certificate that does not name the SNI host fails
			// verification: the client's check is real.
			if _, err := do(client("nowhere.invalid"), "https://"+httpsAddr+"/tls/y", "nowhere.invalid", "bad"); err == nil {
				t.Errorf("SNI nowhere.invalid verified against the test CA")
			}

			// A redirect without scheme keeps https and the listener port.
			resp, err = do(client("b.example.com"), "https://"+httpsAddr+"/redir/p?q=1", "b.example.com", "redir")
			if err != nil {
				t.Fatal(err)
			}
			if want := "https://b.example.com:" + strconv.Itoa(httpsPort) + "/redir/p?q=1"; resp.StatusCode != 302 || resp.Header.Get("Location") != want {
				t.Errorf("HTTPS redirect: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}
			resp, err = do(client(""), "http://"+httpAddr+"/redir/p", "b.example.com", "redir plain")
			if err != nil {
				t.Fatal(err)
			}
			if want := "http://b.example.com:" + strconv.Itoa(httpPort) + "/redir/p"; resp.StatusCode != 302 || resp.Header.Get("Location") != want {
				t.Errorf("HTTP redirect: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}

			// Plain HTTP on the TLS port is not served; the HTTP listener
			// serves plain HTTP.
			if resp, err := do(client(""), "http://"+httpsAddr+"/tls/plain", "a.example.com", "plain on tls"); err == nil && resp.StatusCode == 200 {
				t.Errorf("plain HTTP on the TLS entry point answered 200")
			}
			if n := len(live.Hits("/tls/plain")); n != 0 {
				t.Errorf("plain HTTP on the TLS entry point reached the backend %d times", n)
			}
			if resp, err := do(client(""), "http://"+httpAddr+"/tls/http", "a.example.com", "http"); err != nil || resp.StatusCode != 200 {
				t.Errorf("HTTP listener: %v %v", resp, err)
			}
		})
	}
}

// TestTraefik36SNICheckedLive runs the real Traefik v3.6.12 on one HTTPS
// listener (singleHTTPSManifest) per certificate case and checks the
// listener.https claim against what a TLS client gets: an SNI name the
// listener serves completes the handshake with the listener's
// certificate and its request reaches the rule; an SNI name it does not
// serve (another name, or none) is refused unless the claim's
// SNINotChecked caveat admits it ("any", or the names it lists), and then
// its request with the listener's Host reaches the rule; a name of
// SNIRefused is refused. An honoured claim admits no other name.
func TestTraefik36SNICheckedLive(t *testing.T) {
	proxytest.Require(t, "traefik")
	for _, tc := range []struct {
		name, hostname string
		names          []string
		// served are SNI names the listener serves with cert-l.
		served []string
		// foreign are SNI names it does not serve ("" for none).
		foreign []string
	}{
		{"exact name", "a.example.com", []string{"a.example.com"}, []string{"a.example.com", "A.Example.COM"}, []string{"other.test", "b.example.com", ""}},
		{"wildcard", "*.example.com", []string{"*.example.com"}, []string{"x.example.com"}, []string{"other.test", "example.com", "", "x.y.example.com"}},
		{"certificate names another host", "a.example.com", []string{"a.example.com", "b.example.com"}, []string{"a.example.com"}, []string{"b.example.com", "other.test", ""}},
		{"exact name not in the certificate", "a.example.com", []string{"b.example.com"}, nil, []string{"other.test", ""}},
		{"catch-all", "", []string{"fallback.test"}, []string{"fallback.test", "other.test", ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, leaves := testCA(t, map[string][]string{"cert-l": tc.names})
			host := ""
			if tc.hostname != "" {
				host = fmt.Sprintf("hostname: %q,", tc.hostname)
			}
			in, err := input.Load([]string{"-"}, strings.NewReader(strings.Replace(singleHTTPSManifest, "HOSTNAME", host, 1)), translate.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			live := flaky.New(t, "live")
			httpPort, httpsPort := proxytest.FreePort(t), proxytest.FreePort(t)
			m, err := resolve.Build(in, translate.ResolveOptions{TLSDir: dir,
				Listen:    &translate.Bind{Address: "127.0.0.1", Port: httpPort},
				ListenTLS: &translate.Bind{Address: "127.0.0.1", Port: httpsPort},
				Endpoints: []translate.EndpointOverride{{Service: "svc", Port: 80, Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: live.Port()}}}}})
			if err != nil {
				t.Fatal(err)
			}
			out := generate(t, m, translate.Options{Version: v36})
			var claim *translate.Finding
			for i := range out.Findings {
				if out.Findings[i].Feature == translate.FeatureListenerHTTPS {
					claim = &out.Findings[i]
				}
			}
			if claim == nil {
				t.Fatal("no listener.https finding")
			}
			admitted, refused := map[string]bool{}, map[string]bool{}
			anyName := false
			for _, c := range claim.Caveats {
				for _, n := range strings.Split(c.Params["sni"], ", ") {
					switch c.Reason {
					case report.CaveatSNINotChecked:
						admitted[n], anyName = true, anyName || n == sniAny
					case report.CaveatSNIRefused:
						refused[n] = true
					}
				}
			}
			static, dyn := files(t, out)
			httpsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(httpsPort))
			cfg := proxytest.WriteTraefikConfig(t, static, dyn, map[string]string{
				"http-" + strconv.Itoa(httpPort):   net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
				"https-" + strconv.Itoa(httpsPort): httpsAddr})
			p := proxytest.StartTraefik(t, cfg.StaticPath, cfg.API)
			t.Cleanup(p.Stop)
			if err := cfg.WaitLoaded(p, 10*time.Second); err != nil {
				t.Fatalf("Traefik did not load: %v\n%s", err, p.Output())
			}
			reqHost := strings.Replace(tc.hostname, "*", "x", 1)
			if reqHost == "" {
				reqHost = "fallback.test"
			}
			// try hands sni to Traefik and, when the handshake completes,
			// sends GET /sni/N with the listener's Host; it returns the
			// certificate presented and the status (0: refused).
			n := 0
			try := func(sni string) (leaf []byte, status int) {
				n++
				tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: sni, InsecureSkipVerify: true}}
				defer tr.CloseIdleConnections()
				c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
				req, err := http.NewRequest("GET", "https://"+httpsAddr+"/sni/"+strconv.Itoa(n), nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = reqHost
				resp, err := c.Do(req)
				if err != nil {
					return nil, 0
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.TLS.PeerCertificates[0].Raw, resp.StatusCode
			}
			for _, sni := range tc.served {
				leaf, status := try(sni)
				if status != 200 || !bytes.Equal(leaf, leaves["cert-l"].Raw) || len(live.Hits("/sni/"+strconv.Itoa(n))) != 1 {
					t.Errorf("SNI %q (served by the listener): status %d, cert-l %v; want 200 with cert-l", sni, status, bytes.Equal(leaf, leaves["cert-l"].Raw))
				}
			}
			for _, sni := range tc.foreign {
				_, status := try(sni)
				reached := len(live.Hits("/sni/"+strconv.Itoa(n))) == 1
				switch want := (anyName || admitted[strings.ToLower(sni)]) && !refused[wildcardOf(sni)]; {
				case want && (status != 200 || !reached):
					t.Errorf("SNI %q: status %d, reached %v; the claim's caveats %v admit it to the rule", sni, status, reached, claim.Caveats)
				case !want && (status != 0 || reached):
					t.Errorf("SNI %q (not the listener's): status %d, reached the rule %v; the claim (%s, %v) says the handshake is refused", sni, status, reached, claim.Status, claim.Caveats)
				}
			}
		})
	}
}

// wildcardOf writes name's labels before its last two as "*" (x.y.example.com
// is *.*.example.com), SNIRefused's spelling.
func wildcardOf(name string) string {
	l := strings.Split(name, ".")
	for i := 0; i < len(l)-2; i++ {
		l[i] = "*"
	}
	return strings.Join(l, ".")
}
