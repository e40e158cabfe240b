package resolve

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

var update = flag.Bool("update", false, "rewrite the model goldens in testdata/model (TestModelGolden)")

// modelGoldenDir holds the model's goldens: X.in.yaml -> X.ir.yaml, and
// cli/CASE.ir.yaml for the input of each CLI golden testdata/CASE/.
const modelGoldenDir = "../testdata/model"

// modelCase is one input of TestModelGolden.
type modelCase struct {
	name   string
	paths  []string
	opts   translate.ResolveOptions
	tls    bool   // make a --tls-dir with every Secret the Gateways name
	source string // what the golden's header names
	golden string
}

// TestModelGolden builds each testdata/model/X.in.yaml as the CLI does
// (Load, then Build) and compares the Model's IR, written as YAML, with
// X.ir.yaml. The flags of a case are the "# gwretry: FLAGS" lines of its
// input (--endpoint, --listen, --listen-https, --channel,
// --assume-reference-grants, and --tls-dir without a value: a directory
// the test makes with the certificate of every Secret the Gateways name).
// It does the same for the input and flags of every CLI golden
// testdata/CASE/ (input.yaml and args, as cmd/gwretry's TestGolden reads
// them), into testdata/model/cli/CASE.ir.yaml, once per distinct input.
// -update rewrites the goldens and removes those of cases that are gone.
func TestModelGolden(t *testing.T) {
	cases := slices.Concat(ownModelCases(t), cliModelCases(t))
	wanted := map[string]bool{}
	for _, c := range cases {
		wanted[filepath.Clean(c.golden)] = true
		t.Run(c.name, func(t *testing.T) { runModelGolden(t, c) })
	}
	goldens, _ := filepath.Glob(filepath.Join(modelGoldenDir, "*.ir.yaml"))
	cli, _ := filepath.Glob(filepath.Join(modelGoldenDir, "cli", "*.ir.yaml"))
	for _, g := range append(goldens, cli...) {
		switch {
		case wanted[filepath.Clean(g)]:
		case *update:
			if err := os.Remove(g); err != nil {
				t.Error(err)
			}
		default:
			t.Errorf("%s has no input any more (run `go test ./resolve -run TestModelGolden -update` to remove it)", g)
		}
	}
}

func ownModelCases(t *testing.T) []modelCase {
	ins, err := filepath.Glob(filepath.Join(modelGoldenDir, "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) == 0 {
		t.Fatalf("no %s/*.in.yaml", modelGoldenDir)
	}
	var out []modelCase
	for _, in := range ins {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "# gwretry:"); ok {
				args = append(args, strings.Fields(rest)...)
			}
		}
		c := modelCase{name: strings.TrimSuffix(filepath.Base(in), ".in.yaml"), paths: []string{in}, source: filepath.Base(in)}
		if extra := modelFlags(t, &c, args); len(extra) > 0 {
			t.Fatalf("%s: %v are not flags (the input is the file itself)", in, extra)
		}
		c.golden = strings.TrimSuffix(in, ".in.yaml") + ".ir.yaml"
		out = append(out, c)
	}
	return out
}

// cliModelCases are the inputs of the CLI goldens, read as
// cmd/gwretry's goldenArgs reads them; a case whose paths and
// model-changing flags equal an earlier one's is left out.
func cliModelCases(t *testing.T) []modelCase {
	dirs := map[string]bool{}
	for _, pattern := range []string{"../testdata/*/args", "../testdata/*/input.yaml"} {
		ms, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			dirs[filepath.Dir(m)] = true
		}
	}
	var out []modelCase
	seen := map[string]string{}
	for _, dir := range slices.Sorted(func(yield func(string) bool) {
		for d := range dirs {
			if !yield(d) {
				return
			}
		}
	}) {
		name := filepath.Base(dir)
		c := modelCase{name: "cli/" + name, source: "testdata/" + name + "/"}
		var args []string
		if data, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				line = strings.TrimSpace(line)
				switch {
				case line == "" || strings.HasPrefix(line, "#"):
				case strings.HasPrefix(line, "-"):
					args = append(args, strings.Fields(line)...)
				default:
					c.paths = append(c.paths, filepath.Join(dir, line))
				}
			}
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "input.yaml")); err == nil {
			c.paths = append(c.paths, filepath.Join(dir, "input.yaml"))
		}
		if extra := modelFlags(t, &c, args); len(extra) > 0 {
			t.Fatalf("%s/args: stray arguments %v", dir, extra)
		}
		key, err := json.Marshal(struct {
			Paths []string
			Opts  translate.ResolveOptions
			TLS   bool
		}{c.paths, c.opts, c.tls})
		if err != nil {
			t.Fatal(err)
		}
		if first, ok := seen[string(key)]; ok {
			t.Logf("testdata/%s: same input and model flags as testdata/%s", name, first)
			continue
		}
		seen[string(key)] = name
		c.golden = filepath.Join(modelGoldenDir, "cli", name+".ir.yaml")
		out = append(out, c)
	}
	return out
}

