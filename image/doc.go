// Package image gets benchmark images onto Docker Engines: it connects to engines, builds
// images, keeps the content-addressed tar cache on the shared filesystem, pulls and pushes
// through registries, and loads verified tars into engines that lack an image. For a
// stream between nodes it hands out a neutral Tar (reader, size, checksum: a `docker save`
// or a cache entry) and a sink that loads what arrives; how the bytes travel is package
// distribution's business (image does not import fanout). It never prints;
// progress is reported to callers through callbacks (Progress, ProgressFunc).
package image
