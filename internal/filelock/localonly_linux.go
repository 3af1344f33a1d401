package filelock

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// nfsSuperMagic is statfs's f_type of NFS.
const nfsSuperMagic = 0x6969

// How the filesystem is asked (replaced in tests with recorded answers).
var (
	statfsType = func(path string) (int64, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			return 0, err
		}
		return int64(st.Type), nil
	}
	readMountinfo = func() ([]byte, error) { return os.ReadFile("/proc/self/mountinfo") }
)

// LocalOnly reports whether flock on the filesystem of dir locks on this machine only:
// NFS mounted with nolock, local_lock=flock or local_lock=all. why names the mount and
// its option.
func LocalOnly(dir string) (local bool, why string) {
	t, err := statfsType(dir)
	if err != nil || t != nfsSuperMagic {
		return false, ""
	}
	data, err := readMountinfo()
	if err != nil {
		return false, ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, ""
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	point, opts := mountOf(data, abs)
	for _, o := range opts {
		switch o {
		case "nolock", "local_lock=flock", "local_lock=all":
			return true, point + " is NFS mounted with " + o
		}
	}
	return false, ""
}

// mountOf finds the mount that holds path in mountinfo text (the longest mount point that
// is path or a parent of it; the last such line wins, as later mounts hide earlier ones)
// and returns its mount point and options, per-mount and per-superblock together.
func mountOf(mountinfo []byte, path string) (string, []string) {
	best, bestLen := "", -1
	var bestOpts []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - nfs host:/x rw,vers=3,nolock
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if len(f) < 6 || len(g) < 3 {
			continue
		}
		point := unescape(f[4])
		if !within(path, point) || len(point) < bestLen {
			continue
		}
		best, bestLen = point, len(point)
		bestOpts = append(strings.Split(f[5], ","), strings.Split(g[2], ",")...)
	}
	return best, bestOpts
}

func within(path, point string) bool {
	if point == "/" {
		return true
	}
	return path == point || strings.HasPrefix(path, point+"/")
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			n := (int(s[i+1]-'0') << 6) | (int(s[i+2]-'0') << 3) | int(s[i+3]-'0')
			b.WriteByte(byte(n))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
