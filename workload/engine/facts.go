package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/internal/enginekind"
	"github.com/benchctl/benchctl/workload"
)

// VersionAPI is the call every engine answers: what it is.
type VersionAPI interface {
	ServerVersion(ctx context.Context, opts client.ServerVersionOptions) (client.ServerVersionResult, error)
}

// InfoAPI is the engine's /info, which *client.Client has (a test's fake may not).
type InfoAPI interface {
	Info(ctx context.Context, opts client.InfoOptions) (client.SystemInfoResult, error)
}

// Facts asks the engine what it is: its version answer, and its /info where api has one (a
// failed /info is facts not known, and why, never an engine without them).
func Facts(ctx context.Context, api VersionAPI) (workload.Facts, error) {
	v, err := api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return workload.Facts{}, fmt.Errorf("asking the engine its version: %w", err)
	}
	ia, ok := api.(InfoAPI)
	if !ok {
		return FactsOf(v, nil, nil), nil
	}
	info, err := ia.Info(ctx, client.InfoOptions{})
	return FactsOf(v, &info, err), nil
}

// VersionFacts are the facts of the engine's version answer alone: enough for a node's record
// and identity where no GPU asks for /info's (Docker's /info runs its runtimes to answer: it
// is the dearer of the two). Docker says it runs rootless in both: /version names its
// rootlesskit component.
func VersionFacts(ctx context.Context, api VersionAPI) (workload.Facts, error) {
	v, err := api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return workload.Facts{}, fmt.Errorf("asking the engine its version: %w", err)
	}
	return FactsOf(v, nil, nil), nil
}

// FactsOf are the facts of a version answer and, when info is not nil, an /info answer
// (infoErr: it failed).
func FactsOf(v client.ServerVersionResult, info *client.SystemInfoResult, infoErr error) workload.Facts {
	names := make([]string, len(v.Components))
	f := workload.Facts{Version: v.Version, APIVersion: v.APIVersion, OS: v.Os, Arch: v.Arch, Components: []workload.Component{}}
	for i, c := range v.Components {
		names[i] = c.Name
		f.Components = append(f.Components, workload.Component{Name: c.Name, Version: c.Version})
		if c.Name == "rootlesskit" { // Docker adds it where it runs under RootlessKit
			f.Rootless = true
		}
	}
	f.Kind, f.Name = enginekind.Of(v.Platform.Name, names...)
	switch {
	case infoErr != nil:
		f.InfoProblem = infoErr.Error()
	case info != nil:
		f.InfoKnown = true
		f.CDISpecDirs = slices.Clone(info.Info.CDISpecDirs)
		f.DataRoot = info.Info.DockerRootDir
		for _, o := range info.Info.SecurityOptions {
			for _, kv := range strings.Split(o, ",") {
				if kv == "name=rootless" {
					f.Rootless = true
				}
			}
		}
	}
	return f
}

// Facts is the engine's facts (the package's Facts).
func (r Runtime) Facts(ctx context.Context) (workload.Facts, error) { return Facts(ctx, r.API) }

// VersionFacts is the engine's facts from its version answer alone (the package's
// VersionFacts).
func (r Runtime) VersionFacts(ctx context.Context) (workload.Facts, error) {
	return VersionFacts(ctx, r.API)
}
