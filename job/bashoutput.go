package job

import (
	"fmt"
	"regexp"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// bashOutput collects a command's combined output in bounded memory:
// into a blob spool when the host has a store, else into the first
// OverflowThreshold bytes plus a rolling tail.
type bashOutput struct {
	spool      *blob.Spool
	head       []byte // without a store: the first OverflowThreshold bytes
	tail       *Tail  // without a store: the last ExcerptBytes
	total      int64
	tails      map[sandbox.Stream]*Tail
	stderrTail []byte
}

func newBashOutput(c *tool.Call) *bashOutput {
	o := &bashOutput{tails: map[sandbox.Stream]*Tail{sandbox.Stdout: NewTail(tool.TailBytes), sandbox.Stderr: NewTail(tool.TailBytes)}}
	if c.Blobs != nil {
		o.spool = c.Blobs.NewSpool()
	} else {
		o.tail = NewTail(blob.ExcerptBytes)
	}
	return o
}

func (o *bashOutput) add(c *tool.Call, out sandbox.Output) {
	o.total += int64(len(out.Bytes))
	switch {
	case o.spool != nil:
		o.spool.Write(out.Bytes) // an error is sticky and reported by finish
	default:
		n := min(len(out.Bytes), blob.OverflowThreshold-len(o.head))
		o.head = append(o.head, out.Bytes[:n]...)
		o.tail.Push(out.Bytes)
	}
	if out.Stream == sandbox.Stderr {
		o.stderrTail = append(o.stderrTail, out.Bytes...)
		if len(o.stderrTail) > bashStderrTail {
			o.stderrTail = o.stderrTail[len(o.stderrTail)-bashStderrTail:]
		}
	}
	t := o.tails[out.Stream]
	t.Push(out.Bytes)
	w, _ := t.Since(t.Front())
	c.Observe(tool.OutputTail{Stream: out.Stream.String(), Tail: string(w.Bytes), TotalBytes: t.Received()})
}

// finish returns the text to show and, when the output spilled, its
// overflow record. A spill the session's blob budget refused
// (blob.CodeSpillBudget) is shown as its excerpts and a line saying the
// output was not kept and why (Overflow.NotKept), not as a failure.
func (o *bashOutput) finish() (string, *blob.Overflow, error) {
	if o.spool != nil {
		inline, spilled, err := o.spool.Finish()
		if spilled != nil {
			return spilled.Text("output"), spilled, nil
		}
		if err != nil {
			return "", nil, err
		}
		return inline, nil, nil
	}
	if o.total <= blob.OverflowThreshold {
		return string(o.head), nil, nil
	}
	o.tail.End()
	w, _ := o.tail.Since(o.tail.Front())
	head, _ := blob.Excerpts(o.head, blob.ExcerptBytes)
	omitted := o.total - int64(len(head)) - int64(len(w.Bytes))
	return fmt.Sprintf("%s\n[... %d bytes of output omitted: it is %d bytes in all, over the %d-byte inline limit, and this host keeps no overflow store ...]\n%s",
		head, omitted, o.total, blob.OverflowThreshold, w.Bytes), nil, nil
}

// permissionPattern matches the messages a refused file or network
// access produces.
var permissionPattern = regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|EACCES|EPERM|EROFS`)

// goModuleFetchPattern matches the go command failing to fetch a module
// file from a proxy at the dial ("mod@v1.2.3: Get \"https://…/@v/v1.2.3.zip\":
// dial tcp …"): the module is in no cache the sandbox reads and the
// command has no network. Its group is the module@version, when the line
// names one.
var goModuleFetchPattern = regexp.MustCompile(`(?:([^\s:"]{1,300}@v[^\s:"]{1,100}): )?Get "[^"\n]*/@v/[^"\s]+": dial (?:tcp|udp)`)

func goModuleUnreachable(stderr []byte) bool { return goModuleFetchPattern.Match(stderr) }

// goModuleHint tells the model how a module missing from every cache
// reaches the sandbox, naming the module@version stderr names (printable
// ASCII only, or not at all).
func goModuleHint(stderr []byte) string {
	what := "the module"
	if m := goModuleFetchPattern.FindSubmatch(stderr); m != nil && len(m[1]) > 0 && printableASCII(m[1]) {
		what = string(m[1])
	}
	return "hint: a Go module this command needs (" + what + ") is not in the module cache, and the sandbox has no network. " +
		"Either the host downloads it into its own module cache, outside the workspace (GOTOOLCHAIN=local go mod download " + what + "), " +
		"or call bash again with permissions {network: \"full\"} (the operator decides); downloads go to the sandbox's module cache, never the workspace.\n"
}

// printableASCII reports whether b holds only printable ASCII.
func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// gitLockPattern finds an absolute git lock path quoted in an error.
var gitLockPattern = regexp.MustCompile(`'(/[^'\n]*?/\.git)(/[^'\n]*)?\.lock'`)

func permissionError(stderr []byte) bool { return permissionPattern.Match(stderr) }

// permissionHint tells the model how to ask for more access in a fresh
// call. stderr never grants anything: a path it names is only suggested.
func permissionHint(stderr []byte) string {
	hint := "hint: the sandbox may have refused an access. If the command needs another directory or the network, " +
		"call bash again with permissions {readable_roots, writable_roots, network: \"full\"}; the operator decides."
	if m := gitLockPattern.FindSubmatch(stderr); m != nil {
		hint += fmt.Sprintf(" The git metadata directory %s may need to be in writable_roots.", m[1])
	}
	return hint + "\n"
}
