package manifest

import (
	"reflect"
	"strings"

	"github.com/benchctl/benchctl/manifest/figures"
)

// What the schema says beyond the Go types. Every value here comes from the decoder or the
// resolver (their constants and regular expressions where they have them);
// TestSchemaAgreesWithTheDecoder checks each enum and shape against Parse.

// schemaShapes are the schemas of the types with their own syntax (document.NodeDecoder), as their
// decodeNode reads them; the field's description is added by the caller.
var schemaShapes = map[reflect.Type]func() *jsonSchema{
	reflect.TypeFor[GPUCount](): func() *jsonSchema {
		return &jsonSchema{AnyOf: []*jsonSchema{
			{Description: "GPUs per node", Type: schemaTypes{"integer"}, Minimum: ptr[int64](1), Maximum: ptr[int64](1024)},
			{Description: "every GPU the node has (or Slurm gave the job)", Type: schemaTypes{"string"}, Enum: []any{"all"}},
		}}
	},
	reflect.TypeFor[DurationSpec](): func() *jsonSchema {
		// time.ParseDuration's syntax, without a sign: the duration must be positive.
		return &jsonSchema{Type: schemaTypes{"string"}, Pattern: `^\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`}
	},
	reflect.TypeFor[ByteSize](): func() *jsonSchema {
		// sizeRE, without the (?i) flag ECMAScript lacks.
		return &jsonSchema{Type: schemaTypes{"string", "integer", "null"}, Pattern: `^\s*[0-9]+(\.[0-9]+)?\s*[kmgtKMGT]?([iI]?[bB])?\s*$`, Minimum: ptr[int64](1)}
	},
	reflect.TypeFor[Ulimit](): func() *jsonSchema {
		limit := func(what string) *jsonSchema {
			return &jsonSchema{Description: what + " (-1: unlimited)", Type: schemaTypes{"integer"}, Minimum: ptr[int64](-1)}
		}
		return &jsonSchema{AnyOf: []*jsonSchema{
			limit("the soft and hard limit"),
			{
				Type:                 schemaTypes{"object"},
				Required:             []string{"soft", "hard"},
				Properties:           properties{{"soft", limit("the soft limit")}, {"hard", limit("the hard limit, at least soft")}},
				AdditionalProperties: false,
			},
		}}
	},
	reflect.TypeFor[MountSpec](): func() *jsonSchema {
		path := func(what string) *jsonSchema {
			return &jsonSchema{Description: what, Type: schemaTypes{"string"}, MinLength: ptr(1)}
		}
		return &jsonSchema{AnyOf: []*jsonSchema{
			{Description: `"SOURCE:TARGET", "SOURCE:TARGET:ro" or "SOURCE:TARGET:rw"`, Type: schemaTypes{"string"}, Pattern: ":"},
			{
				Type:     schemaTypes{"object"},
				Required: []string{"source", "target"},
				Properties: properties{
					{"source", path("the host path; relative paths are relative to the manifest's folder")},
					{"target", path("the absolute path in the container")},
					{"readOnly", &jsonSchema{Description: "mount read-only (default: false)", Type: schemaTypes{"boolean"}}},
				},
				AdditionalProperties: false,
			},
		}}
	},
	reflect.TypeFor[MatrixSpec](): func() *jsonSchema {
		value := func() *jsonSchema {
			return &jsonSchema{Description: "a value, kept as written", Type: schemaTypes{"string", "number", "boolean"}, MaxLength: ptr(MaxParamValue)}
		}
		nodes := &jsonSchema{Description: "a node count", Type: schemaTypes{"integer"}, Minimum: ptr[int64](1), Maximum: ptr[int64](MaxExperimentNodes)}
		entry := func(what string) *jsonSchema {
			return &jsonSchema{
				Description:          what,
				Type:                 schemaTypes{"object"},
				Properties:           properties{{ParamNodes, nodes}},
				PatternProperties:    properties{{paramNameRE().String(), value()}},
				AdditionalProperties: false,
			}
		}
		list := func(what string, item *jsonSchema) *jsonSchema {
			return &jsonSchema{Description: what, Type: schemaTypes{"array"}, MinItems: ptr(1), Items: item}
		}
		return &jsonSchema{
			Type: schemaTypes{"object"},
			Properties: properties{
				{ParamNodes, list("how many nodes of the job a variant uses (ranks 0..n-1)", nodes)},
				{"include", &jsonSchema{Description: "added to every combination they fit, or added as variants", Type: schemaTypes{"array", "null"}, Items: entry("parameters and values")}},
				{"exclude", &jsonSchema{Description: "combinations removed (naming some parameters matches every combination with those values)", Type: schemaTypes{"array", "null"}, Items: entry("parameters and values")}},
			},
			// include and exclude match the parameters' pattern too (JSON Schema applies
			// both, and a portable pattern cannot leave two words out): the items of a
			// parameter's list may be entries as far as the schema goes; validate refuses a
			// mapping among a parameter's values.
			PatternProperties:    properties{{paramNameRE().String(), list("the parameter's values", &jsonSchema{AnyOf: []*jsonSchema{value(), entry("an include or exclude entry")}})}},
			AdditionalProperties: false,
		}
	},
	reflect.TypeFor[MetricsSpec](): func() *jsonSchema {
		return &jsonSchema{
			Type: schemaTypes{"object", "null"},
			AdditionalProperties: &jsonSchema{
				Description: "how the metric is judged",
				Type:        schemaTypes{"object"},
				Properties: properties{
					{"better", &jsonSchema{Description: "which way is better", Type: schemaTypes{"string"}, Enum: anys(BetterHigher, BetterLower)}},
					{"tolerance", &jsonSchema{Description: "the change never judged, in percent: \"3%\" or 3", Type: schemaTypes{"string", "number"}, Pattern: `^\s*[0-9]+(\.[0-9]+)?\s*%?\s*$`}},
				},
				AdditionalProperties: false,
			},
		}
	},
	reflect.TypeFor[TelemetrySpec](): func() *jsonSchema {
		interval := &jsonSchema{Description: "the time between samples, from 100ms to 1h (default 1s), or off", Type: schemaTypes{"string"}, Pattern: `^(off|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`}
		return &jsonSchema{AnyOf: []*jsonSchema{
			{Type: schemaTypes{"string"}, Enum: anys("off")},
			{Type: schemaTypes{"boolean"}, Enum: anys(false)},
			{Type: schemaTypes{"object"}, Properties: properties{{"interval", interval}}, AdditionalProperties: false},
			{Type: schemaTypes{"null"}},
		}}
	},
	reflect.TypeFor[ArgsSpec](): func() *jsonSchema {
		return &jsonSchema{Type: schemaTypes{"string", "array", "null"}, Items: &jsonSchema{Type: schemaTypes{"string"}}}
	},
}

