// Package image gets benchmark images onto Docker Engines: it connects to engines, and (in
// later steps) builds images, keeps the content-addressed tar cache on the shared filesystem
// and loads verified tars into engines that lack an image. It never prints; progress is
// reported to callers through callbacks.
package image
