package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Engine is the part of the Docker Engine API this package uses. *client.Client satisfies
// it; tests wrap it to count calls or inject faults.
type Engine interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (client.ImageLoadResult, error)
	ImageSave(ctx context.Context, images []string, opts ...client.ImageSaveOption) (client.ImageSaveResult, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, opts client.ImageBuildOptions) (client.ImageBuildResult, error)
	ImageList(ctx context.Context, opts client.ImageListOptions) (client.ImageListResult, error)
	ServerVersion(ctx context.Context, opts client.ServerVersionOptions) (client.ServerVersionResult, error)
	ImagePull(ctx context.Context, ref string, opts client.ImagePullOptions) (client.ImagePullResponse, error)
}

var _ Engine = (*client.Client)(nil)

// LabelKey is the image label that carries the content key.
const LabelKey = "io.benchctl.key"

// Has reports whether the engine has an image (by id or reference), and its id; an
// engine it cannot ask is an error that says how to reach it.
func Has(ctx context.Context, eng Engine, ref string) (string, bool, error) {
	id, ok, err := hasImage(ctx, eng, ref)
	if err != nil {
		return "", false, engineError(EngineHostOf(eng), err)
	}
	return id, ok, nil
}

// Inspected is Has with the engine's whole answer: what the image is where the engine has it.
func Inspected(ctx context.Context, eng Engine, ref string) (client.ImageInspectResult, bool, error) {
	res, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return client.ImageInspectResult{}, false, nil
		}
		return client.ImageInspectResult{}, false, engineError(EngineHostOf(eng), err)
	}
	return res, true, nil
}

// hasImage reports whether the engine has an image (by id or reference).
func hasImage(ctx context.Context, eng Engine, ref string) (string, bool, error) {
	res, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, err
	}
	return res.ID, true, nil
}

// findByKey looks for an image labelled with the key.
func findByKey(ctx context.Context, eng Engine, key string) (string, bool, error) {
	res, err := eng.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label", LabelKey+"="+key)})
	if err != nil {
		return "", false, err
	}
	if len(res.Items) == 0 {
		return "", false, nil
	}
	return res.Items[0].ID, true, nil
}

// jsonMessage is one line of the Engine's streamed build and load responses.
type jsonMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	ID          string `json:"id"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux            json.RawMessage `json:"aux"`
	ProgressDetail *struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
}

func (m jsonMessage) err() error {
	if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
		return errors.New(m.ErrorDetail.Message)
	}
	if m.Error != "" {
		return errors.New(m.Error)
	}
	return nil
}

// readMessages decodes a JSON message stream, calling fn for each; the first error message
// in the stream is returned.
func readMessages(r io.Reader, fn func(jsonMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the engine's response: %w", err)
		}
		if err := m.err(); err != nil {
			return err
		}
		if fn != nil {
			fn(m)
		}
	}
}

func trimLine(s string) string { return strings.TrimRight(s, "\r\n") }
