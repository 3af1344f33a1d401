// Package layering holds the test that keeps DESIGN's layering true: which of benchctl's
// rooms may import which (layering_test.go). It has no code of its own.
package layering
