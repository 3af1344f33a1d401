// Package distribution is a job's image phase, whole: rank 0 gets each image of the job
// (found on its engine or in the shared cache, built, or pulled: leaderimage.go,
// leaderref.go), chooses how each reaches the other nodes (the shared cache, a stream along
// the ranks, the registry, or auto: route.go), tells the workers in the "image" release
// (release.go), and every rank ensures each image on its engine (ensure.go, stream.go).
// The job channel's phases it uses are "joined", "image", "have" (which images to stream)
// and "ready" (every node has every image, so no container starts before all can).
//
// It owns none of the job channel or engine code: it declares the few calls it makes of
// them (LeaderBarrier and WorkerBarrier, satisfied by jobchan's Leader and Worker; image.Engine)
// and reports through a Reporter (runner writes status.json and job.json, and tells the job
// that this node failed). It calls down into image (engines, builds, the cache,
// registries, the stream adapter) and fanout, never up into runner. It never prints; it
// logs to Options.Log.
//
// A node's run calls it once: Lead on rank 0, Follow on every other rank.
package distribution
