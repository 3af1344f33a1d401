package results

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCSV(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		header  []string
		rows    [][]string
		wantErr string
	}{
		{name: "plain", data: "model,performance,metric\nm,1.5,GB/s\n",
			header: []string{"model", "performance", "metric"}, rows: [][]string{{"m", "1.5", "GB/s"}}},
		{name: "values kept exactly", data: "model,performance,metric,bs\nm,1.50,x,007\nn, 2 ,x,0x1F\n",
			header: []string{"model", "performance", "metric", "bs"}, rows: [][]string{{"m", "1.50", "x", "007"}, {"n", " 2 ", "x", "0x1F"}}},
		{name: "whitespace in header", data: " model ,\tperformance , metric\nm,1,x\n",
			header: []string{"model", "performance", "metric"}, rows: [][]string{{"m", "1", "x"}}},
		{name: "byte order mark", data: "\ufeffmodel,performance\nm,1\n",
			header: []string{"model", "performance"}, rows: [][]string{{"m", "1"}}},
		{name: "case kept, extra columns kept", data: "Model,Performance,My Col\nm,1,z\n",
			header: []string{"Model", "Performance", "My Col"}, rows: [][]string{{"m", "1", "z"}}},
		{name: "empty header name", data: ",model,performance\n0,m,1\n",
			header: []string{"column_1", "model", "performance"}, rows: [][]string{{"0", "m", "1"}}},
		{name: "quoted values and CRLF", data: "model,performance,note\r\n\"a,b\",1,\"say \"\"hi\"\"\"\r\n\r\n",
			header: []string{"model", "performance", "note"}, rows: [][]string{{"a,b", "1", `say "hi"`}}},
		{name: "empty performance is still a row", data: "model,performance\nm,\n",
			header: []string{"model", "performance"}, rows: [][]string{{"m", ""}}},
		{name: "header only", data: "model,performance\n", header: []string{"model", "performance"}},
		{name: "zero bytes", data: "", wantErr: "empty file"},
		{name: "only blank lines", data: "\n\n  \n", wantErr: "empty file"},
		{name: "ragged row", data: "model,performance\nm,1,extra\n", wantErr: ":2: the row does not have as many fields"},
		{name: "short row", data: "model,performance,metric\nm,1\n", wantErr: ":2: the row does not have"},
		{name: "binary junk", data: "model,performance\n\x00\x01\x02\xff", wantErr: "binary data"},
		{name: "not UTF-8", data: "model,performance\nm\xff\xfe,1\n", wantErr: "not UTF-8"},
		{name: "no performance column", data: "model,perf\nm,1\n", wantErr: "no performance column (columns: model, perf)"},
		{name: "duplicate column", data: "model,performance,model\nm,1,n\n", wantErr: `column "model" appears twice`},
		{name: "bare quote", data: "model,performance\nm\"x,1\n", wantErr: ":2:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, err := ParseCSV("x.csv", []byte(c.data))
			if c.wantErr != "" {
				var ce *CSVError
				if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want a *CSVError with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tb.Header, c.header) || !reflect.DeepEqual(tb.Rows, c.rows) {
				t.Fatalf("got %q %q, want %q %q", tb.Header, tb.Rows, c.header, c.rows)
			}
		})
	}
}

func TestReadCSVFileLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.csv")
	os.WriteFile(path, []byte("model,performance\n"+strings.Repeat("m,1\n", 1000)), 0o644)
	if _, err := ReadCSVFile(path, 100); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a file over the limit: %v", err)
	}
	tb, err := ReadCSVFile(path, 0)
	if err != nil || len(tb.Rows) != 1000 {
		t.Fatalf("within the default limit: %v", err)
	}
}

func TestColMatchesWellKnownNamesCaseInsensitively(t *testing.T) {
	tb := &Table{Header: []string{"MODEL", "Performance", "Other"}}
	if tb.Col("model") != 0 || tb.Col("performance") != 1 || tb.Col("other") != -1 || tb.Col("Other") != 2 {
		t.Fatal("column lookup")
	}
}