// schemaRules add to the schema of a field, by its path: "[]" stands for every item of a
// list. Schema fails when a rule's path is not a field of the manifest.
var schemaRules = map[string]func(*jsonSchema){
	"": func(s *jsonSchema) {
		s.Required = []string{"name"}
		s.AnyOf = []*jsonSchema{{Required: []string{"benchmarks"}}, {Required: []string{"models"}}}
		s.PatternProperties = properties{{"^x-", &jsonSchema{Description: "An extension: benchctl ignores top-level keys that start with x- (a place for values to anchor, e.g. x-env: &env {...})."}}}
	},
	"version":                       schemaEnum(1),
	"name":                          schemaPattern(imageNameRE().String(), 63),
	"image":                         schemaImage(false),
	"image.pull":                    schemaEnum("missing", "always", "never"),
	"image.target":                  schemaPattern(targetRE().String(), 0),
	"image.platform":                schemaPattern(platformRE().String(), 0),
	"image.buildArgs":               schemaKeys(varNameRE().String()),
	"gpu.vendor":                    schemaEnum(VendorAMD, VendorNVIDIA, VendorNone, VendorAuto),
	"env":                           schemaKeys(varNameRE().String()),
	"passEnv[]":                     schemaPattern(globRE().String(), 0),
	"secrets[]":                     schemaPattern(varNameRE().String(), 0),
	"container.network":             schemaEnum("host", "none", "bridge"),
	"container.ipc":                 schemaEnum("host", "private", "shareable", "none"),
	"container.ulimits":             func(s *jsonSchema) { s.PropertyNames = &jsonSchema{Enum: anys(strings.Fields(ulimitNames)...)} },
	"benchmarks[]":                  func(s *jsonSchema) { s.Type, s.Required = schemaTypes{"object"}, []string{"name", "command"} },
	"benchmarks[].name":             schemaPattern(benchNameRE().String(), 100),
	"benchmarks[].command":          func(s *jsonSchema) { s.MinItems = ptr(1) },
	"benchmarks[].env":              schemaKeys(varNameRE().String()),
	"benchmarks[].onFailure":        schemaEnum(OnFailureAbort, OnFailureContinue),
	"benchmarks[].figures[].parser": schemaEnum(anys(figures.Parsers...)...),
	"benchmarks[].figures[].better": schemaEnum(figures.BetterHigh, figures.BetterLow),
	"benchmarks[].launcher":         schemaEnum(launcherEnum()...),
	"launcher":                      schemaEnum(launcherEnum()...),
	"ranksPerNode":                  func(s *jsonSchema) { s.Minimum, s.Maximum = ptr[int64](1), ptr[int64](MaxRanksPerNode) },
	"benchmarks[].ranksPerNode":     func(s *jsonSchema) { s.Minimum, s.Maximum = ptr[int64](1), ptr[int64](MaxRanksPerNode) },
	"benchmarks[].image":            schemaImage(true),
	"benchmarks[].image.pull":       schemaEnum("missing", "always", "never"),
	"benchmarks[].image.target":     schemaPattern(targetRE().String(), 0),
	"benchmarks[].image.platform":   schemaPattern(platformRE().String(), 0),
	"benchmarks[].image.buildArgs":  schemaKeys(varNameRE().String()),
	"models": func(s *jsonSchema) {
		s.Required = []string{"catalog"}
		s.AnyOf = []*jsonSchema{{Required: []string{"tags"}}, {Required: []string{"names"}}}
	},
	"models.gpuVendor": func(s *jsonSchema) {
		// Read case-insensitively (madengine's CONTEXT lines say AMD, NVIDIA): the enum
		// completes, the pattern accepts the other spellings.
		s.AnyOf = []*jsonSchema{{Enum: anys(VendorAMD, VendorNVIDIA)}, {Pattern: "^([aA][mM][dD]|[nN][vV][iI][dD][iI][aA])$"}}
	},
	"slurm.nodes":       func(s *jsonSchema) { s.Minimum = ptr[int64](1) },
	"slurm.gpusPerNode": func(s *jsonSchema) { s.Minimum = ptr[int64](0) },
	"experiment.repeat": func(s *jsonSchema) { s.Minimum, s.Maximum = ptr[int64](1), ptr[int64](MaxTrials) },
	"experiment.warmup": func(s *jsonSchema) { s.Minimum, s.Maximum = ptr[int64](0), ptr[int64](MaxTrials) },
	"experiment.order":  schemaEnum(OrderInterleave, OrderSequential, OrderShuffle),
	"distribution":      schemaEnum(DistributionAuto, DistributionCache, DistributionStream, DistributionRegistry),
	"engine":            schemaEnum(EngineDocker, EnginePodman),
	"runtime":           schemaEnum(RuntimeEngine, RuntimeProcess),
}

