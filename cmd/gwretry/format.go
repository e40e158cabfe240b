package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/translate"
)

// Stdout formats -o selects, as kubectl -o yaml|json does, for the single
// target's configuration on stdout. Any other -o value is a directory.
const (
	formatYAML = "yaml"
	formatJSON = "json"
)

// fileFormat is "yaml" or "json" by a generated file's extension, or "" for
// a file in its data plane's own syntax (nginx.conf, haproxy.cfg).
func fileFormat(p string) string {
	switch path.Ext(p) {
	case ".yaml", ".yml":
		return formatYAML
	case ".json":
		return formatJSON
	}
	return ""
}

// writeFormat prints one target's files in format: one file as the document
// itself (a file the data plane loads as it is, in YAML or JSON); several
// YAML files as YAML documents, each after a comment naming it, as without
// -o; several files in JSON as one object that maps each path to its
// document. It refuses a file that is neither YAML nor JSON: nothing is
// written then.
func writeFormat(w io.Writer, target, format string, files []translate.File) error {
	if err := checkFormat(target, format, files); err != nil {
		return err
	}
	converted := make([]translate.File, len(files))
	for i, f := range files {
		data, err := convert(f, format)
		if err != nil {
			// A backend's file that its own format cannot read back is
			// gwretry's bug: the backends parse their output.
			return &translate.InternalError{Err: fmt.Errorf("-o %s: %s: %w", format, f.Path, err)}
		}
		converted[i] = translate.File{Path: f.Path, Data: data}
	}
	if len(converted) == 1 {
		_, err := w.Write(converted[0].Data)
		return err
	}
	if format == formatYAML {
		var buf bytes.Buffer
		for i, f := range converted {
			if i > 0 {
				buf.WriteString("---\n")
			}
			fmt.Fprintf(&buf, "# %s\n", f.Path)
			buf.Write(f.Data)
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	// Several JSON documents: one object by path (encoding/json sorts the
	// keys), so that the output is one JSON value jq and others can read.
	docs := map[string]json.RawMessage{}
	for _, f := range converted {
		docs[f.Path] = json.RawMessage(f.Data)
	}
	out, err := json.MarshalIndent(docs, "", "  ")
	if err != nil {
		return &translate.InternalError{Err: fmt.Errorf("-o json: %w", err)}
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// checkFormat refuses, as a usage error, a file of target's that is
// neither YAML nor JSON.
func checkFormat(target, format string, files []translate.File) error {
	for _, f := range files {
		if fileFormat(f.Path) == "" {
			return usageErrorf("-o %s: %s writes %s in its own syntax, neither YAML nor JSON; leave out -o to print it, or give -o a directory (./%s for one named %s)",
				format, target, f.Path, format, format)
		}
	}
	return nil
}

// convert returns f's document in format: as generated when it is in that
// format already, else through sigs.k8s.io/yaml (YAML to JSON, indented,
// or JSON to YAML). A YAML file of several documents (Linkerd's routes)
// becomes one JSON List of them, as kubectl -o json prints several
// objects: YAMLToJSON alone would convert the first document only.
func convert(f translate.File, format string) ([]byte, error) {
	if fileFormat(f.Path) == format {
		return f.Data, nil
	}
	if format == formatYAML {
		return yaml.JSONToYAML(f.Data)
	}
	docs, err := yamlDocuments(f.Data)
	if err != nil {
		return nil, err
	}
	var j []byte
	if len(docs) == 1 {
		j = docs[0]
	} else {
		items := make([]json.RawMessage, len(docs))
		for i, d := range docs {
			items[i] = d
		}
		if j, err = json.Marshal(kubeList{APIVersion: "v1", Kind: "List", Items: items}); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, j, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// kubeList is what kubectl -o json prints for several objects.
type kubeList struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// yamlDocuments returns each non-empty document of a YAML stream as JSON
// (one document, empty or not, when the stream has only one).
func yamlDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	if len(out) == 0 {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// stripComments drops the lines of doc that hold only a comment, so that
// a document of comments alone counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// isFormat tells whether -o names a stdout format rather than a directory.
func isFormat(o string) bool {
	return o == formatYAML || o == formatJSON
}

// formatHelp is the -o flag's help text.
func formatHelp() string {
	return "`FORMAT` of the single target's configuration on stdout: yaml or json (Envoy, Traefik); -o DIR, the old spelling of --output-dir DIR, still works with a warning"
}
