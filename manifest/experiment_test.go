package manifest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parseExperiment parses a manifest of sHead and body.
func parseExperiment(t *testing.T, body string, lookup Lookup) (*Manifest, []string, error) {
	t.Helper()
	return Parse("m.yaml", "/x/m.yaml", []byte(sHead+body), Options{Lookup: lookup})
}

func variantIDs(m *Manifest) []string {
	var ids []string
	for _, v := range m.Experiment.Variants {
		ids = append(ids, v.ID)
	}
	return ids
}

// GitHub's documented example of include: values added to the combinations they fit
// (added values overwritten by a later entry, original ones never), and entries that fit
// none become variants of their own, which later entries do not extend.
func TestMatrixIncludeAsGitHubDocumentsIt(t *testing.T) {
	m, _, err := parseExperiment(t, sBench+`experiment:
  matrix:
    fruit: [apple, pear]
    animal: [cat, dog]
    include:
      - color: green
      - color: pink
        animal: cat
      - fruit: apple
        shape: circle
      - fruit: banana
      - fruit: banana
        animal: cat
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"animal=cat,color=pink,fruit=apple,shape=circle",
		"animal=dog,color=green,fruit=apple,shape=circle",
		"animal=cat,color=pink,fruit=pear",
		"animal=dog,color=green,fruit=pear",
		"fruit=banana",
		"animal=cat,fruit=banana",
	}
	if got := variantIDs(m); !slices.Equal(got, want) {
		t.Errorf("variants:\n got %q\nwant %q", got, want)
	}
	if want := []string{"animal", "color", "fruit", "shape"}; !slices.Equal(m.Experiment.Params, want) {
		t.Errorf("params %q, want %q", m.Experiment.Params, want)
	}
}

// exclude matches partially, runs before include, and include can add an excluded
// combination back; nodes is a parameter like the others and sets Variant.Nodes.
func TestMatrixExcludeThenInclude(t *testing.T) {
	m, _, err := parseExperiment(t, `benchmarks: [{name: b, command: [x, "{{batch}}"]}]
experiment:
  matrix:
    nodes: [1, 2, 4]
    batch: [16, 32]
    exclude: [{nodes: 1, batch: 32}, {nodes: 4}]
    include: [{nodes: 4, batch: 64}, {nodes: 1, batch: 32, extra: yes}]
  repeat: 5
  warmup: 1
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"batch=16,nodes=1", "batch=16,nodes=2", "batch=32,nodes=2", "batch=64,nodes=4", "batch=32,extra=yes,nodes=1"}
	if got := variantIDs(m); !slices.Equal(got, want) {
		t.Errorf("variants:\n got %q\nwant %q", got, want)
	}
	x := m.Experiment
	if x.Repeat != 5 || x.Warmup != 1 || x.Order != OrderInterleave || x.Trials() != 30 || x.MaxNodes() != 4 {
		t.Errorf("repeat %d warmup %d order %s trials %d max nodes %d", x.Repeat, x.Warmup, x.Order, x.Trials(), x.MaxNodes())
	}
	if v := x.Variants[3]; v.Nodes != 4 || !slices.Equal(v.Benchmarks[0].Command, []string{"x", "64"}) {
		t.Errorf("variant %s: nodes %d, command %q", v.ID, v.Nodes, v.Benchmarks[0].Command)
	}
	if !slices.Equal(m.Benchmarks[0].Command, []string{"x", "{{batch}}"}) {
		t.Errorf("the manifest's benchmark changed: %q", m.Benchmarks[0].Command)
	}
}

