package codemode

import (
	"fmt"
	"strings"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// programOutput collects a program's output: stdout is its result,
// spooled to the blob store past blob.OverflowThreshold (or, with no
// store, kept as a head of that size); stderr is kept as a tail of
// maxStderrTailBytes; both are streamed to the call's output observer.
type programOutput struct {
	spool   *blob.Spool
	head    []byte
	total   int64  // stdout bytes
	stderr  []byte // the tail kept so far (at most 2×maxStderrTailBytes)
	errHead []byte // the first maxStderrHeadBytes of stderr
	errSeen int64  // stderr bytes written
	tails   map[sandbox.Stream]*job.Tail
	cutHead bool
}

func newProgramOutput(c *tool.Call) *programOutput {
	o := &programOutput{tails: map[sandbox.Stream]*job.Tail{sandbox.Stdout: job.NewTail(tool.TailBytes), sandbox.Stderr: job.NewTail(tool.TailBytes)}}
	if c.Blobs != nil {
		o.spool = c.Blobs.NewSpool()
	}
	return o
}

func (o *programOutput) add(c *tool.Call, out sandbox.Output) {
	if out.Stream == sandbox.Stderr {
		if n := min(len(out.Bytes), maxStderrHeadBytes-len(o.errHead)); n > 0 {
			o.errHead = append(o.errHead, out.Bytes[:n]...)
		}
		o.errSeen += int64(len(out.Bytes))
		o.stderr = append(o.stderr, out.Bytes...)
		if len(o.stderr) > 2*maxStderrTailBytes {
			o.stderr = append([]byte{}, o.stderr[len(o.stderr)-maxStderrTailBytes:]...)
		}
	} else {
		o.total += int64(len(out.Bytes))
		if o.spool != nil {
			o.spool.Write(out.Bytes) // an error is sticky and reported by finish
		} else {
			n := min(len(out.Bytes), blob.OverflowThreshold-len(o.head))
			o.head = append(o.head, out.Bytes[:n]...)
			o.cutHead = o.cutHead || n < len(out.Bytes)
		}
	}
	t := o.tails[out.Stream]
	t.Push(out.Bytes)
	w, _ := t.Since(t.Front())
	c.Observe(tool.OutputTail{Stream: out.Stream.String(), Tail: string(w.Bytes), TotalBytes: t.Received()})
}

// maxStderrHeadBytes is how much of the start of a program's stderr the
// result keeps beside its tail: a panic's or a fatal runtime error's
// first line is there.
const maxStderrHeadBytes = 1 << 10

// stderrText is the stderr to show: all of it when it fits in the head and
// the tail, else the head, a line saying how much was left out, and the
// tail.
func (o *programOutput) stderrText() string {
	if o.errSeen <= maxStderrHeadBytes+maxStderrTailBytes {
		return strings.ToValidUTF8(string(o.stderr), "\uFFFD") // all of it: the tail is trimmed only past 2×maxStderrTailBytes
	}
	tail := stderrTail(o.stderr)
	left := o.errSeen - int64(len(o.errHead)) - int64(len(tail))
	return strings.ToValidUTF8(string(o.errHead), "\uFFFD") + fmt.Sprintf("\n[… %d bytes of stderr left out …]\n", left) + tail
}

// finish returns the stdout to show and, when it spilled, its overflow
// record. A spill the session's blob budget refused
// (blob.CodeSpillBudget) is shown as its excerpts and a line saying it
// was not kept and why (Overflow.NotKept), not as a failure.
func (o *programOutput) finish() (string, *blob.Overflow, error) {
	if o.spool == nil {
		return string(o.head), nil, nil
	}
	inline, spilled, err := o.spool.Finish()
	if spilled != nil {
		return spilled.Text("stdout"), spilled, nil
	}
	if err != nil {
		return "", nil, err
	}
	return inline, nil, nil
}
