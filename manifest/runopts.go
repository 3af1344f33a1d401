package manifest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/internal/shellwords"
	"github.com/benchctl/benchctl/manifest/document"
)

// RunOptions are the docker-run flags benchmarks really use, parsed from a manifest's
// container.extraOptions (or madengine's additional_docker_run_options) into the typed
// settings benchctl gives the Engine API. Nothing is passed through unparsed.
type RunOptions struct {
	ShmSize     string
	IPC         string
	Network     string
	User        string
	CapAdd      []string
	SecurityOpt []string
	Devices     []string
	GroupAdd    []string
	Ulimits     map[string]Ulimit
	Env         map[string]string
	Volumes     []string
}

// runFlags are the accepted flags and their long names.
var runFlags = map[string]string{
	"--shm-size": "--shm-size", "--ipc": "--ipc", "--network": "--network", "--net": "--network",
	"--user": "--user", "-u": "--user", "--cap-add": "--cap-add", "--security-opt": "--security-opt",
	"--device": "--device", "--group-add": "--group-add", "--ulimit": "--ulimit",
	"--env": "--env", "-e": "--env", "--volume": "--volume", "-v": "--volume",
}

// RunFlags lists the flags ParseRunOptions accepts, for messages.
const RunFlags = "--shm-size, --ipc, --network (--net), --user (-u), --cap-add, --security-opt, --device, --group-add, --ulimit, --env (-e), --volume (-v)"

var (
	groupRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([a-z_][a-z0-9_-]{0,31}|[0-9]{1,10})$`) })
	envNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	ulimitRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([a-z]+)=(-?[0-9]+)(?::(-?[0-9]+))?$`) })
	securityOK = map[string]bool{"seccomp=unconfined": true, "apparmor=unconfined": true, "label=disable": true,
		"no-new-privileges": true, "no-new-privileges=true": true, "no-new-privileges:true": true,
		"no-new-privileges=false": true, "no-new-privileges:false": true, "systempaths=unconfined": true}
)

// OptionError is a flag ParseRunOptions refuses.
type OptionError struct {
	Flag string
	Msg  string
}

func (e *OptionError) Error() string { return e.Flag + ": " + e.Msg }

// ParseRunOptions parses docker-run flags given as words ("--shm-size=16g", or "--ipc",
// "host"). Every flag must be one of RunFlags, with a value that benchctl can express;
// anything else is an *OptionError naming it.
func ParseRunOptions(args []string) (RunOptions, error) {
	var o RunOptions
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			// -eK=V, -v/a:/b, -e=K=V: the value is glued to a one-letter flag
			name, val, hasVal = a[:2], strings.TrimPrefix(a[2:], "="), true
		}
		long, ok := runFlags[name]
		if !ok {
			if !strings.HasPrefix(a, "-") {
				return o, &OptionError{Flag: a, Msg: "is not a flag (a value without its flag?)"}
			}
			return o, &OptionError{Flag: name, Msg: "is not supported: benchctl accepts " + RunFlags + " and maps each onto the Engine API; the others have a field of their own in the manifest, or no place in a benchmark container"}
		}
		if !hasVal {
			if i+1 >= len(args) {
				return o, &OptionError{Flag: name, Msg: "needs a value"}
			}
			i++
			val = args[i]
		}
		if err := o.set(long, val); err != nil {
			return o, &OptionError{Flag: name + " " + val, Msg: err.Error()}
		}
	}
	return o, nil
}

