package grpc

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	ggrpc "google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestGRPCGoParses has grpc-go 1.84's own service config parser read the
// output, and checks what it makes of each name.
func TestGRPCGoParses(t *testing.T) {
	_, data := run(t, New())
	r := manual.NewBuilderWithScheme("gwretry")
	cc, err := ggrpc.NewClient(r.Scheme()+":///x", ggrpc.WithResolvers(r),
		ggrpc.WithTransportCredentials(insecure.NewCredentials()), ggrpc.WithDefaultServiceConfig(string(data)))
	if err != nil {
		t.Fatalf("grpc-go refuses the service config: %v", err)
	}
	defer cc.Close()
	cc.Connect() // builds the resolver, whose ClientConn parses service configs
	res := r.CC().ParseServiceConfig(string(data))
	if res.Err != nil {
		t.Fatalf("grpc-go refuses the service config: %v", res.Err)
	}
	sc, ok := res.Config.(*ggrpc.ServiceConfig)
	if !ok {
		t.Fatalf("parsed config is a %T", res.Config)
	}
	cases := []struct {
		path        string
		maxAttempts int
		timeout     time.Duration
		initial     time.Duration
		codes       []codes.Code
	}{
		{"/users.v1.Users/GetUser", 4, 2 * time.Second, 125 * time.Millisecond, []codes.Code{codes.Unavailable}},
		{"/users.v1.Users/", 2, 0, 25 * time.Millisecond, []codes.Code{codes.Unknown, codes.Unavailable}},
		{"/orders.Orders/Get", 5, 0, 25 * time.Millisecond, []codes.Code{codes.Unknown, codes.Unimplemented, codes.Internal, codes.Unavailable}},
		{"", 0, 1500 * time.Millisecond, 0, nil},
	}
	for _, c := range cases {
		mc, ok := sc.Methods[c.path]
		if !ok {
			t.Errorf("%q: grpc-go has no method config", c.path)
			continue
		}
		if mc.Timeout != nil && *mc.Timeout != c.timeout || mc.Timeout == nil && c.timeout != 0 {
			t.Errorf("%q: timeout %v, want %v", c.path, mc.Timeout, c.timeout)
		}
		rp := mc.RetryPolicy
		if c.maxAttempts == 0 {
			if rp != nil {
				t.Errorf("%q: retry policy %+v, want none", c.path, rp)
			}
			continue
		}
		if rp == nil {
			t.Errorf("%q: no retry policy", c.path)
			continue
		}
		if rp.MaxAttempts != c.maxAttempts || rp.InitialBackoff != c.initial || rp.MaxBackoff != 10*c.initial || rp.BackoffMultiplier != 2 {
			t.Errorf("%q: retry policy %+v", c.path, rp)
		}
		if len(rp.RetryableStatusCodes) != len(c.codes) {
			t.Errorf("%q: codes %v, want %v", c.path, rp.RetryableStatusCodes, c.codes)
		}
		for _, code := range c.codes {
			if !rp.RetryableStatusCodes[code] {
				t.Errorf("%q: %v not retryable", c.path, code)
			}
		}
	}
}

