package runner

import (
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
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

// makeResultsDir creates a benchmark's results folder with resultsMode, and says so when
// it has to be writable by everyone. containerUser is the user the container runs as:
// container.user, else the image's USER.
func makeResultsDir(dir, containerUser string, log *slog.Logger) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	mode := resultsMode(containerUser, os.Getuid())
	if err := os.Mkdir(dir, mode); err != nil && !os.IsExist(err) {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder (%s)", dir, st.Mode().Type())
	}
	if err := os.Chmod(dir, mode); err != nil { // the umask took bits off
		return err
	}
	if mode&0o002 != 0 && log != nil {
		log.Warn("the results folder is writable by every user (sticky, like /tmp): the container runs as another user; set container.user to your uid to avoid it",
			"folder", dir, "containerUser", containerUser)
	}
	return nil
}
