package input

import (
	"encoding/json"
	"fmt"
)

// Objects loads objects read elsewhere than from files (package cluster
// reads them from an API server) one at a time, exactly as Load decodes
// the documents of a file: the same strict decoding, kinds, duplicate
// detection, limits and notes, so that what follows (Check, resolve.Build)
// cannot tell them apart. Only the positions differ: each object's is
// given by the caller (Position.Cluster), and its errors name it by kind,
// namespace and name.
type Objects struct{ l *loader }

// NewObjects starts an Input read object by object.
func NewObjects(lim Limits) *Objects {
	return &Objects{l: &loader{lim: lim, in: &Input{Skipped: map[string]int{}}, seen: map[objectKey]seenObject{}}}
}

// Add decodes the object j (JSON, as an API server sends it) read at pos.
// A problem with the object is kept for Input, which lists them all; the
// error returned is a limit reached, after which nothing more is read.
func (o *Objects) Add(pos Position, j []byte) error {
	l := o.l
	if int64(len(j)) > l.lim.MaxInputBytes-l.read {
		return fmt.Errorf("%s: input exceeds %d bytes in total (raise --max-input-bytes)", pos, l.lim.MaxInputBytes)
	}
	l.read += int64(len(j))
	if len(j) > l.lim.MaxDocumentBytes {
		var tm typeMeta
		_ = json.Unmarshal(j, &tm)
		l.errs = append(l.errs, &InputError{Pos: pos, Object: ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name),
			Msg: fmt.Sprintf("object is %d bytes, more than the limit of %d (raise --max-document-bytes)", len(j), l.lim.MaxDocumentBytes)})
		return nil
	}
	return l.decodeObject(pos, j, nil)
}

// Input is what Load returns for the objects added: the Input, and the
// ErrorList of every problem with them (with the Input of those that
// decoded).
func (o *Objects) Input() (*Input, error) { return o.l.finish() }
