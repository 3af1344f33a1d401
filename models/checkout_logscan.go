package models

import (
	"slices"
	"strings"

	"github.com/benchctl/benchctl/logscan"
	"github.com/benchctl/benchctl/manifest/document"
)

// logKey reads madengine's log error scan keys of the context into the manifest's logScan:
// log_error_pattern_scan (a boolean, or its text) is logScan.enabled, log_error_patterns
// (a non-empty list) replaces the error patterns (logScan.errors, which wins over a model's
// own, as the context wins in madengine), and log_error_benign_patterns is added to the
// default benign lines of a MAD model (logscan.MadengineBenign: logScan.benign; a
// model's own are added to these at run time).
func (c *madContext) logKey(key string, v *document.Node, bad func(p, format string, args ...any)) {
	if c.logScan == nil {
		c.logScan = map[string]any{}
	}
	if key == "log_error_pattern_scan" {
		s := strings.ToLower(v.Value)
		switch {
		case v.Kind == document.ScalarNode && (s == "true" || s == "1" || s == "yes"):
			c.logScan["enabled"] = true
		case v.Kind == document.ScalarNode && (s == "false" || s == "0" || s == "no"):
			c.logScan["enabled"] = false
		default:
			bad(key, "must be true or false, got %s", describe(v))
		}
		return
	}
	list, msg := patternList(v)
	if msg != "" {
		bad(key, "%s", msg)
		return
	}
	if key == "log_error_patterns" {
		if len(list) == 0 {
			bad(key, `is empty: it replaces the default error patterns; to turn the scan off, give "log_error_pattern_scan": false`)
			return
		}
		c.logScan["errors"] = list
		return
	}
	c.logScan["benign"] = append(slices.Clone(logscan.MadengineBenign), list...)
}
