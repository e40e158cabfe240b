package yamlv3events

// This file is gwretry's: the exported face of yaml.v3's event parser
// (the other .go files are yaml.v3 v3.0.4's, unchanged but for their
// package name). See README.md.

import (
	"io"
	"strconv"
)

// Kind is the kind of an Event.
type Kind int

// The kinds of events, as yaml.v3's parser produces them.
const (
	StreamStart Kind = iota + 1
	StreamEnd
	DocumentStart
	DocumentEnd
	Alias
	Scalar
	SequenceStart
	SequenceEnd
	MappingStart
	MappingEnd
)

// Style is a scalar's presentation.
type Style int

// The scalar styles; Plain is zero.
const (
	Plain Style = iota
	SingleQuoted
	DoubleQuoted
	Literal
	Folded
)

// Event is one event of the parse. Tag is the tag as the parser resolved
// its handle ("tag:yaml.org,2002:str" for !!str), empty when the node has
// none; Value is a scalar's value or an alias's anchor.
type Event struct {
	Kind   Kind
	Tag    string
	Value  string
	Anchor string
	Style  Style
	// Line is 1-based, of the event's start.
	Line int
}

// Parser reads the events of a YAML stream held in memory, one at a
// time, with yaml.v3's scanner and parser.
type Parser struct {
	p    yaml_parser_t
	ev   yaml_event_t
	done bool
}

// NewParser returns a parser of b.
func NewParser(b []byte) *Parser {
	p := &Parser{}
	if !yaml_parser_initialize(&p.p) {
		panic("yamlv3events: failed to initialize the parser")
	}
	if len(b) == 0 {
		b = []byte{'\n'}
	}
	yaml_parser_set_input_string(&p.p, b)
	return p
}

// NewReaderParser returns a parser of what r reads, read a few KB at a
// time (yaml.v3's reader input): a file need not be held to be read.
func NewReaderParser(r io.Reader) *Parser {
	p := &Parser{}
	if !yaml_parser_initialize(&p.p) {
		panic("yamlv3events: failed to initialize the parser")
	}
	yaml_parser_set_input_reader(&p.p, r)
	return p
}

// Next returns the next event. After StreamEnd, or an error, it returns
// the same error or StreamEnd again.
func (p *Parser) Next() (Event, error) {
	if p.done {
		return Event{Kind: StreamEnd}, nil
	}
	if p.p.error != yaml_NO_ERROR || !yaml_parser_parse(&p.p, &p.ev) {
		return Event{}, p.fail()
	}
	e := &p.ev
	out := Event{Line: e.start_mark.line + 1, Tag: string(e.tag), Anchor: string(e.anchor)}
	switch e.typ {
	case yaml_STREAM_START_EVENT:
		out.Kind = StreamStart
	case yaml_STREAM_END_EVENT:
		out.Kind = StreamEnd
		p.done = true
	case yaml_DOCUMENT_START_EVENT:
		out.Kind = DocumentStart
	case yaml_DOCUMENT_END_EVENT:
		out.Kind = DocumentEnd
	case yaml_ALIAS_EVENT:
		out.Kind = Alias
		out.Value = string(e.anchor)
	case yaml_SCALAR_EVENT:
		out.Kind = Scalar
		out.Value = string(e.value)
		// As yaml.v3's decoder (decode.go, parser.scalar) reads it.
		s := e.scalar_style()
		switch {
		case s&yaml_DOUBLE_QUOTED_SCALAR_STYLE != 0:
			out.Style = DoubleQuoted
		case s&yaml_SINGLE_QUOTED_SCALAR_STYLE != 0:
			out.Style = SingleQuoted
		case s&yaml_LITERAL_SCALAR_STYLE != 0:
			out.Style = Literal
		case s&yaml_FOLDED_SCALAR_STYLE != 0:
			out.Style = Folded
		}
	case yaml_SEQUENCE_START_EVENT:
		out.Kind = SequenceStart
	case yaml_SEQUENCE_END_EVENT:
		out.Kind = SequenceEnd
	case yaml_MAPPING_START_EVENT:
		out.Kind = MappingStart
	case yaml_MAPPING_END_EVENT:
		out.Kind = MappingEnd
	default:
		yaml_event_delete(e)
		return Event{}, &Error{Line: out.Line, Msg: "unexpected event " + e.typ.String()}
	}
	yaml_event_delete(e)
	return out, nil
}

// Error is a scanner's or parser's error, as yaml.v3 reports it.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line != 0 {
		return "yaml: line " + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return "yaml: " + e.Msg
}

// fail is yaml.v3's parser.fail (decode.go) as an error.
func (p *Parser) fail() error {
	var line int
	if p.p.context_mark.line != 0 {
		line = p.p.context_mark.line
		if p.p.error == yaml_SCANNER_ERROR {
			line++
		}
	} else if p.p.problem_mark.line != 0 {
		line = p.p.problem_mark.line
		if p.p.error == yaml_SCANNER_ERROR {
			line++
		}
	}
	msg := p.p.problem
	if msg == "" {
		msg = "unknown problem parsing YAML content"
	}
	return &Error{Line: line, Msg: msg}
}
