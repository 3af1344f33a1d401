package textredact

import (
	"strings"
	"testing"
)

func TestTextRedactor(t *testing.T) {
	r := New("hf_s3cr3tvalue", "abc", "line-one-secret\nline-two-secret", "")
	for _, c := range []struct{ in, want string }{
		// known values, wherever they stand
		{"loading with hf_s3cr3tvalue now", "loading with *** now"},
		{"url=https://x/?k=hf_s3cr3tvalue&y=1", "url=https://x/?k=***&y=1"},
		{"-----\nline-two-secret", "-----\n***"},
		// a short value is not searched for: "abc" stays in ordinary text...
		{"abc def abcabc", "abc def abcabc"},
		// ...but is hidden where the text names it, as any credential-like value
		{"export HF_TOKEN=abc", "export HF_TOKEN=***"},
		{"python train.py --token abc --epochs 3", "python train.py --token *** --epochs 3"},
		{"python train.py --hf-token=xyz123 --epochs 3", "python train.py --hf-token=*** --epochs 3"},
		{`{"api_key": "k-123", "model": "llama"}`, `{"api_key": "***", "model": "llama"}`},
		{"DB_PASSWORD='p w' next", "DB_PASSWORD='***' next"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9", "Authorization: Bearer ***"},
		{"git clone https://user:ghp_abcdef@github.com/x/y", "git clone https://user:***@github.com/x/y"},
		// not credentials: left alone
		{"MAX_TOKENS=512 max_new_tokens=64 --num-tokens 5", "MAX_TOKENS=512 max_new_tokens=64 --num-tokens 5"},
		{"Token embeddings initialised; key: value; http://host:8080/x", "Token embeddings initialised; key: value; http://host:8080/x"},
		{"error: CUDA out of memory", "error: CUDA out of memory"},
	} {
		if got := r.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	var none *Redactor
	if got := none.Redact("x --password hunter2"); got != "x --password ***" {
		t.Errorf("nil redactor: %q", got)
	}
	// A 6,000-character line and many values stay linear enough to be instant.
	long := strings.Repeat("a=b ", 1500) + "SECRET=" + strings.Repeat("z", 6000)
	if got := r.Redact(long); !strings.HasSuffix(got, "SECRET=***") {
		t.Errorf("long line: ...%q", got[len(got)-20:])
	}
}
