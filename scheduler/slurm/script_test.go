package slurm

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sampleJob() Job {
	g := 8
	return Job{Name: "benchctl-llama", Nodes: 4, Partition: "gpu", Account: "proj1", QOS: "normal", Time: "02:00:00",
		GPUsPerNode: &g, Exclusive: true, SbatchArgs: []string{"--constraint=mi300x"},
		Benchctl: "/opt/benchctl/bin/benchctl", Manifest: "/home/me/bench/llama.yaml", SharedDir: "/shared/bench ctl",
		Record: "/home/me/build.json", Benchmarks: []string{"train", "infer"}, SecretFile: "/shared/bench ctl/jobs/.submit/abc.secret",
		OutputDir: "/shared/bench ctl/jobs/.submit"}
}

func TestScriptGolden(t *testing.T) {
	got, err := sampleJob().Script()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "job.sh.golden")
	if *update {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("script differs from %s (run with -update if intended):\n%s", golden, got)
	}
	if out, err := exec.Command("bash", "-n", "-c", got).CombinedOutput(); err != nil {
		t.Fatalf("not valid bash: %v %s", err, out)
	}
	if strings.Count(got, "srun ") != 2 || strings.Count(got, " run --manifest") != 1 || strings.Count(got, " cleanup --job") != 1 {
		t.Error("the script must have exactly two sruns: the run, then the cleanup")
	}
	if strings.Contains(got, "cat ") || strings.Contains(got, "BENCHCTL_JOB_SECRET=") {
		t.Error("the script reads the secret itself: benchctl run must read it, with its checks")
	}
}

// Hostile values reach the script only quoted: bash reads each back as the same word.
func TestQuoteSurvivesBash(t *testing.T) {
	for _, s := range []string{"plain", "two words", "it's", `$(touch /tmp/pwned)`, "`id`", `a"b\c`, "semi;colon|pipe&amp", "new\nline", "*", ""} {
		out, err := exec.Command("bash", "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("Quote(%q) came back as %q (%v)", s, out, err)
		}
	}
}

func TestValidateRejectsInjection(t *testing.T) {
	for _, mutate := range []func(*Job){
		func(j *Job) { j.Partition = "gpu; rm -rf /" },
		func(j *Job) { j.Account = "$(id)" },
		func(j *Job) { j.QOS = "a b" },
		func(j *Job) { j.Time = "1h; reboot" },
		func(j *Job) { j.SbatchArgs = []string{"no-dash"} },
		func(j *Job) { j.SbatchArgs = []string{"--comment=a\n#SBATCH --x"} },
		func(j *Job) { j.Nodes = 0 },
		func(j *Job) { j.Manifest = "/tmp/x\n#SBATCH --time=1\ntouch PWNED\n#/m.yaml" },
		func(j *Job) { j.SharedDir = "/x\n#SBATCH --account=evil\necho INJECTED\n#" },
		func(j *Job) { j.Record = "/r\rx" },
		func(j *Job) { j.Benchmarks = []string{"a\nb"} },
		func(j *Job) { j.Benchctl = "/bin/benchctl\x00" },
	} {
		j := sampleJob()
		mutate(&j)
		if err := j.Validate(); err == nil {
			t.Errorf("accepted %+v", j)
		}
	}
	j := sampleJob()
	j.SbatchArgs = []string{"--comment=$(reboot) x"}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	argv := j.SbatchArgv()
	if argv[len(argv)-1] != "--comment=$(reboot) x" {
		t.Errorf("an sbatch argument was split or altered: %q", argv)
	}
}

// A shared directory with a "%" reached sbatch --output, where sbatch expands %j, %u, ...:
// /scratch/100%used/jobs/.submit wrote to /scratch/100<user>sed/... Now "%" is "%%".
func TestOutputPatternEscapesPercent(t *testing.T) {
	for dir, want := range map[string]string{
		"/scratch/bench/jobs/.submit":    "--output=/scratch/bench/jobs/.submit/slurm-%j.out",
		"/scratch/100%used/jobs/.submit": "--output=/scratch/100%%used/jobs/.submit/slurm-%j.out",
		"/s/%j%%x/jobs/.submit":          "--output=/s/%%j%%%%x/jobs/.submit/slurm-%j.out",
	} {
		j := sampleJob()
		j.OutputDir = dir
		var got string
		for _, a := range j.SbatchArgv() {
			if strings.HasPrefix(a, "--output=") {
				got = a
			}
		}
		if got != want {
			t.Errorf("%s: %s, want %s", dir, got, want)
		}
	}
}

// Slurm drops every backslash from an --output name that has one (and then replaces no
// %j), so output under a folder with a backslash would land somewhere else: such a folder
// is refused up front, with the reason and what to do.
func TestValidateRefusesBackslashInTheOutputFolder(t *testing.T) {
	for _, c := range []struct{ shared, out string }{
		{`/s/back\slash`, ""}, // the output folder defaults to the shared one's jobs/.submit
		{"/shared", `/shared/jobs\x/.submit`},
	} {
		j := sampleJob()
		j.SharedDir, j.OutputDir, j.SecretFile = c.shared, c.out, ""
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), "backslash") || !strings.Contains(err.Error(), "without one") {
			t.Errorf("shared %q, output %q: %v, want an error about the backslash", c.shared, c.out, err)
		}
	}
}

// --engine reaches both of the script's benchctl steps (run and cleanup), quoted; a job
// without one has none.
func TestScriptEngine(t *testing.T) {
	j := sampleJob()
	j.Engine = "podman"
	s, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s, " --engine podman"); n != 2 {
		t.Errorf("the script has %d --engine podman, want 2 (run and cleanup):\n%s", n, s)
	}
	j.Engine = ""
	if s, _ = j.Script(); strings.Contains(s, "--engine") {
		t.Errorf("a job without an engine names one:\n%s", s)
	}
	j.Engine = "podman\nrm -rf /"
	if err := j.Validate(); err == nil {
		t.Error("an engine with a line break was accepted")
	}
}
