// Package document is benchctl's strict reader of JSON and YAML documents, and has that one
// job. It parses either format into one tree of Nodes that keep the line and column each
// value was written at (keeping to bounds on values, depth and size, whatever the input), and
// decodes a tree into Go values strictly: an unknown field, a wrong type or a bad scalar is
// a Problem located as `file:line: field.path: what is wrong (what is allowed)`, and
// decoding goes on so that every problem of a file is found in one pass. Problems collects
// them, with the line of every field path written, and returns them as one *Error (an
// invalid-input error, the CLI's exit 4).
//
// The manifest package reads manifests and reference files with it; models reads MAD's
// catalogs, tools.json and context files with it. It knows no schema: the callers' types
// (and their NodeDecoders) say what a document may hold, two conventions aside (Decoder).
// It imports nothing of benchctl's but internal/.
package document