func (o *RunOptions) set(flag, v string) error {
	one := func(p *string) error {
		if *p != "" && *p != v {
			return fmt.Errorf("is given twice, with %q and %q", *p, v)
		}
		*p = v
		return nil
	}
	switch flag {
	case "--shm-size":
		if _, err := ParseByteSize(v); err != nil {
			return err
		}
		return one(&o.ShmSize)
	case "--ipc":
		return one(&o.IPC)
	case "--network":
		return one(&o.Network)
	case "--user":
		return one(&o.User)
	case "--cap-add":
		o.CapAdd = append(o.CapAdd, v)
	case "--security-opt":
		if !securityOK[v] {
			return fmt.Errorf("is not supported (allowed: seccomp=unconfined, apparmor=unconfined, label=disable, systempaths=unconfined, no-new-privileges[=true|false]; a seccomp profile file is not read)")
		}
		o.SecurityOpt = append(o.SecurityOpt, v)
	case "--device":
		o.Devices = append(o.Devices, v)
	case "--group-add":
		if !groupRE().MatchString(v) {
			return fmt.Errorf("is not a group name or id")
		}
		o.GroupAdd = append(o.GroupAdd, v)
	case "--ulimit":
		m := ulimitRE().FindStringSubmatch(v)
		if m == nil {
			return fmt.Errorf("is not a ulimit (NAME=SOFT[:HARD], e.g. memlock=-1:-1)")
		}
		var u Ulimit
		fmt.Sscan(m[2], &u.Soft)
		u.Hard = u.Soft
		if m[3] != "" {
			fmt.Sscan(m[3], &u.Hard)
		}
		if o.Ulimits == nil {
			o.Ulimits = map[string]Ulimit{}
		}
		o.Ulimits[m[1]] = u
	case "--env":
		k, val, ok := strings.Cut(v, "=")
		if !envNameRE().MatchString(k) {
			return fmt.Errorf("is not NAME=VALUE")
		}
		if !ok {
			return fmt.Errorf("has no value: benchctl does not copy host variables this way; give NAME=VALUE, or list the name under passEnv")
		}
		if o.Env == nil {
			o.Env = map[string]string{}
		}
		o.Env[k] = val
	case "--volume":
		o.Volumes = append(o.Volumes, v)
	}
	return nil
}

// ArgsSpec is a list of command-line words, written as a list of strings or as one string
// that is split like a shell splits words (quotes honoured, nothing expanded).
type ArgsSpec struct {
	Args []string
	Line int
	Set  bool
}

func (a *ArgsSpec) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	a.Line = n.Line
	switch {
	case n.Kind == document.NullNode:
		return
	case n.Kind == document.ScalarNode && n.Tag == document.TagStr:
		words, err := shellwords.Split(n.Value)
		if err != nil {
			d.Problems.At(n.Line, path, "%v", err)
			return
		}
		a.Args, a.Set = words, true
	case n.Kind == document.SeqNode:
		for i, it := range n.Items {
			if it.Kind != document.ScalarNode || it.Tag != document.TagStr {
				d.Problems.At(it.Line, document.Index(path, i), "must be a string, got %s", it.Describe())
				continue
			}
			a.Args = append(a.Args, it.Value)
		}
		a.Set = true
	default:
		d.Problems.At(n.Line, path, "must be a string of docker-run flags or a list of words, got %s", n.Describe())
	}
}

// extraOptions parses container.extraOptions and merges them into s — the container's
// fields, env and mounts — before those are resolved, so that every value is checked as
// if written in its own field. A flag that disagrees with a field of the manifest is a
// problem naming both.
func (r *resolver) extraOptions(s *Spec) *RunOptions {
	x := s.Container.ExtraOptions
	if !x.Set {
		return nil
	}
	fp := "container.extraOptions"
	o, err := ParseRunOptions(x.Args)
	if err != nil {
		r.p.Add(fp, "%v", err)
		return nil
	}
	r.mergeOptions(s, o, fp, x.Line)
	return &o
}