// TestGRPCGoRetries runs real calls through grpc-go with the generated
// service config against a loopback server that fails every call with
// UNAVAILABLE, and counts the tries per method.
func TestGRPCGoRetries(t *testing.T) {
	_, data := run(t, New())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int32
	srv := ggrpc.NewServer(ggrpc.UnknownServiceHandler(func(_ any, ss ggrpc.ServerStream) error {
		// Read the request before failing, as a real server does: a
		// status sent while the client is still writing its message races
		// the client's send, which once surfaced as a bare EOF under load.
		var req emptypb.Empty
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		tries.Add(1)
		return status.Error(codes.Unavailable, "try again")
	}))
	go srv.Serve(lis)
	defer srv.Stop()
	cc, err := ggrpc.NewClient("passthrough:///"+lis.Addr().String(),
		ggrpc.WithTransportCredentials(insecure.NewCredentials()), ggrpc.WithDefaultServiceConfig(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cases := []struct {
		method string
		tries  int32
	}{
		{"/users.v1.Users/GetUser", 4},   // attempts 3
		{"/users.v1.Users/ListUsers", 2}, // PathPrefix /users.v1.Users, attempts 1
		{"/orders.Orders/Get", 5},        // attempts 9, capped
		{"/other.S/M", 1},                // PathPrefix /, attempts 0
	}
	for _, c := range cases {
		tries.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cc.Invoke(ctx, c.method, &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want UNAVAILABLE", c.method, err)
		}
		if got := tries.Load(); got != c.tries {
			t.Errorf("%s: %d tries, want %d", c.method, got, c.tries)
		}
	}
}

// dialLoopback returns a grpc-go channel with service config sc to addr.
func dialLoopback(t *testing.T, addr string, sc []byte) *ggrpc.ClientConn {
	t.Helper()
	cc, err := ggrpc.NewClient("passthrough:///"+addr,
		ggrpc.WithTransportCredentials(insecure.NewCredentials()), ggrpc.WithDefaultServiceConfig(string(sc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// finding returns the finding of feature f of rule index of route.
func finding(t *testing.T, fs []translate.Finding, route string, index int, f translate.Feature) translate.Finding {
	t.Helper()
	for _, x := range fs {
		if x.Route == route && x.Rule == index && x.Feature == f {
			return x
		}
	}
	t.Fatalf("no %s finding for %s rule %d", f, route, index)
	return translate.Finding{}
}

// TestGRPCGoHostnamesShadow: a rule served only for one hostname holds a
// method name in a service config that has no hostnames, so a catch-all
// rule's calls to that method, on any channel, get the narrower rule's
// retries. The catch-all rule's "retries nothing" was once honoured.
func TestGRPCGoHostnamesShadow(t *testing.T) {
	m := modelYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: a, namespace: default}
spec:
  hostnames: [a.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /s.S/M}}]
    retry: {attempts: 3, codes: [503]}
    backendRefs: [{name: users, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b, namespace: default}
spec:
  rules:
  - retry: {attempts: 0}
    timeouts: {request: 0s}
    backendRefs: [{name: users, port: 8080}]
`)
	fs, sc := runModel(t, m)
	for _, f := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRequestTimeout} {
		got := finding(t, fs, "default/b", 0, f)
		if i := slices.IndexFunc(got.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatCallsTakenByOtherRule }); i < 0 || got.Caveats[i].Params["names"] != "s.S/M" {
			t.Errorf("%s of the catch-all rule: %s %+v", f, got.Status, got.Caveats)
		}
	}
	// What grpc-go does on a channel whose authority is not a.example.com.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int32
	srv := ggrpc.NewServer(ggrpc.UnknownServiceHandler(func(_ any, ss ggrpc.ServerStream) error {
		var req emptypb.Empty
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		tries.Add(1)
		return status.Error(codes.Unavailable, "try again")
	}))
	go srv.Serve(lis)
	defer srv.Stop()
	cc := dialLoopback(t, lis.Addr().String(), sc)
	for method, want := range map[string]int32{"/s.S/M": 4, "/s.S/Other": 1} {
		tries.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		if status.Code(err) != codes.Unavailable || tries.Load() != want {
			t.Errorf("%s: %v after %d tries, want UNAVAILABLE after %d", method, err, tries.Load(), want)
		}
	}
}

// TestGRPCGoHTTPAnswers runs grpc-go with the generated service config
// against a loopback HTTP/2 server that answers as a proxy does, without
// gRPC: an HTTP status with a body (mapped to a gRPC status and retried
// by it), or a stream reset (INTERNAL, not UNAVAILABLE: not retried
// although retry.connectionErrors holds UNAVAILABLE).
func TestGRPCGoHTTPAnswers(t *testing.T) {
	m := modelYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: default}
spec:
  rules:
  - matches: [{path: {type: PathPrefix, value: /h.H}}]
    retry: {attempts: 2, codes: [503]}
    backendRefs: [{name: users, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /u.U}}]
    retry: {attempts: 2, codes: [500]}
    backendRefs: [{name: users, port: 8080}]
`)
	fs, sc := runModel(t, m)
	if f := finding(t, fs, "default/api", 0, translate.FeatureRetryConnectionErrors); !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatResetStreamsNotRetried }) {
		t.Errorf("connectionErrors does not say a reset stream is not retried: %+v", f.Caveats)
	}
	var tries atomic.Int32
	mux := http.NewServeMux()
	answer := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			tries.Add(1)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(code)
			io.WriteString(w, "upstream says no\n")
		}
	}
	mux.HandleFunc("/h.H/S503", answer(503))
	mux.HandleFunc("/h.H/S500", answer(500))
	mux.HandleFunc("/h.H/S404", answer(404))
	mux.HandleFunc("/u.U/S500", answer(500))
	mux.HandleFunc("/h.H/GRPC503", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tries.Add(1)
		w.Header().Set("Content-Type", "application/grpc") // but no grpc-status
		w.WriteHeader(503)
	})
	mux.HandleFunc("/h.H/Reset", func(_ http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tries.Add(1)
		panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: mux, Protocols: &protos, ErrorLog: log.New(io.Discard, "", 0)}
	go hs.Serve(lis)
	defer hs.Close()
	cc := dialLoopback(t, lis.Addr().String(), sc)
	cases := []struct {
		method string
		code   codes.Code
		tries  int32
	}{
		{"/h.H/S503", codes.Unavailable, 3},
		{"/h.H/S500", codes.Unknown, 1},
		{"/h.H/S404", codes.Unimplemented, 1},
		{"/u.U/S500", codes.Unknown, 3},
		{"/h.H/GRPC503", codes.Unknown, 1}, // a gRPC content-type: the HTTP status is not mapped
		{"/h.H/Reset", codes.Internal, 1},
	}
	for _, c := range cases {
		tries.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cc.Invoke(ctx, c.method, &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		if status.Code(err) != c.code || tries.Load() != c.tries {
			t.Errorf("%s: %v after %d tries, want %v after %d", c.method, err, tries.Load(), c.code, c.tries)
		}
	}
}

// TestGRPCGoRetryBuffer: grpc-go counts each request message with its
// 5-byte gRPC prefix against the 256 KiB retry buffer, and a call beyond
// it is committed and never retried, as the findings say.
func TestGRPCGoRetryBuffer(t *testing.T) {
	_, data := run(t, New())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int32
	srv := ggrpc.NewServer(ggrpc.MaxRecvMsgSize(1<<20), ggrpc.UnknownServiceHandler(func(_ any, ss ggrpc.ServerStream) error {
		var req wrapperspb.BytesValue
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		tries.Add(1)
		return status.Error(codes.Unavailable, "try again")
	}))
	go srv.Serve(lis)
	defer srv.Stop()
	cc := dialLoopback(t, lis.Addr().String(), data)
	for _, c := range []struct {
		value int // bytes in the BytesValue: 1 tag byte and 3 length bytes besides
		tries int32
	}{
		{retryBuffer - 5 - 4, 4}, // exactly 256 KiB with the prefix: retried (attempts 3)
		{retryBuffer - 5 - 3, 1}, // one byte more: committed
	} {
		req := wrapperspb.Bytes(make([]byte, c.value))
		if n := proto.Size(req) + 5; n != c.value+9 {
			t.Fatalf("message of %d bytes with prefix, not %d", n, c.value+9)
		}
		tries.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cc.Invoke(ctx, "/users.v1.Users/GetUser", req, &emptypb.Empty{})
		cancel()
		if status.Code(err) != codes.Unavailable || tries.Load() != c.tries {
			t.Errorf("%d bytes: %v after %d tries, want UNAVAILABLE after %d", c.value, err, tries.Load(), c.tries)
		}
	}
}
