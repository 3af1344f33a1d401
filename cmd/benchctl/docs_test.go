package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/shellwords"
)

// docCommands returns every `benchctl ...` command line in the fenced code blocks of a
// markdown file, with its line number (continuation lines joined, comments dropped, up to
// a pipe or another command).
func docCommands(t *testing.T, path string) map[int][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int][]string{}
	in, console, pending, start := false, false, "", 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			if in {
				in = false
			} else if fence == "sh" || fence == "bash" || fence == "console" {
				in, console = true, fence == "console"
			} else {
				for sc.Scan() { // skip a block of another language (text, yaml, ...)
					n++
					if strings.HasPrefix(strings.TrimSpace(sc.Text()), "```") {
						break
					}
				}
			}
			continue
		}
		if !in || console && pending == "" && !strings.HasPrefix(strings.TrimSpace(line), "$ ") {
			continue // a console block's output lines are not commands
		}
		if pending == "" {
			start = n
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, pending = pending+line, ""
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		words, err := shellwords.Split(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
		if err != nil {
			continue
		}
		for i, w := range words {
			if filepath.Base(w) == "benchctl" && i+1 < len(words) && !strings.HasPrefix(words[i+1], "<") {
				args := words[i+1:]
				for j, a := range args {
					if a == "|" || a == "&&" || a == "||" || a == ";" { // the next command of a pipeline
						args = args[:j]
						break
					}
				}
				out[start] = args
				break
			}
		}
	}
	return out
}

// Every benchctl command shown in the README and the docs exists and its flags parse; the
// read-only ones whose files are in the repository (validate, models list, gpus, --dry-run)
// are run and must succeed.
func TestDocumentedCommands(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	total, ran := 0, 0
	for _, file := range files {
		for line, args := range docCommands(t, file) {
			total++
			root, _ := newRootCmd(iostreams.New(nil, &strings.Builder{}, &strings.Builder{}))
			root.InitDefaultHelpCmd()
			root.InitDefaultCompletionCmd()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				t.Errorf("%s:%d: benchctl %s: no such command", file, line, strings.Join(args, " "))
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s:%d: benchctl %s: %v", file, line, strings.Join(args, " "), err)
				continue
			}
			if cmd.Args != nil {
				if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
					t.Errorf("%s:%d: benchctl %s: %v", file, line, strings.Join(args, " "), err)
					continue
				}
			}
			if runnable(cmd.CommandPath(), args) {
				ran++
				code, _, errs := runIn(t, "../..", args)
				if code != 0 {
					t.Errorf("%s:%d: benchctl %s exited %d:\n%s", file, line, strings.Join(args, " "), code, errs)
				}
			}
		}
	}
	if ran < 3 {
		t.Fatalf("ran only %d documented commands", ran)
	}
	if total < 8 {
		t.Fatalf("found only %d documented commands; the extractor is broken", total)
	}
}

// runnable: read-only commands whose file arguments all exist in the repository.
func runnable(path string, args []string) bool {
	readOnly := map[string]bool{"benchctl validate": true, "benchctl models list": true, "benchctl version": true, "benchctl gpus": true}
	dry := false
	for _, a := range args {
		if a == "--dry-run" {
			dry = true
		}
	}
	if !readOnly[path] && !(dry && (path == "benchctl run" || path == "benchctl submit")) {
		return false
	}
	for _, a := range args {
		if strings.Contains(a, "/") && !strings.HasPrefix(a, "-") {
			if _, err := os.Stat(filepath.Join("../..", a)); err != nil {
				return false
			}
		}
	}
	return true
}

// runIn runs benchctl in-process with dir as the working directory.
func runIn(t *testing.T, dir string, args []string) (int, string, string) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	t.Setenv("BENCHCTL_SHARED_DIR", t.TempDir())
	return run(t, args...)
}