// mergeOptions merges parsed docker-run flags into s — the container's fields, env and
// mounts — before those are resolved; fp names where the flags came from in problems.
func (r *resolver) mergeOptions(s *Spec, o RunOptions, fp string, line int) {
	c := &s.Container
	scalar := func(field string, dst *string, v string) {
		switch {
		case v == "":
		case *dst == "":
			*dst = v
		case *dst != v:
			r.p.Add(fp, "sets %s %q, but container.%s is %q: give it in one place", field, v, field, *dst)
		}
	}
	scalar("ipc", &c.IPC, o.IPC)
	scalar("network", &c.Network, o.Network)
	scalar("user", &c.User, o.User)
	if o.ShmSize != "" {
		b, _ := ParseByteSize(o.ShmSize)
		switch {
		case c.ShmSize.Bytes == 0:
			c.ShmSize = ByteSize{Bytes: b, Text: o.ShmSize}
		case c.ShmSize.Bytes != b:
			r.p.Add(fp, "sets shmSize %q, but container.shmSize is %q: give it in one place", o.ShmSize, c.ShmSize.Text)
		}
	}
	c.CapAdd = append(c.CapAdd, o.CapAdd...)
	c.Devices = append(c.Devices, o.Devices...)
	for k, u := range o.Ulimits {
		if c.Ulimits == nil {
			c.Ulimits = map[string]Ulimit{}
		}
		if old, ok := c.Ulimits[k]; ok && old != u {
			r.p.Add(fp, "sets ulimit %s, but container.ulimits.%s differs: give it in one place", k, k)
			continue
		}
		c.Ulimits[k] = u
	}
	for k, v := range o.Env {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		if old, ok := s.Env[k]; ok && old != v {
			r.p.Add(fp, "sets %s=%q, but env sets %s=%q: give it in one place", k, v, k, old)
			continue
		}
		s.Env[k] = v
	}
	for _, v := range o.Volumes {
		parts := splitMount(v)
		named := len(parts) > 0 && !strings.HasPrefix(parts[0], "/") && !strings.HasPrefix(parts[0], ".") && !strings.HasPrefix(parts[0], "$")
		if named || len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw") {
			r.p.Add(fp, "-v %s is not a bind mount (SOURCE:TARGET[:ro|rw], SOURCE a path; named volumes and other options are not supported)", document.Quote(v))
			continue
		}
		s.Mounts = append(s.Mounts, MountSpec{Source: parts[0], Target: parts[1], ReadOnly: len(parts) == 3 && parts[2] == "ro", Line: line})
	}
}

// modelOptions gives the MAD models that carry additional_docker_run_options their own
// container settings, env and mounts: the manifest's, with the model's flags merged in and
// checked as the manifest's are.
func (r *resolver) modelOptions(s *Spec, m *Manifest, b *Benchmark) {
	if b.Model == nil || strings.TrimSpace(b.Model.RunOptions) == "" {
		return
	}
	fp := fmt.Sprintf("models: %s (%s:%d): additional_docker_run_options", b.Name, b.Model.Catalog, b.Model.Line)
	args, err := shellwords.Split(b.Model.RunOptions)
	if err != nil {
		r.p.Add(fp, "%v", err)
		return
	}
	o, err := ParseRunOptions(args)
	if err != nil {
		r.p.Add(fp, "%v", err)
		return
	}
	own := *s // the manifest's spec (with its own extraOptions merged), copied
	own.Container.CapAdd = append([]string(nil), s.Container.CapAdd...)
	own.Container.Devices = append([]string(nil), s.Container.Devices...)
	own.Container.Ulimits = map[string]Ulimit{}
	for k, v := range s.Container.Ulimits {
		own.Container.Ulimits[k] = v
	}
	own.Env = map[string]string{}
	for k, v := range s.Env {
		own.Env[k] = v
	}
	own.Mounts = append([]MountSpec(nil), s.Mounts...)
	before := r.p.Count()
	r.mergeOptions(&own, o, fp, 0)
	c := r.container(own.Container)
	c.SecurityOpt = append(append([]string(nil), m.Container.SecurityOpt...), o.SecurityOpt...)
	c.GroupAdd = append(append([]string(nil), m.Container.GroupAdd...), o.GroupAdd...)
	mounts := r.mounts(own.Mounts)
	var env map[string]string
	for k, v := range o.Env {
		if _, ok := s.Env[k]; !ok {
			if env == nil {
				env = map[string]string{}
			}
			env[k] = v
		}
	}
	extraEnv := r.env(fp+" -e", env)
	if r.p.Count() > before {
		return
	}
	b.Container, b.Mounts = &c, mounts
	b.Env = append(b.Env, extraEnv...)
}