// Placeholders go into command, env values and results, from the text as written: a
// ${VAR} whose value holds {{batch}} is not read as a parameter. Values keep their
// spelling, and other text in double braces is not a placeholder.
func TestPlaceholdersAreSubstitutedAsWritten(t *testing.T) {
	m, _, err := parseExperiment(t, `benchmarks:
  - name: b
    command: [run, "--batch={{ batch }}", "{{.Format}}"]
    env: {BATCH: "{{batch}}", PREC: "{{precision}}-x", SNEAKY: "${SNEAKY}"}
    results: "out-{{batch}}.csv"
experiment:
  matrix:
    batch: [016, 1e3]
    precision: [fp16]
`, env("SNEAKY", "{{batch}}"))
	if err != nil {
		t.Fatal(err)
	}
	v := m.Experiment.Variants[0]
	b := v.Benchmarks[0]
	if want := []string{"run", "--batch=016", "{{.Format}}"}; !slices.Equal(b.Command, want) {
		t.Errorf("command %q, want %q", b.Command, want)
	}
	got := map[string]string{}
	for _, e := range b.Env {
		got[e.Name] = e.Value
	}
	if got["BATCH"] != "016" || got["PREC"] != "fp16-x" || got["SNEAKY"] != "{{batch}}" || b.Results != "out-016.csv" {
		t.Errorf("env %v, results %q", got, b.Results)
	}
	if r := m.Experiment.Variants[1].Results; r["b"] != "out-1e3.csv" || len(r) != 1 {
		t.Errorf("the variant's results names: %v", r)
	}
	if b := m.Experiment.Variants[1].Benchmarks[0]; b.Command[1] != "--batch=1e3" {
		t.Errorf("second variant: %q", b.Command)
	}
}

