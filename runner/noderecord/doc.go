// Package noderecord reads what a node is for its node.json: the machine (kernel, OS, CPU,
// memory, NUMA, network), its GPUs (driver, runtime, models, firmware, links) and its
// engine. Reading never fails and is bounded in time; a fact that cannot be read is left
// empty and the record says why. A run writes it beside its images; doctor shows it.
package noderecord
