// Package workspace is a MAD model's workspace as madengine lays it out: a folder of the
// node's own whose entries link to the model's checkout (mounted read-only), with the
// model's run directory a copy of its script's folder; and, when the model has run, the
// results file found where madengine looks and kept in the results folder.
package workspace
