package image

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// pullStream is an engine's answer to a pull: its JSON messages.
type pullStream struct{ io.ReadCloser }

func (pullStream) JSONMessages(context.Context) iter.Seq2[jsonstream.Message, error] { return nil }
func (pullStream) Wait(context.Context) error                                        { return nil }

// pullEngine answers every pull with body.
type pullEngine struct {
	Engine
	body string
}

func (e pullEngine) ImagePull(context.Context, string, client.ImagePullOptions) (client.ImagePullResponse, error) {
	return pullStream{io.NopCloser(strings.NewReader(e.body))}, nil
}

// Podman 4.3's service, asked to pull from a plain-HTTP registry on 127.0.0.1 (which Docker
// takes without configuration), fails in its message stream (seen on the testbed): the
// error says what to configure on each engine. Other failures are left as they are.
func TestPullFromPlainHTTPRegistrySaysHowToAllowIt(t *testing.T) {
	podman := `{"progressDetail":{},"errorDetail":{"message":"initializing source docker://127.0.0.1:16501/x/y:1: pinging container registry 127.0.0.1:16501: Get \"https://127.0.0.1:16501/v2/\": http: server gave HTTP response to HTTPS client"},"error":"initializing source docker://127.0.0.1:16501/x/y:1: pinging container registry 127.0.0.1:16501: Get \"https://127.0.0.1:16501/v2/\": http: server gave HTTP response to HTTPS client"}` + "\n"
	err := Pull(context.Background(), pullEngine{body: podman}, "127.0.0.1:16501/x/y:1", nil, nil)
	if err == nil {
		t.Fatal("the pull succeeded")
	}
	for _, s := range []string{"pulling 127.0.0.1:16501/x/y:1 from 127.0.0.1:16501", "server gave HTTP response to HTTPS client",
		`location = "127.0.0.1:16501", insecure = true`, "registries.conf", "Podman", "insecure-registries"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error lacks %q:\n%v", s, err)
		}
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		t.Errorf("a plain-HTTP registry is not a refusal of credentials: %v", err)
	}
	other := `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}` + "\n"
	err = Pull(context.Background(), pullEngine{body: other}, "127.0.0.1:16501/x/y:1", nil, nil)
	if err == nil || strings.Contains(err.Error(), "registries.conf") {
		t.Errorf("another failure got the hint: %v", err)
	}
}
