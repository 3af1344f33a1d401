package manifest

import "github.com/benchctl/benchctl/internal/textredact"

// MinRedactLen is the shortest secret value a TextRedactor searches for in free text.
const MinRedactLen = textredact.MinRedactLen

// TextRedactor hides secrets in free text that benchctl quotes (internal/textredact).
type TextRedactor = textredact.Redactor

// NewTextRedactor is a TextRedactor that also hides the given secret values.
func NewTextRedactor(values ...string) *TextRedactor { return textredact.New(values...) }

// SecretValues are the values of env that are secret (EnvVar.Secret) or named like a
// credential (CredentialLike: a variable passed through from the host by passEnv is not
// marked secret, but its value is one all the same).
func SecretValues(env []EnvVar) []string {
	var out []string
	for _, e := range env {
		if (e.Secret || CredentialLike(e.Name)) && e.Value != "" {
			out = append(out, e.Value)
		}
	}
	return out
}
