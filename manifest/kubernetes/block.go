// Package kubernetes is the manifest's kubernetes: block: how `benchctl submit --scheduler
// kubernetes` runs a job on a cluster (an Indexed Job, one pod per node), its fields and
// their checks. The objects themselves are scheduler/kubernetes's.
package kubernetes

import _ "embed"

// BlockSource is this file: its field comments are the manifest schema's descriptions of
// the block.
//
//go:embed block.go
var BlockSource []byte

// Block is the manifest's kubernetes: block; `benchctl submit`'s flags override it.
type Block struct {
	// Namespace is where the job's objects are made (default: the kubeconfig's, else
	// default).
	Namespace string `json:"namespace"`
	// ServiceAccount is the pods' service account (default: one made for the job, allowed
	// only to read the job's pods).
	ServiceAccount string `json:"serviceAccount"`
	// NodeSelector are labels a node must have to take one of the job's pods.
	NodeSelector map[string]string `json:"nodeSelector"`
	// Tolerations let the pods onto nodes with these taints.
	Tolerations []Toleration `json:"tolerations"`
	// PriorityClass is the pods' priority class.
	PriorityClass string `json:"priorityClass"`
	// CPU is each pod's CPU request and limit, in Kubernetes quantities ("16", "500m").
	CPU string `json:"cpu"`
	// Memory is each pod's memory request and limit ("64Gi").
	Memory string `json:"memory"`
	// GPUResource is the extended resource a node offers its GPUs as (default:
	// nvidia.com/gpu or amd.com/gpu, by gpu.vendor); each pod asks for gpu.count of it.
	GPUResource string `json:"gpuResource"`
	// ResultsClaim is the ReadWriteMany volume claim the pods write their node folders to.
	ResultsClaim string `json:"resultsClaim"`
	// ResultsHostPath is a folder of the nodes instead of a claim (a cluster of one machine,
	// or a shared file system mounted on every node).
	ResultsHostPath string `json:"resultsHostPath"`
	// Network is host (the nodes' own network, the default: NCCL, RCCL and MPI reach each
	// other directly) or pod (the cluster's pod network).
	Network string `json:"network"`
	// BenchctlImage is the image whose static benchctl an init container copies into each
	// pod, so that the benchmark's image runs unchanged (default: benchctl's image of this
	// version).
	BenchctlImage string `json:"benchctlImage"`
	// PendingTimeout is how long a pod may stay Pending before the job fails with the
	// cluster scheduler's reason: a duration such as "10m" (the default).
	PendingTimeout string `json:"pendingTimeout"`
}

// Toleration is one of the pods' tolerations, as Kubernetes writes it.
type Toleration struct {
	// Key is the taint's key ("" with operator Exists: every taint).
	Key string `json:"key"`
	// Operator is Equal (the default) or Exists.
	Operator string `json:"operator"`
	// Value is the taint's value (with Equal).
	Value string `json:"value"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute ("": every effect).
	Effect string `json:"effect"`
}