// modelFlags applies the flags of args that change the Model to c and
// returns the arguments that are not flags. Flags that change only what
// a target writes are skipped; any other flag fails the test, so that a
// new one is classified here.
func modelFlags(t *testing.T, c *modelCase, args []string) (rest []string) {
	t.Helper()
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		next := func() string {
			if hasValue {
				return value
			}
			i++
			if i >= len(args) {
				t.Fatalf("%s needs a value", name)
			}
			return args[i]
		}
		var err error
		switch name {
		case "--endpoint":
			var e translate.EndpointOverride
			e, err = translate.ParseEndpoint(next())
			c.opts.Endpoints = append(c.opts.Endpoints, e)
		case "--listen":
			c.opts.Listen, err = translate.ParseListen(next())
		case "--listen-https":
			c.opts.ListenTLS, err = translate.ParseListen(next())
		case "--channel":
			c.opts.Channel, err = translate.ParseChannel(next())
		case "--assume-reference-grants":
			c.opts.AssumeReferenceGrants = true
		case "--tls-dir":
			if hasValue || i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				t.Fatalf("--tls-dir takes no value here: the test makes the directory")
			}
			c.tls = true
		case "--target", "--grpc-retry-throttling":
			next() // what a target writes, not the model
		case "--retry-non-idempotent":
		default:
			if strings.HasPrefix(name, "-") {
				t.Fatalf("flag %s: say in modelFlags whether it changes the model", name)
			}
			rest = append(rest, args[i])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return rest
}

func runModelGolden(t *testing.T, c modelCase) {
	in, err := input.Load(c.paths, nil, input.DefaultLimits())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.tls {
		c.opts.TLSDir = gatewaySecretsDir(t, in)
	}
	m, err := Build(in, c.opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ir := m.IR()
	body, err := ir.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(ir); err != nil {
		t.Fatalf("the IR does not marshal to JSON: %v", err)
	}
	got := "# The model (translate.IR) of " + c.source + ", by TestModelGolden:\n" +
		"# go test ./resolve -run TestModelGolden -update rewrites it.\n" + string(body)
	if *update {
		if err := os.MkdirAll(filepath.Dir(c.golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(c.golden)
	if err != nil {
		t.Fatalf("%v (run `go test ./resolve -run TestModelGolden -update`)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("the model differs from %s (run `go test ./resolve -run TestModelGolden -update` and review) (-want +got):\n%s", c.golden, diff)
	}
}

// gatewaySecretsDir makes a --tls-dir with a certificate and key for
// every Secret an HTTPS listener of the input names.
func gatewaySecretsDir(t *testing.T, in *translate.Input) string {
	t.Helper()
	dir := t.TempDir()
	for _, g := range in.Gateways {
		for _, l := range g.Obj.Spec.Listeners {
			if l.Protocol != gwv1.HTTPSProtocolType || l.TLS == nil {
				continue
			}
			for _, ref := range l.TLS.CertificateRefs {
				ns := nsOrDefault(g.Obj.Namespace)
				if ref.Namespace != nil {
					ns = string(*ref.Namespace)
				}
				d := filepath.Join(dir, ns, string(ref.Name))
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"tls.crt", "tls.key"} {
					if err := os.WriteFile(filepath.Join(d, f), []byte("pem"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return dir
}
