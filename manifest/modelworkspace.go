package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The workspace contract of a MAD model (Model with a Catalog), shared by the catalog
// (package models, which resolves a model's paths against it) and the runner (which makes
// the workspace on each node): madengine runs its containers with the checkout at
// /myworkspace and each model in a run directory beneath it.

// ModelWorkspace is the container path of a MAD model's workspace (madengine's
// `-v $PWD:/myworkspace/ --workdir /myworkspace/`): a model's scripts path is relative to it.
const ModelWorkspace = "/myworkspace"

// ModelRunDirectory is the name of a model's run directory in its workspace, madengine's.
const ModelRunDirectory = "run_directory"

// CloneName is the folder a model's `git clone URL` makes, as git names it: the URL's
// last path element without .git ("https://host/org/repo.git" -> "repo").
func CloneName(rawURL string) string {
	u := strings.TrimRight(strings.TrimSpace(rawURL), "/")
	if i := strings.LastIndexAny(u, "/:"); i >= 0 {
		u = u[i+1:]
	}
	u = strings.TrimSuffix(u, ".git")
	if u == "" || u == "." || u == ".." || strings.ContainsAny(u, "\\\x00") {
		return "repo"
	}
	return u
}

// CloneKey is the name of a url's clone in the job folder: its CloneName and a digest of
// the url, so that two urls of one repository name do not meet, and two models of one url
// share one clone.
func CloneKey(rawURL string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(rawURL)))
	return CloneName(rawURL) + "-" + hex.EncodeToString(sum[:6])
}