// schemaEnum allows only values (and null, where the field may be null).
func schemaEnum(values ...any) func(*jsonSchema) {
	return func(s *jsonSchema) {
		s.Enum = append([]any(nil), values...)
		for _, t := range s.Type {
			if t == "null" {
				s.Enum = append(s.Enum, nil)
			}
		}
	}
}

// schemaPattern is a resolver's regular expression (written so that Go and ECMAScript read it
// alike) and, unless 0, a maximum length.
func schemaPattern(re string, maxLen int) func(*jsonSchema) {
	return func(s *jsonSchema) {
		s.Pattern = re
		if maxLen > 0 {
			s.MaxLength = ptr(maxLen)
		}
	}
}

// schemaKeys checks the keys of a mapping (variable names).
func schemaKeys(re string) func(*jsonSchema) {
	return func(s *jsonSchema) { s.PropertyNames = &jsonSchema{Pattern: re} }
}

// schemaImage: dockerfile or ref, not both; a benchmark's own image must name one (the
// manifest's may name neither when the catalog gives the images).
func schemaImage(mustName bool) func(*jsonSchema) {
	return func(s *jsonSchema) {
		s.Not = &jsonSchema{Type: schemaTypes{"object"}, Required: []string{"dockerfile", "ref"}}
		if mustName {
			s.AnyOf = []*jsonSchema{{Required: []string{"dockerfile"}}, {Required: []string{"ref"}}}
		}
	}
}

func anys[T any](vs ...T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }
