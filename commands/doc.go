// Package commands holds what each benchctl command does, given its options: build, run,
// submit, collect, compare, history, jobs, cleanup, cache, doctor, gpus, models, reference,
// init, validate, schema and version. A command's work (Build, Run, Collect, …) takes a
// context, the IO streams and its options struct, and never sees cobra: cmd/benchctl parses
// flags into the options and calls it, and its tests hand each command a runF instead to
// Check what a command line becomes without running it.
//
// The domain work is below (runner, results, image, distribution, models, the schedulers);
// what stays here is a command's own: resolving its sources, progress on the streams, the
// tables it prints, and its exit codes.
package commands
