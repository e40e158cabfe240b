package kubeapitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/config/crd"
)

// StatusError is the API server's refusal of a request: its Status object.
type StatusError struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Details struct {
		// Kind and Name are the object's resource ("httproutes") and
		// name, when the server gives them.
		Kind   string  `json:"kind"`
		Name   string  `json:"name"`
		Causes []Cause `json:"causes"`
	} `json:"details"`
}

// Cause is one problem a StatusError names: for an invalid object, the
// field path ("spec.rules[0].matches[0].path") and what is wrong with it.
type Cause struct {
	Type    string `json:"reason"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

// DryRunCreate asks the API server to create obj (YAML or JSON) without
// storing it (dryRun=All), with strict field validation as `kubectl apply
// --dry-run=server` does: nil when the server accepts it, a *StatusError
// when it refuses it, another error when the request itself failed. A
// namespaced object without a namespace goes to "default".
func (s *Server) DryRunCreate(obj []byte) error { return s.create(obj, true) }

// Create creates obj (YAML or JSON) as DryRunCreate does, storing it.
func (s *Server) Create(obj []byte) error { return s.create(obj, false) }

func (s *Server) create(obj []byte, dryRun bool) error {
	j, err := yaml.YAMLToJSON(obj)
	if err != nil {
		return err
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(j, &meta); err != nil {
		return err
	}
	r, err := s.resource(meta.APIVersion, meta.Kind)
	if err != nil {
		return err
	}
	path := r.prefix
	if r.namespaced {
		ns := meta.Metadata.Namespace
		if ns == "" {
			ns = "default"
		}
		path += "/namespaces/" + url.PathEscape(ns)
	}
	q := url.Values{"fieldValidation": {"Strict"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	_, err = s.do(http.MethodPost, path+"/"+r.name+"?"+q.Encode(), j)
	return err
}

// resource is where a kind is served.
type resource struct {
	prefix     string // "/apis/GROUP/VERSION" or "/api/v1"
	name       string // plural
	namespaced bool
}

// resource finds apiVersion's kind in the server's discovery; found kinds
// are remembered, missing ones are asked again next time (a CRD may have
// been installed since).
func (s *Server) resource(apiVersion, kind string) (resource, error) {
	key := apiVersion + "/" + kind
	s.mu.Lock()
	r, ok := s.resources[key]
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	prefix := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		prefix = "/api/" + apiVersion
	}
	body, err := s.do(http.MethodGet, prefix, nil)
	var he *httpError
	if errors.As(err, &he) && he.code == http.StatusNotFound {
		return resource{}, fmt.Errorf("%w %s in version %s (the version is not served)", ErrNoKind, kind, apiVersion)
	}
	if err != nil {
		return resource{}, fmt.Errorf("discovery of %s: %w", apiVersion, err)
	}
	var list struct {
		Resources []struct {
			Name       string `json:"name"`
			Namespaced bool   `json:"namespaced"`
			Kind       string `json:"kind"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return resource{}, fmt.Errorf("discovery of %s: %w", apiVersion, err)
	}
	for _, l := range list.Resources {
		if l.Kind == kind && !strings.Contains(l.Name, "/") {
			r := resource{prefix: prefix, name: l.Name, namespaced: l.Namespaced}
			s.mu.Lock()
			s.resources[key] = r
			s.mu.Unlock()
			return r, nil
		}
	}
	return resource{}, fmt.Errorf("%w %s in version %s", ErrNoKind, kind, apiVersion)
}

// ErrNoKind is in the error of a create whose apiVersion and kind the
// server does not serve: kubectl's "no matches for kind", a refusal of
// the object as much as a StatusError is.
var ErrNoKind = errors.New("no matches for kind")

// httpError is an answer that is neither 2xx nor a Status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// do sends a request as the cluster-admin and returns the body of a 2xx
// answer, else the *StatusError (or another error).
func (s *Server) do(method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return b, nil
	}
	st := &StatusError{}
	if json.Unmarshal(b, st) != nil || st.Code == 0 {
		return nil, &httpError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, b)}
	}
	return nil, st
}

// InstallCRDs creates the CustomResourceDefinitions of files (YAML, one
// or more documents; documents of other kinds are left out) and waits
// until each is Established and served. A CRD that exists already is
// replaced; to test another version of a CRD, prefer another server (the
// switch to a new schema is not observable).
func (s *Server) InstallCRDs(t testing.TB, files ...string) {
	t.Helper()
	var docs [][]byte
	for _, f := range files {
		d, err := crdDocuments(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d...)
	}
	if err := s.installCRDs(docs); err != nil {
		t.Fatal(err)
	}
}

// crdDocuments returns the CustomResourceDefinitions of file, as JSON.
func crdDocuments(file string) ([][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var tm struct{ Kind string }
		if err := json.Unmarshal(j, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if tm.Kind == "CustomResourceDefinition" {
			docs = append(docs, j)
		}
	}
}

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

type crdObject struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Group    string `json:"group"`
		Names    struct{ Kind string }
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
		} `json:"versions"`
	} `json:"spec"`
	Status struct {
		Conditions []struct{ Type, Status string } `json:"conditions"`
	} `json:"status"`
}

func (s *Server) installCRDs(docs [][]byte) error {
	var crds []crdObject
	for _, d := range docs {
		var c crdObject
		if err := json.Unmarshal(d, &c); err != nil {
			return err
		}
		_, err := s.do(http.MethodPost, crdPath, d)
		if st, ok := err.(*StatusError); ok && st.Reason == "AlreadyExists" {
			err = s.replaceCRD(c.Metadata.Name, d)
		}
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", c.Metadata.Name, err)
		}
		crds = append(crds, c)
	}
	deadline := time.Now().Add(time.Minute)
	for _, c := range crds {
		for {
			err := s.crdServed(c)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s: %w", c.Metadata.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func (s *Server) replaceCRD(name string, doc []byte) error {
	cur, err := s.do(http.MethodGet, crdPath+"/"+name, nil)
	if err != nil {
		return err
	}
	var existing, next map[string]any
	if err := json.Unmarshal(cur, &existing); err != nil {
		return err
	}
	if err := json.Unmarshal(doc, &next); err != nil {
		return err
	}
	md, _ := next["metadata"].(map[string]any)
	if md == nil {
		return fmt.Errorf("CRD %s has no metadata", name)
	}
	md["resourceVersion"] = existing["metadata"].(map[string]any)["resourceVersion"]
	j, err := json.Marshal(next)
	if err != nil {
		return err
	}
	_, err = s.do(http.MethodPut, crdPath+"/"+name, j)
	return err
}

// crdServed returns nil once the CRD is Established and each served
// version lists its kind in discovery.
func (s *Server) crdServed(c crdObject) error {
	b, err := s.do(http.MethodGet, crdPath+"/"+c.Metadata.Name, nil)
	if err != nil {
		return err
	}
	var got crdObject
	if err := json.Unmarshal(b, &got); err != nil {
		return err
	}
	established := false
	for _, cond := range got.Status.Conditions {
		established = established || cond.Type == "Established" && cond.Status == "True"
	}
	if !established {
		return fmt.Errorf("not Established: %+v", got.Status.Conditions)
	}
	for _, v := range c.Spec.Versions {
		if !v.Served {
			continue
		}
		if _, err := s.resource(c.Spec.Group+"/"+v.Name, c.Spec.Names.Kind); err != nil {
			return err
		}
	}
	return nil
}

// PolicyCRDs writes gwretry's own CRDs (config/crd: RetryPolicy,
// ConnectionTimeoutPolicy) into a temporary directory of t and returns
// their paths, for InstallCRDs.
func PolicyCRDs(t testing.TB) []string {
	t.Helper()
	names, err := fs.Glob(crd.Files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for _, n := range names {
		b, err := crd.Files.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}
