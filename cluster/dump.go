package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/input"
)

// Dump writes the objects read into a directory, one YAML file per kind
// (DIR/httproutes.gateway.networking.k8s.io.yaml, ...), each object a
// document in the order read: reading DIR back gives every kind's objects
// in the same order, so the same command on DIR repeats the cluster's run
// byte for byte (its configurations and report.json; the text report
// names files instead of the cluster).
type Dump struct {
	dir   string
	files map[string]*dumpFile
	order []string
	// Objects counts what was written.
	Objects int
}

type dumpFile struct {
	f *os.File
	w *bufio.Writer
	n int
}

// NewDump creates dir (and its parents) for the objects.
func NewDump(dir string) (*Dump, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--dump: %w", err)
	}
	return &Dump{dir: dir, files: map[string]*dumpFile{}}, nil
}

// FileOf is the file of DIR the objects of kind (apiVersion) go to.
func FileOf(apiVersion, kind string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group = "core"
	}
	return strings.ToLower(kind) + "." + group + ".yaml"
}

// Add writes one object.
func (d *Dump) Add(doc input.Document) error {
	name := FileOf(doc.APIVersion, doc.Kind)
	df := d.files[name]
	if df == nil {
		f, err := os.Create(filepath.Join(d.dir, name))
		if err != nil {
			return fmt.Errorf("--dump: %w", err)
		}
		df = &dumpFile{f: f, w: bufio.NewWriter(f)}
		d.files[name] = df
		d.order = append(d.order, name)
	}
	y, err := yaml.JSONToYAML(doc.JSON)
	if err != nil {
		return fmt.Errorf("--dump: %s: %w", doc.Object(), err)
	}
	if df.n > 0 {
		df.w.WriteString("---\n")
	}
	df.n++
	d.Objects++
	_, err = df.w.Write(y)
	return err
}

// Close finishes every file; the first error is returned.
func (d *Dump) Close() error {
	var first error
	for _, name := range d.order {
		df := d.files[name]
		if err := df.w.Flush(); err != nil && first == nil {
			first = fmt.Errorf("--dump: %w", err)
		}
		if err := df.f.Close(); err != nil && first == nil {
			first = fmt.Errorf("--dump: %w", err)
		}
	}
	return first
}

// Dir is the directory written.
func (d *Dump) Dir() string { return d.dir }
