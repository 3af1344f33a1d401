package image

import (
	"context"
	"fmt"
	"io"

	"github.com/moby/moby/client"
)

// StreamFromCache is the fan-out source of a cache entry: its tar, with its size and the
// XXH64 it must have (a damaged tar aborts the stream rather than ending it). The caller
// closes the returned Closer.
func (c *Cache) StreamFromCache(key string) (FanoutSource, io.Closer, error) {
	e, f, err := c.open(key)
	if err != nil {
		return FanoutSource{}, nil, err
	}
	return FanoutSource{R: f, Size: e.Size, XXH64: e.XXH64}, f, nil
}

// StreamFromEngine is the fan-out source of an image on rank 0's engine: `docker save` of
// it as it comes (size unknown). The caller closes the returned Closer.
func StreamFromEngine(ctx context.Context, eng Engine, ref string) (FanoutSource, io.Closer, error) {
	rc, err := eng.ImageSave(ctx, []string{ref})
	if err != nil {
		return FanoutSource{}, nil, fmt.Errorf("saving %s from the engine for the stream: %w", ref, err)
	}
	return FanoutSource{R: rc, Size: -1}, rc, nil
}

// LoadSink is a fan-out sink that loads the stream into eng: the load fails when the
// stream is cut or damaged (the fan-out's reader fails rather than ending), and then the
// engine is left without the image rather than with a damaged one.
func LoadSink(ctx context.Context, eng Engine) func(io.Reader) error {
	return func(r io.Reader) error {
		resp, err := eng.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
		if err != nil {
			return fmt.Errorf("loading the streamed image into the engine: %w", err)
		}
		defer resp.Close()
		if err := readMessages(resp, nil); err != nil {
			return fmt.Errorf("the engine could not load the streamed image: %w", err)
		}
		return nil
	}
}
