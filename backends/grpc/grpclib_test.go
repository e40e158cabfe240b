package grpc

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	ggrpc "google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
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
