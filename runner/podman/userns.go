package podman

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/workload/engine"

	"github.com/benchctl/benchctl/image"
)

// KeepIDMode is the user namespace a container of a rootless Podman engine needs so that
// what its user writes into the node folder is the host user's own: a rootless engine maps
// the container's root to the user and every other container uid to a subordinate id
// (/etc/subuid), so files of an image whose USER is not root landed owned by an id like
// 1200999, in a results folder that had to be world-writable. Podman's keep-id mode
// (Podman 4.3+: keep-id:uid=U,gid=G) maps the host user to U (and its group to G) in the
// container instead; the container still runs as U.
//
// containerUser is container.user, else the image's USER ("user[:group]"), in numbers
// where the image's /etc/passwd and /etc/group give them (numericUser). The mode is "" for
// every other engine, for root, and where the user is still a name (hint says what to do
// then). A uid without a group maps only the uid (the user's group stays its own number in
// the container).
func KeepIDMode(id image.Identity, containerUser string) (mode, hint string) {
	if !id.Podman() || !id.Rootless || containerUser == "" {
		return "", ""
	}
	u, g, hasGroup := strings.Cut(containerUser, ":")
	if u == "root" || u == "0" {
		return "", ""
	}
	uid, err := strconv.ParseUint(u, 10, 32)
	if err != nil || uid >= 1<<32-1 {
		return "", fmt.Sprintf("the container's user %q is a name that the image's /etc/passwd does not resolve (or that could not be read), so %s cannot map it to your user: files it writes into the node folder belong to a subordinate id; set container.user to a numeric uid[:gid] to have them belong to you", containerUser, id)
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

// NumericUser turns a container user ("user[:group]", names or numbers) into numbers as the
// image's /etc/passwd and /etc/group say, as the OCI runtime does when the container starts:
// a name is looked up; a user without a group takes its passwd entry's group. A user that is
// numeric already (with a numeric group) asks nothing of the engine. Where a name cannot be
// resolved, or eng cannot read the image's files, the user is returned as it is (keepIDMode
// then says what to do).
//
// labels are the helper container's (the job's, so that cleanup by label finds one left).
func NumericUser(ctx context.Context, eng any, ref, containerUser string, labels map[string]string) string {
	u, g, hasGroup := strings.Cut(containerUser, ":")
	if u == "" || u == "root" || u == "0" || (isNumber(u) && hasGroup && isNumber(g)) {
		return containerUser
	}
	files, ok := eng.(engine.ImageFilesAPI)
	if !ok {
		return containerUser
	}
	passwd, group, err := engine.AccountFiles(ctx, files, ref, labels)
	if err != nil {
		return containerUser
	}
	uid, pgid := lookupAccount(passwd, u, 2, 3)
	if uid == "" {
		return containerUser
	}
	gid := pgid
	if hasGroup {
		gid, _ = lookupAccount(group, g, 2, 2)
	}
	if gid == "" {
		return uid
	}
	return uid + ":" + gid
}

// isNumber says whether s is a uid or gid as a number.
func isNumber(s string) bool {
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n < 1<<32-1
}

// lookupAccount finds name (or the number itself) in an /etc/passwd or /etc/group body and
// returns its field idField (the id) and field idField2 (passwd's primary group; pass
// idField for group). A number not in the file is still that number, with no second field.
func lookupAccount(body []byte, name string, idField, idField2 int) (id, id2 string) {
	for line := range strings.SplitSeq(string(body), "\n") {
		f := strings.Split(line, ":")
		if len(f) <= max(idField, idField2) || !isNumber(f[idField]) {
			continue
		}
		if f[0] == name || f[idField] == name {
			if isNumber(f[idField2]) {
				id2 = f[idField2]
			}
			return f[idField], id2
		}
	}
	if isNumber(name) {
		return name, ""
	}
	return "", ""
}
