package runner

import (
	"os"
	"testing"
)

func TestResultsMode(t *testing.T) {
	for user, want := range map[string]os.FileMode{"": 0o755, "root": 0o755, "0": 0o755, "0:0": 0o755, "4242": 0o755, "4242:100": 0o755,
		"1000": os.ModeSticky | 0o777, "nobody": os.ModeSticky | 0o777, "1000:1000": os.ModeSticky | 0o777} {
		if got := resultsMode(user, 4242); got != want {
			t.Errorf("resultsMode(%q) = %v, want %o", user, got, want)
		}
	}
	nf := testNodeFolder(t, t.TempDir(), "1", 0, "n1")
	dir := nf.Results("b")
	if err := makeResultsDir(nf, "b", "1000", nil); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if os.Getuid() != 1000 && st.Mode()&(os.ModeSticky|0o777) != os.ModeSticky|0o777 {
		t.Errorf("a results folder for another user is %v, want sticky and writable", st.Mode())
	}
	dir2 := nf.Results("c")
	if err := makeResultsDir(nf, "c", "", nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir2); st.Mode().Perm() != 0o755 || st.Mode()&os.ModeSticky != 0 {
		t.Errorf("a results folder for root or this user is %v, want 0755 (it was 0777 without the sticky bit)", st.Mode())
	}
}