func TestExperimentWithoutMatrixIsOneVariant(t *testing.T) {
	m, _, err := parseExperiment(t, sBench+"experiment: {repeat: 3, order: shuffle, seed: 42}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	x := m.Experiment
	if len(x.Variants) != 1 || x.Variants[0].ID != "" || x.Repeat != 3 || x.Seed == nil || *x.Seed != 42 || x.Trials() != 3 {
		t.Errorf("experiment %+v", x)
	}
}

// Without an experiment, a manifest is as before: {{x}} stays as written, with a warning.
func TestNoExperimentKeepsBracesWithAWarning(t *testing.T) {
	m, warns, err := parseExperiment(t, "benchmarks: [{name: b, command: [x, \"{{batch}}\"]}]\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Experiment != nil || m.Benchmarks[0].Command[1] != "{{batch}}" {
		t.Errorf("experiment %v, command %q", m.Experiment, m.Benchmarks[0].Command)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "benchmarks[0].command[1]: {{batch}} is kept as written") {
		t.Errorf("warnings %q", warns)
	}
}

func TestBadExperiments(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown placeholder", "benchmarks: [{name: b, command: [x, \"{{batchsize}}\"]}]\nexperiment: {matrix: {batch: [1]}}\n",
			"3: benchmarks[0].command[1]: {{batchsize}} is not a parameter of the experiment (its parameters: batch)"},
		{"placeholder in env", "benchmarks: [{name: b, command: [x], env: {A: \"{{nope}}\"}}]\nexperiment: {repeat: 2}\n",
			"3: benchmarks[0].env.A: {{nope}} is not a parameter of the experiment (its parameters: none)"},
		{"a variant lacks it", "benchmarks: [{name: b, command: [x, \"{{batch}}\"]}]\nexperiment: {matrix: {include: [{batch: 1}, {other: 2}]}}\n",
			`{{batch}} has no value in variant "other=2"`},
		{"a dash in a placeholder", "benchmarks: [{name: b, command: [x, \"{{batch-size}}\"]}]\nexperiment: {matrix: {batch: [1]}}\n",
			"{{batch-size}} cannot be a parameter"},
		{"exclude names another parameter", sBench + "experiment:\n  matrix:\n    batch: [1, 2]\n    exclude: [{size: 1}]\n",
			`7: experiment.matrix.exclude[0].size: "size" is not a parameter of the matrix (batch)`},
		{"everything excluded", sBench + "experiment: {matrix: {batch: [1], exclude: [{batch: 1}]}}\n", "experiment.matrix: leaves no variant"},
		{"nodes not a number", sBench + "experiment: {matrix: {nodes: [two]}}\n", "experiment.matrix.nodes[0]: nodes must be a whole number of nodes from 1 to 65536, got the string \"two\""},
		{"nodes zero", sBench + "experiment: {matrix: {nodes: [0]}}\n", "nodes must be a whole number"},
		{"nodes quoted", sBench + "experiment: {matrix: {nodes: [\"2\"]}}\n", "nodes must be a whole number"},
		{"nodes in include", sBench + "experiment: {matrix: {include: [{nodes: -1}]}}\n", "experiment.matrix.include[0].nodes: nodes must be a whole number"},
		{"empty list", sBench + "experiment: {matrix: {batch: []}}\n", "experiment.matrix.batch: must be a non-empty list"},
		{"a scalar", sBench + "experiment: {matrix: {batch: 16}}\n", "experiment.matrix.batch: must be a non-empty list of values"},
		{"a list value", sBench + "experiment: {matrix: {batch: [[1]]}}\n", "experiment.matrix.batch[0]: must be a string or a number"},
		{"a null value", sBench + "experiment: {matrix: {batch: [null]}}\n", "experiment.matrix.batch[0]: must be a string or a number"},
		{"a duplicate value", sBench + "experiment: {matrix: {batch: [1, 1]}}\n", `experiment.matrix.batch[1]: "1" is listed twice`},
		{"a bad name", sBench + "experiment: {matrix: {batch-size: [1]}}\n", `experiment.matrix.batch-size: "batch-size" is not a parameter name`},
		{"names that collide", sBench + "experiment: {matrix: {batch: [1], BATCH: [2]}}\n", `"batch" and "BATCH" would both be BENCHCTL_PARAM_BATCH`},
		{"a newline in a value", sBench + "experiment: {matrix: {batch: [\"a\\nb\"]}}\n", "holds a control character"},
		{"a long value", sBench + "experiment: {matrix: {batch: [\"" + strings.Repeat("x", 2000) + "\"]}}\n", "is 2000 bytes long; a parameter value may have at most 1024"},
		{"include not a list", sBench + "experiment: {matrix: {include: {a: 1}}}\n", "experiment.matrix.include: must be a list of mappings"},
		{"include entry empty", sBench + "experiment: {matrix: {include: [{}]}}\n", "experiment.matrix.include[0]: must be a mapping"},
		{"matrix a list", sBench + "experiment: {matrix: [1]}\n", "experiment.matrix: must be a mapping of parameter names"},
		{"repeat zero", sBench + "experiment: {repeat: 0}\n", "experiment.repeat: must be from 1 to 100000"},
		{"warmup negative", sBench + "experiment: {warmup: -1}\n", "experiment.warmup: must be from 0 to 100000"},
		{"bad order", sBench + "experiment: {order: random}\n", `experiment.order: "random" is not a trial order`},
		{"unknown field", sBench + "experiment: {repeats: 2}\n", `experiment.repeats: unknown field, did you mean "repeat"?`},
		{"too many trials", sBench + "experiment: {matrix: {a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}, repeat: 20000}\n", "10 variants × 20000 trials each (repeat 20000 + warmup 0) is 200000 trials; a job may run at most 100000"},
		{"a variant's results path", "benchmarks: [{name: b, command: [x], results: \"{{dir}}/r.csv\"}]\nexperiment: {matrix: {dir: [\"..\"]}}\n",
			`benchmarks[0].results: in variant dir=..: "../r.csv" must be a file name relative to $BENCHCTL_OUTPUT_DIR`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseExperiment(t, c.body, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant %q", err, c.want)
			}
		})
	}
}

// A matrix that multiplies out beyond MaxVariants is refused before it is expanded: 40
// parameters of 10 values would be 10^40 combinations.
func TestHugeMatrixIsRefusedBeforeExpansion(t *testing.T) {
	var b strings.Builder
	b.WriteString(sBench + "experiment:\n  matrix:\n")
	for i := range 40 {
		b.WriteString("    p" + strconv.Itoa(i) + ": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n")
	}
	_, _, err := parseExperiment(t, b.String(), nil)
	if err == nil || !strings.Contains(err.Error(), "10 × 10 × 10") || !strings.Contains(err.Error(), "at most 1000 variants") {
		t.Fatalf("got %v", err)
	}
}

// Variant ids escape the characters that separate them, so two variants never share one.
func TestVariantIDsAreUnambiguous(t *testing.T) {
	m, _, err := parseExperiment(t, sBench+"experiment: {matrix: {a: [\"x,b=y\", \"x\"], b: [\"y\", \"50%\"]}}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a=x%2Cb%3Dy,b=y", "a=x%2Cb%3Dy,b=50%25", "a=x,b=y", "a=x,b=50%25"}
	if got := variantIDs(m); !slices.Equal(got, want) {
		t.Errorf("ids %q, want %q", got, want)
	}
}

// The redacted copy hides secrets in every variant's benchmarks too.
func TestRedactedCoversVariants(t *testing.T) {
	m, _, err := parseExperiment(t, "secrets: [TOKEN]\nbenchmarks: [{name: b, command: [x], env: {T: \"${TOKEN}\", B: \"{{batch}}\"}}]\nexperiment: {matrix: {batch: [1]}}\n", env("TOKEN", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Redacted().Experiment.Variants[0].Benchmarks[0].Env {
		if e.Value == "s3cret" {
			t.Errorf("the secret is in the redacted copy: %+v", e)
		}
	}
	found := false
	for _, e := range m.Experiment.Variants[0].Benchmarks[0].Env {
		found = found || e.Value == "s3cret"
	}
	if !found {
		t.Errorf("the variant's benchmark lost the secret value: %+v", m.Experiment.Variants[0].Benchmarks[0].Env)
	}
}

// metrics: keeps its rules in the order written (first match wins) and refuses what it
// cannot judge by.
func TestMetricRules(t *testing.T) {
	m, _, err := parseExperiment(t, sBench+"metrics:\n  tokens_per_second: {better: higher, tolerance: 3%}\n  \"*_ms\": {better: lower, tolerance: 5}\n  \"*\": {tolerance: \"0.5 %\"}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Metrics) != 3 || m.Metrics[0].Metric != "tokens_per_second" || *m.Metrics[1].Tolerance != 5 || m.Metrics[2].Better != "" {
		t.Fatalf("rules %+v", m.Metrics)
	}
	for metric, want := range map[string]string{"tokens_per_second": "tokens_per_second", "latency_ms": "*_ms", "busbw": "*"} {
		if r := RuleFor(m.Metrics, metric); r == nil || r.Metric != want {
			t.Errorf("%s: rule %+v, want %s", metric, r, want)
		}
	}
	for body, want := range map[string]string{
		"metrics: {tps: {}}\n":                     "metrics.tps: says nothing",
		"metrics: {tps: {better: up}}\n":           `metrics.tps.better: "up" is not a direction`,
		"metrics: {tps: {tolerance: -3%}}\n":       `metrics.tps.tolerance: "-3%" is not a tolerance`,
		"metrics: {tps: {tolerance: 5000%}}\n":     "from 0% to 1000%",
		"metrics: {\"[\": {better: higher}}\n":     `metrics.[: "[" is not a metric name or glob`,
		"metrics: [tps]\n":                         "metrics: must be a mapping of metric names",
		"metrics: {tps: higher}\n":                 "metrics.tps: must be a mapping such as",
		"metrics: {tps: {tolerance: [1]}}\n":       "metrics.tps.tolerance: must be a percentage",
		"metrics: {tps: {better: higher, x: 1}}\n": `metrics.tps.x: unknown field`,
	} {
		if _, _, err := parseExperiment(t, sBench+body, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// include entries are checked as the matrix's keys are: a name spelled another way (both
// BENCHCTL_PARAM_BATCH) and the same entry twice are errors at their line.
func TestIncludeNamesAndDuplicates(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"another spelling of a matrix parameter", sBench + "experiment:\n  matrix:\n    batch: [1, 2]\n    include: [{Batch: 3}]\n",
			`7: experiment.matrix.include[0].Batch: "batch" and "Batch" would both be BENCHCTL_PARAM_BATCH`},
		{"two spellings in include", sBench + "experiment:\n  matrix:\n    include:\n    - {size: 1}\n    - {SIZE: 2}\n",
			`8: experiment.matrix.include[1].SIZE: "size" and "SIZE" would both be BENCHCTL_PARAM_SIZE`},
		{"the same entry twice", sBench + "experiment:\n  matrix:\n    include:\n    - {a: 1}\n    - {a: 1}\n",
			`8: experiment.matrix.include[1]: is the same entry as include[0]`},
		{"the same entry in another order", sBench + "experiment:\n  matrix:\n    include:\n    - {a: 1, b: 2}\n    - {b: 2, a: 1}\n",
			`is the same entry as include[0]`},
		{"an entry of 65 parameters", sBench + "experiment:\n  matrix:\n    include: [{" + manyParams(65, "p") + "}]\n",
			"experiment.matrix.include[0]: names 65 parameters; a variant may have at most 64"},
		{"1,000 variants of 201 parameters", sBench + "experiment:\n  matrix:\n    a: [" + numbers(1000) + "]\n    include: [{" + manyParams(50, "p") + "}, {" + manyParams(50, "q") + "}, {" +
			manyParams(50, "r") + "}, {" + manyParams(50, "s") + "}]\n",
			"experiment.matrix: variant 1 has 201 parameters (the matrix's and its include entries'); a variant may have at most 64"},
		{"variants too large for job.json", sBench + "experiment:\n  matrix:\n    a: [" + numbers(1000) + "]\n    include: [{" + manyParams(60, "p"+strings.Repeat("x", 60)) + "}]\n",
			"MiB of job.json; at most 4 MiB are allowed"},
		{"50,000 include entries", sBench + "experiment:\n  matrix:\n    include:\n" + strings.Repeat("    - {a: 1}\n", 50_000),
			"experiment.matrix.include: has 50000 entries; at most 10000 are allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseExperiment(t, c.body, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %.600v\nwant %q", err, c.want)
			}
		})
	}
}

func manyParams(n int, prefix string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = prefix + strconv.Itoa(i) + ": v"
	}
	return strings.Join(parts, ", ")
}

func numbers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i)
	}
	return strings.Join(parts, ", ")
}

// The expansion of a long include list ends when its context does (a signal), and costs
// what its entries do: 1,000 combinations extended by 10,000 entries of 5 parameters each.
func TestIncludeExpansionEndsWithItsContext(t *testing.T) {
	params := []MatrixParam{{Name: "a"}}
	for i := range 1000 {
		params[0].Values = append(params[0].Values, strconv.Itoa(i))
	}
	var include []MatrixEntry
	for i := range 10_000 {
		e := MatrixEntry{}
		for j := range 5 {
			e.Params = append(e.Params, Param{Name: "p" + strconv.Itoa(j), Value: strconv.Itoa(i)})
		}
		include = append(include, e)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("SIGTERM"))
	if _, err := expandMatrix(ctx, params, include, nil, MaxVariants); err == nil || !strings.Contains(err.Error(), "SIGTERM") {
		t.Fatalf("a cancelled expansion: %v", err)
	}
	out, err := expandMatrix(context.Background(), params, include, nil, MaxVariants)
	if err != nil || len(out) != 1000 || len(out[0]) != 6 || out[0][1] != (Param{"p0", "9999"}) {
		t.Fatalf("%v %v", err, out[:1])
	}
}
