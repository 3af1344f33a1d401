package document

import (
	"fmt"
	"strconv"
)

// Kind is the shape of a Node.
type Kind int

// The node kinds of a parsed document.
const (
	NullNode Kind = iota
	ScalarNode
	MapNode
	SeqNode
)

func (k Kind) String() string {
	switch k {
	case ScalarNode:
		return "a scalar"
	case MapNode:
		return "a mapping"
	case SeqNode:
		return "a list"
	}
	return "null"
}

// Scalar tags, the same for YAML and JSON input.
const (
	TagStr   = "str"
	TagInt   = "int"
	TagFloat = "float"
	TagBool  = "bool"
	TagNull  = "null"
)

// Node is one value of a parsed JSON or YAML document with the position it was written at.
// Both formats produce the same tree, so one strict decoder serves both.
type Node struct {
	Kind  Kind
	Line  int    // 1-based
	Col   int    // 1-based
	Tag   string // for scalars: TagStr, TagInt, TagFloat, TagBool or TagNull
	Value string // scalar text as written (strings unquoted)
	Keys  []*Node
	Items []*Node // mapping values (parallel to Keys) or list elements
}

// Get returns the value of key k in a mapping node, or nil.
func (n *Node) Get(k string) *Node {
	if n == nil || n.Kind != MapNode {
		return nil
	}
	for i, key := range n.Keys {
		if key.Value == k {
			return n.Items[i]
		}
	}
	return nil
}

// Describe says what a node is, for "must be X, got Y" messages: "a list", "the number 8",
// "the string \"x\"" (Quote).
func (n *Node) Describe() string {
	switch n.Kind {
	case NullNode:
		return "null"
	case MapNode:
		return "a mapping"
	case SeqNode:
		return "a list"
	}
	switch n.Tag {
	case TagStr:
		return "the string " + Quote(n.Value)
	case TagInt:
		return "the number " + n.Value
	case TagFloat:
		return "the number " + n.Value
	case TagBool:
		return "the boolean " + n.Value
	}
	return n.Value
}

// Quote renders a user value for a message: quoted, and shortened to 80 characters so that
// junk input keeps messages readable (and small).
func Quote(s string) string {
	const max = 80
	n := 0
	for i := range s { // not []rune(s): a value may be a MiB long
		if n == max {
			s = s[:i] + "…"
			break
		}
		n++
	}
	return strconv.Quote(s)
}

// ParseError is a syntax error in a document, with its position.
type ParseError struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// checkDuplicateKeys reports the second occurrence of a key in one mapping.
func checkDuplicateKeys(file string, n *Node) error {
	seen := make(map[string]*Node, len(n.Keys))
	for _, k := range n.Keys {
		if first, ok := seen[k.Value]; ok {
			return &ParseError{File: file, Line: k.Line, Col: k.Col,
				Msg: fmt.Sprintf("duplicate key %s (first defined at line %d)", Quote(k.Value), first.Line)}
		}
		seen[k.Value] = k
	}
	return nil
}
