package textsafe

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain text, ünïcödé, 日本, emoji 👍🏽 and \\x1b as text", "", ""},
		{"\x1b]8;;http://evil\x07click\x1b]8;;\x07", `\x1b]8;;http://evil\x07click\x1b]8;;\x07`, ""},
		{"\x1b[2J\x1b[31mred", `\x1b[2J\x1b[31mred`, ""},
		{"a\tb\nc\rd", `a\tb\nc\rd`, "a\tb\nc\\rd"},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`, ""},
		{"c1 \u009b2J \u0085 \u0080", `c1 \u009b2J \u0085 \u0080`, ""},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200f\u200e\u061c", `bidi \u202eevil\u202c \u2066x\u2069 \u200f\u200e\u061c`, ""},
		{"sep \u2028 \u2029", `sep \u2028 \u2029`, ""},
		{"bad utf-8 \x9b\xff\xc3", `bad utf-8 \x9b\xff\xc3`, ""},
		{"a real \uFFFD stays", "", ""},
	} {
		line, text := c.line, c.text
		if line == "" {
			line = c.in
		}
		if text == "" {
			text = line
		}
		if got := Line(c.in); got != line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, line)
		}
		if got := Text(c.in); got != text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, text)
		}
	}
}

// Line is linear and does not copy text that needs nothing.
func TestLineLongInput(t *testing.T) {
	clean := strings.Repeat("x", 1<<20)
	if got := Line(clean); got != clean {
		t.Fatal("changed clean text")
	}
	if n := testing.AllocsPerRun(10, func() { Line(clean) }); n != 0 {
		t.Errorf("%v allocations for clean text", n)
	}
	dirty := strings.Repeat("\x1b", 1<<20)
	if got := Line(dirty); len(got) != 4<<20 {
		t.Errorf("len %d", len(got))
	}
}

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"=HYPERLINK(\"http://evil\",\"x\")": "'=HYPERLINK(\"http://evil\",\"x\")",
		"=cmd|' /C calc'!A0":                "'=cmd|' /C calc'!A0",
		"@SUM(1)":                           "'@SUM(1)",
		"+A1":                               "'+A1",
		"-2+3+cmd|' /C calc'!A0":            "'-2+3+cmd|' /C calc'!A0",
		"\tTAB":                             "'\tTAB",
		"\rCR":                              "'\rCR",
		"\nLF":                              "'\nLF",
		"  =1+1":                            "'  =1+1",
		"-1,234":                            "'-1,234",
		"-1.5 ":                             "'-1.5 ",
		"-":                                 "'-",
		"'=already":                         "'=already",
		// numbers stay as written
		"-1.5": "-1.5", "+3e2": "+3e2", "-0": "-0", "1e-5": "1e-5", "-inf": "-inf", "+Inf": "+Inf",
		"-nan": "'-nan", "-1e999": "-1e999", " -2": " -2", "-0x1p-2": "-0x1p-2",
		// nothing to do
		"": "", "model": "model", "1.5": "1.5", "a=b": "a=b", " ": " ",
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
		if got := Cell(Cell(in)); got != want {
			t.Errorf("Cell(Cell(%q)) = %q: not idempotent", in, got)
		}
	}
}

func TestJSON(t *testing.T) {
	in := []byte("{\"a\": \"x\u009b2J \u202eevil \u2066 日本 \\u001b\"}")
	want := `{"a": "x\u009b2J \u202eevil \u2066 日本 \u001b"}`
	if got := string(JSON(in)); got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
	var back, orig map[string]string
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(in, &orig)
	if back["a"] != orig["a"] {
		t.Errorf("the value changed: %q, want %q", back["a"], orig["a"])
	}
	clean := []byte(`{"a": "日本"}`)
	if got := JSON(clean); &got[0] != &clean[0] {
		t.Error("clean JSON was copied")
	}
}
