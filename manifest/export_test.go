package manifest

import "testing"

// MatchesSchema fails t unless data (a manifest named name) is valid by the shipped schema:
// for the tests of package manifest_test (the starter's).
func MatchesSchema(t *testing.T, what, name string, data []byte) {
	t.Helper()
	if err := compiledSchema(t).Validate(instance(t, name, data)); err != nil {
		t.Errorf("%s does not match the schema: %v", what, err)
	}
}
