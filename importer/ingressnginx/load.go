package ingressnginx

import (
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// Input is what Load read: the Ingresses to import and the Services that
// name their ports.
type Input struct {
	Ingresses []input.Object[networkingv1.Ingress]
	Services  []input.Object[corev1.Service]
	// IngressClasses decide which Ingresses the controller serves.
	IngressClasses []input.Object[networkingv1.IngressClass]
	// Notes say which kinds were skipped and which objects were read twice.
	Notes []translate.Note
}

// Load reads Ingresses (networking.k8s.io/v1) and Services from paths as
// gwretry translate reads its manifests: strictly, every problem listed
// with its file, document, object and field path. Other kinds are skipped
// with a note. Problems with documents come back as a input.ErrorList.
func Load(paths []string, stdin io.Reader, lim input.Limits) (*Input, error) {
	docs, notes, err := input.ReadDocuments(paths, stdin, lim)
	if docs == nil && err != nil {
		return nil, err
	}
	var errs input.ErrorList
	if err != nil {
		if l, ok := err.(input.ErrorList); ok {
			errs = l
		} else {
			return nil, err
		}
	}
	return FromDocuments(docs, notes, errs)
}

// FromDocuments decodes documents read elsewhere (from files by
// input.ReadDocuments, from a cluster by package cluster) as Load does;
// errs are the problems found reading them, listed with those found
// decoding.
func FromDocuments(docs []input.Document, notes []translate.Note, errs input.ErrorList) (*Input, error) {
	in := &Input{Notes: notes}
	skipped := map[string]int{}
	for _, d := range docs {
		switch {
		case d.Kind == "Ingress" && d.APIVersion == "networking.k8s.io/v1":
			ing := new(networkingv1.Ingress)
			if e := input.DecodeStrict(d, ing); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
			in.Ingresses = append(in.Ingresses, input.Object[networkingv1.Ingress]{Pos: d.Pos, Obj: ing})
		case d.Kind == "Ingress":
			errs = append(errs, &input.InputError{Pos: d.Pos, Object: d.Object(), Field: "apiVersion",
				Msg: fmt.Sprintf("%s: only networking.k8s.io/v1 Ingresses are read (the API server serves every Ingress as v1 since Kubernetes 1.19: kubectl get ingress -o yaml)", d.APIVersion)})
		case d.Kind == "IngressClass" && d.APIVersion == "networking.k8s.io/v1":
			ic := new(networkingv1.IngressClass)
			if e := input.DecodeStrict(d, ic); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
			in.IngressClasses = append(in.IngressClasses, input.Object[networkingv1.IngressClass]{Pos: d.Pos, Obj: ic})
		case d.Kind == "Service" && d.APIVersion == "v1":
			svc := new(corev1.Service)
			if e := input.DecodeStrict(d, svc); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
			in.Services = append(in.Services, input.Object[corev1.Service]{Pos: d.Pos, Obj: svc})
		default:
			skipped[d.Kind+" ("+d.APIVersion+")"]++
		}
	}
	kinds := make([]string, 0, len(skipped))
	for k := range skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		in.Notes = append(in.Notes, translate.Info("", "skipped %d %s object(s): gwretry import ingress-nginx reads Ingresses, IngressClasses and Services", skipped[k], k))
	}
	if len(errs) > 0 {
		return in, errs
	}
	return in, nil
}

// LoadConfigMap reads the controller's ConfigMap from path: exactly one
// ConfigMap (v1), decoded strictly.
func LoadConfigMap(path string, lim input.Limits) (*ConfigMap, error) {
	docs, _, err := input.ReadDocuments([]string{path}, nil, lim)
	if err != nil {
		return nil, err
	}
	var found []input.Document
	for _, d := range docs {
		if d.Kind == "ConfigMap" && d.APIVersion == "v1" {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s: want exactly one ConfigMap (v1), the ingress-nginx controller's, found %d", path, len(found))
	}
	return ConfigMapOf(found[0])
}

// ConfigMapOf decodes the controller's ConfigMap d (v1) strictly.
func ConfigMapOf(d input.Document) (*ConfigMap, error) {
	var cm corev1.ConfigMap
	if e := input.DecodeStrict(d, &cm); len(e) > 0 {
		return nil, e
	}
	ns := cm.Namespace
	if ns == "" {
		ns = "default"
	}
	return &ConfigMap{Name: ns + "/" + cm.Name, Pos: d.Pos, Data: cm.Data}, nil
}
