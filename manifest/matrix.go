package manifest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A matrix expands into variants the way GitHub Actions expands a job's strategy.matrix:
//
//  1. The product of the parameters' value lists, in the order written: the first
//     parameter varies slowest.
//  2. exclude removes every combination that matches an entry; an entry may name only some
//     parameters (a partial match is enough).
//  3. include entries are taken in order, after exclude (so an include can add back an
//     excluded combination). An entry is added to every combination of step 1 (left after
//     exclude) whose original values it does not contradict: its other keys are added, and
//     may overwrite what an earlier include added, never an original value. An entry that
//     fits no such combination becomes a combination of its own, which later entries never
//     extend.
//
// A matrix without parameters (only include) has no combinations of step 1: every include
// entry is a variant of its own.

// Param is one parameter's value in a variant: the value as written (a number keeps its
// spelling: 016 stays "016", 1e3 stays "1e3").
type Param struct {
	Name  string `json:"name" yaml:"name"`
	Value string `json:"value" yaml:"value"`
}

// MatrixParam is one parameter of a matrix and its values, in the order written.
type MatrixParam struct {
	Name   string
	Values []string
	Line   int
}

// MatrixEntry is an include or exclude entry: parameter values in the order written.
type MatrixEntry struct {
	Params []Param
	Line   int
}

// combination is one variant being expanded: its values by name and which names came from
// the product (original values, which include never overwrites).
type combination struct {
	params   []Param
	original map[string]bool
	at       map[string]int // name -> its index in params: get and set in constant time
}

func (c *combination) get(name string) (string, bool) {
	if i, ok := c.at[name]; ok {
		return c.params[i].Value, true
	}
	return "", false
}

func (c *combination) set(name, value string) {
	if i, ok := c.at[name]; ok {
		c.params[i].Value = value
		return
	}
	if c.at == nil {
		c.at = map[string]int{}
	}
	c.at[name] = len(c.params)
	c.params = append(c.params, Param{name, value})
}

// newCombination is a combination of params.
func newCombination(params []Param) *combination {
	c := &combination{}
	for _, p := range params {
		c.set(p.Name, p.Value)
	}
	return c
}

// productSize is how many combinations step 1 gives, or ok false when it exceeds max (a
// matrix of 40 parameters of 10 values is refused before anything is expanded).
func productSize(params []MatrixParam, max int) (n int, ok bool) {
	if len(params) == 0 {
		return 0, true
	}
	n = 1
	for _, p := range params {
		if len(p.Values) == 0 {
			return 0, true
		}
		if n > max/len(p.Values) {
			return math.MaxInt, false
		}
		n *= len(p.Values)
	}
	return n, n <= max
}

// expandMatrix returns the variants of a matrix, each's parameters sorted by name, or an
// error when there would be more than max. The matrix's parameters and entries must already
// be valid (names, values, exclude keys among the parameters).
func expandMatrix(ctx context.Context, params []MatrixParam, include, exclude []MatrixEntry, max int) ([][]Param, error) {
	steps := 0
	stopped := func() error { // checked every 4,096 steps: a huge matrix ends at the first signal
		if steps++; steps%4096 == 0 && ctx.Err() != nil {
			return fmt.Errorf("expanding the matrix: %w", context.Cause(ctx))
		}
		return nil
	}
	n, ok := productSize(params, max)
	if !ok {
		return nil, fmt.Errorf("the matrix has %s combinations before exclude; at most %d variants are allowed: split the experiment into several jobs, or list the variants you want with include", countText(params), max)
	}
	var combos []*combination
	if n > 0 {
		idx := make([]int, len(params))
		for {
			if err := stopped(); err != nil {
				return nil, err
			}
			c := &combination{original: map[string]bool{}}
			for i, p := range params {
				c.set(p.Name, p.Values[idx[i]])
				c.original[p.Name] = true
			}
			if !excluded(c, exclude) {
				combos = append(combos, c)
			}
			// The last parameter varies fastest.
			i := len(params) - 1
			for ; i >= 0; i-- {
				if idx[i]++; idx[i] < len(params[i].Values) {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	base := len(combos)
	for _, e := range include {
		fits := false
		for _, c := range combos[:base] {
			if err := stopped(); err != nil {
				return nil, err
			}
			if contradicts(c, e) {
				continue
			}
			fits = true
			for _, p := range e.Params {
				if !c.original[p.Name] {
					c.set(p.Name, p.Value)
				}
			}
		}
		if !fits {
			combos = append(combos, newCombination(e.Params))
			if len(combos) > max { // said now: the rest of a long include list is not walked
				return nil, fmt.Errorf("the matrix gives more than %d variants (include adds one for each entry that fits no combination); at most %d are allowed", max, max)
			}
		}
	}
	if len(combos) > max {
		return nil, fmt.Errorf("the matrix gives %d variants; at most %d are allowed", len(combos), max)
	}
	out := make([][]Param, len(combos))
	for i, c := range combos {
		ps := slices.Clone(c.params)
		slices.SortFunc(ps, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
		out[i] = ps
	}
	return out, nil
}

// excluded reports whether an exclude entry matches c: every value it names is c's.
func excluded(c *combination, exclude []MatrixEntry) bool {
	for _, e := range exclude {
		match := true
		for _, p := range e.Params {
			if v, ok := c.get(p.Name); !ok || v != p.Value {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// contradicts reports whether an include entry names another value for one of c's original
// parameters.
func contradicts(c *combination, e MatrixEntry) bool {
	for _, p := range e.Params {
		if c.original[p.Name] {
			if v, _ := c.get(p.Name); v != p.Value {
				return true
			}
		}
	}
	return false
}

// countText is the product of the value counts as written (2 × 3 × 10 ...), for a message.
func countText(params []MatrixParam) string {
	var parts []string
	for _, p := range params {
		parts = append(parts, fmt.Sprint(len(p.Values)))
	}
	return strings.Join(parts, " × ")
}
