package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/models"
)

// docCommands returns every `benchctl ...` command line in the fenced code blocks of a
// markdown file, with its line number (continuation lines joined, comments dropped).
func docCommands(t *testing.T, path string) map[int][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int][]string{}
	in, pending, start := false, "", 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			if in {
				in = false
			} else if fence == "sh" || fence == "bash" || fence == "console" {
				in = true
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
		if !in {
			continue
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
		words, err := models.SplitArgs(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
		if err != nil {
			continue
		}
		for i, w := range words {
			if filepath.Base(w) == "benchctl" && i+1 < len(words) && !strings.HasPrefix(words[i+1], "<") {
				out[start] = words[i+1:]
				break
			}
		}
	}
	return out
}

// Every benchctl command shown in the README and the docs exists and its flags parse.
func TestDocumentedCommandsParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	total := 0
	for _, file := range files {
		for line, args := range docCommands(t, file) {
			total++
			root, _ := newRootCmd(streams{out: &strings.Builder{}, err: &strings.Builder{}})
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
				}
			}
		}
	}
	if total < 8 {
		t.Fatalf("found only %d documented commands; the extractor is broken", total)
	}
}
