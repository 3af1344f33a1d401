package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/image"
)

// keepIDMode is the user namespace a container of a rootless Podman engine needs so that
// what its user writes into the node folder is the host user's own: a rootless engine maps
// the container's root to the user and every other container uid to a subordinate id
// (/etc/subuid), so files of an image whose USER is not root landed owned by an id like
// 1200999, in a results folder that had to be world-writable. Podman's keep-id mode
// (Podman 4.3+: keep-id:uid=U,gid=G) maps the host user to U (and its group to G) in the
// container instead; the container still runs as U.
//
// containerUser is container.user, else the image's USER ("user[:group]"). The mode is ""
// for every other engine, for root, and where the user is a name benchctl cannot map
// without reading the image's /etc/passwd (hint says what to do then). A uid given
// without a group maps only the uid (the user's group stays its own number in the
// container).
func keepIDMode(id image.Identity, containerUser string) (mode, hint string) {
	if !id.Podman() || !id.Rootless || containerUser == "" {
		return "", ""
	}
	u, g, hasGroup := strings.Cut(containerUser, ":")
	if u == "root" || u == "0" {
		return "", ""
	}
	uid, err := strconv.ParseUint(u, 10, 32)
	if err != nil || uid >= 1<<32-1 {
		return "", fmt.Sprintf("the container's user %q is a name, which %s cannot map to your user without its uid: files it writes into the node folder belong to a subordinate id; set container.user to a numeric uid[:gid] (e.g. the image's USER's) to have them belong to you", containerUser, id)
	}
	mode = "keep-id:uid=" + strconv.FormatUint(uid, 10)
	if hasGroup {
		gid, err := strconv.ParseUint(g, 10, 32)
		if err != nil || gid >= 1<<32-1 {
			return mode, fmt.Sprintf("the container's group %q is a name: only the uid %d is mapped to your user, and what it writes belongs to a subordinate group; set container.user to a numeric uid:gid to map the group too", g, uid)
		}
		mode += ",gid=" + strconv.FormatUint(gid, 10)
	}
	return mode, ""
}
