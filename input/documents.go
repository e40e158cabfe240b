package input

import (
	"io"

	"github.com/gwretry/gwretry/translate"
)

// Document is one object of the input, read as Load reads it but not yet
// decoded into a type: for commands that read kinds other than those of
// the Gateway API (gwretry import reads Ingresses and ConfigMaps).
type Document struct {
	Pos        Position
	APIVersion string
	Kind       string
	// Namespace is as written ("" when unset).
	Namespace string
	Name      string
	// JSON is the object, converted from YAML strictly.
	JSON []byte
}

// Object names the document as errors do: "Kind namespace/name".
func (d Document) Object() string { return ObjectName(d.Kind, d.Namespace, d.Name) }

// ReadDocuments reads paths exactly as Load does (files, directories, "-"
// for stdin; the same limits, alias rejection, strict YAML, List items and
// duplicate detection) and returns every object undecoded, in input order.
// The notes say which objects were read twice, identically. Problems with
// documents come back as an ErrorList together with the documents that
// were read; other errors with nil documents.
func ReadDocuments(paths []string, stdin io.Reader, lim Limits) ([]Document, []translate.Note, error) {
	var docs []Document
	l := &loader{lim: lim, in: &Input{Skipped: map[string]int{}}, seen: map[objectKey]seenObject{}, raw: &docs}
	if err := l.readPaths(paths, stdin); err != nil {
		return nil, nil, err
	}
	if len(l.errs) > 0 {
		return docs, l.in.Notes, l.errs
	}
	return docs, l.in.Notes, nil
}

// collect keeps one object for ReadDocuments, unless it was read before.
func (l *loader) collect(pos Position, j []byte, tm typeMeta) {
	object := ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name)
	if l.readBefore(pos, j, tm, object) {
		return
	}
	*l.raw = append(*l.raw, Document{Pos: pos, APIVersion: tm.APIVersion, Kind: tm.Kind,
		Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name, JSON: j})
}

// DecodeStrict decodes a document into v as Load decodes the kinds it
// reads: unknown fields, duplicate keys and type mismatches are errors
// naming the file, document, object and field path.
func DecodeStrict(d Document, v any) ErrorList {
	return decodeStrict(d.Pos, d.Object(), d.JSON, v)
}
