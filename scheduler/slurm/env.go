package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// Task is what a Slurm task learns from its environment.
type Task struct {
	JobID   string
	Attempt int // SLURM_RESTART_COUNT: 0 on the first run, n after n requeues
	Rank    int
	World   int // tasks in the step
	Nodes   []string
	Host    string // this task's node (SLURMD_NODENAME)
	InStep  bool   // started by srun (false: the batch script itself)
}

// EnvError is a missing or garbled Slurm variable (invalid input, exit 4).
type EnvError struct {
	Var, Msg string
}

func (e *EnvError) Error() string { return e.Var + ": " + e.Msg }

// InvalidInput marks the error as bad input.
func (e *EnvError) InvalidInput() bool { return true }

// oneTaskPerNode explains the layout benchctl needs.
const oneTaskPerNode = "benchctl runs one task per node: submit with -N <nodes> --ntasks-per-node=1 " +
	"(or srun --ntasks-per-node=1); -n sets tasks, not nodes, and several tasks on a node would share its engine and GPUs"

// InSlurm reports whether the environment belongs to a Slurm job.
func InSlurm(lookup func(string) (string, bool)) bool {
	_, ok := lookup("SLURM_JOB_ID")
	return ok
}

// TaskFromEnv reads and checks the task environment: one task per node, rank within world,
// a node list that matches the node count.
func TaskFromEnv(lookup func(string) (string, bool)) (Task, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	first := func(keys ...string) (string, string) {
		for _, k := range keys {
			if v := get(k); v != "" {
				return k, v
			}
		}
		return keys[0], ""
	}
	num := func(k, v string, min int) (int, error) {
		if v == "" {
			return 0, &EnvError{k, "is not set (is this running inside a Slurm job step?)"}
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < min || !isDigits(v) {
			return 0, &EnvError{k, fmt.Sprintf("%q is not a whole number ≥ %d", v, min)}
		}
		return i, nil
	}
	var t Task
	t.JobID = get("SLURM_JOB_ID")
	if t.JobID == "" { // whether it can name a job folder is scheduler.Node.Complete's to check
		return t, &EnvError{"SLURM_JOB_ID", fmt.Sprintf("%q is not a job id", t.JobID)}
	}
	if v := get("SLURM_RESTART_COUNT"); v != "" {
		a, err := num("SLURM_RESTART_COUNT", v, 0)
		if err != nil {
			return t, err
		}
		t.Attempt = a
	}
	_, t.InStep = lookup("SLURM_STEP_ID")
	var err error
	nk, nv := first("SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES")
	if !t.InStep {
		nk, nv = first("SLURM_JOB_NUM_NODES", "SLURM_NNODES")
	}
	nodes, err := num(nk, nv, 1)
	if err != nil {
		return t, err
	}
	if !t.InStep {
		if nodes > 1 {
			return t, &EnvError{"SLURM_STEP_ID", fmt.Sprintf("not set: this is the batch script of a %d-node job; start benchctl on every node with srun (srun --ntasks-per-node=1 benchctl run ...)", nodes)}
		}
		t.World, t.Rank = 1, 0
	} else {
		wk, wv := first("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
		if t.World, err = num(wk, wv, 1); err != nil {
			return t, err
		}
		if t.Rank, err = num("SLURM_PROCID", get("SLURM_PROCID"), 0); err != nil {
			return t, err
		}
		if t.Rank >= t.World {
			return t, &EnvError{"SLURM_PROCID", fmt.Sprintf("%d is not below the task count %d", t.Rank, t.World)}
		}
		if t.World != nodes {
			return t, &EnvError{wk, fmt.Sprintf("%d tasks on %d nodes: %s", t.World, nodes, oneTaskPerNode)}
		}
		if pk, pv := first("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"); pv != "" {
			if most, err := maxTasksPerNode(pv); err != nil {
				return t, &EnvError{pk, err.Error()}
			} else if most > 1 {
				return t, &EnvError{pk, fmt.Sprintf("%q puts %d tasks on a node: %s", pv, most, oneTaskPerNode)}
			}
		}
	}
	lk, lv := first("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
	if !t.InStep {
		lk, lv = first("SLURM_JOB_NODELIST", "SLURM_NODELIST")
	}
	if lv == "" {
		return t, &EnvError{lk, "is not set"}
	}
	if t.Nodes, err = ExpandHostlist(lv); err != nil {
		return t, &EnvError{lk, err.Error()}
	}
	if len(t.Nodes) != nodes {
		return t, &EnvError{lk, fmt.Sprintf("lists %d hosts but %s is %d", len(t.Nodes), nk, nodes)}
	}
	t.Host = get("SLURMD_NODENAME")
	if t.Host == "" {
		t.Host = t.Nodes[t.Rank]
	}
	return t, nil
}

// maxTasksPerNode reads SLURM_TASKS_PER_NODE's format, e.g. "2(x3),1".
func maxTasksPerNode(s string) (int, error) {
	most := 0
	bad := fmt.Errorf("%q is not a tasks-per-node list (e.g. \"1(x4)\" or \"2,1\")", s)
	for _, part := range strings.Split(s, ",") {
		n, rep, repeated := strings.Cut(part, "(")
		if repeated {
			// "2(x3)": two tasks on each of three nodes.
			count, ok := strings.CutPrefix(rep, "x")
			count, closed := strings.CutSuffix(count, ")")
			if !ok || !closed || !isDigits(count) || count[0] == '0' {
				return 0, bad
			}
		}
		if !isDigits(n) {
			return 0, bad
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return 0, bad
		}
		most = max(most, v)
	}
	return most, nil
}
