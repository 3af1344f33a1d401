package runner

import (
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// resultsMode is the mode of a benchmark's results folder, which its container writes:
// 0755 when the container runs as this process's user, or as root (root writes anyway,
// and with user namespaces — rootless Docker — container root is this user); else the
// container's user is someone else, who needs write access: 01777, world-writable with
// the sticky bit, so that nobody can remove or replace what another user wrote there.
// docs/manifest.md (container.user) says how to avoid the latter: run the container as
// your own uid.
func resultsMode(containerUser string, uid int) os.FileMode {
	u, _, _ := strings.Cut(containerUser, ":") // user[:group]
	switch u {
	case "", "root", "0", strconv.Itoa(uid):
		return 0o755
	}
	if cur, err := user.Current(); err == nil && cur.Username == u {
		return 0o755
	}
	return os.ModeSticky | 0o777
}

// makeResultsDir creates a benchmark's results folder, results/<bench> of the node folder,
// with resultsMode, through the node folder's descriptor (no component may be a link),
// and says so when it has to be writable by everyone. containerUser is the user the
// container runs as: container.user, else the image's USER.
func makeResultsDir(nf *jobdir.NodeFolder, bench, containerUser string, log *slog.Logger) error {
	root, err := nf.MkdirAll(jobdir.ResultsFolder, 0o755)
	if err != nil {
		return err
	}
	defer root.Close()
	mode := resultsMode(containerUser, os.Getuid())
	d, _, err := safefile.MkdirAt(root, bench, mode.Perm())
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Chmod(mode); err != nil { // the umask took bits off
		return err
	}
	if mode&0o002 != 0 && log != nil {
		log.Warn("the results folder is writable by every user (sticky, like /tmp): the container runs as another user; set container.user to your uid to avoid it",
			"folder", d.Name(), "containerUser", containerUser)
	}
	return nil
}
