// Package manifest reads benchctl manifests (JSON or YAML, one schema, parsed and decoded
// strictly by manifest/document), reports every problem in one pass as
// `file:line: field.path: what is wrong (what is allowed)`, expands
// ${VAR} references from the environment, de-duplicates mounts and produces the resolved
// Manifest that every other package consumes: absolute paths, defaults filled, secrets
// marked so that a Redacted copy can be printed or persisted safely.
//
// The package never prints and never reads the process environment directly: callers pass
// a Lookup function (os.LookupEnv in the CLI), which keeps precedence explicit and testable.
package manifest
