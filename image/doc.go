// Package image gets benchmark images onto Docker Engines: it connects to engines, builds
// images, keeps the content-addressed tar cache on the shared filesystem, pulls and pushes
// through registries, and loads verified tars into engines that lack an image. For a
// stream between nodes it holds only the adapter (stream.go): the `docker save` or cache
// tar that feeds package fanout, and the sink that loads what arrives. It never prints;
// progress is reported to callers through callbacks (Progress, ProgressFunc).
package image
