package job

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloom/loom/tool"
)

// schemePrefix begins the virtual paths fs_read serves from a job plane:
// "job://" lists the caller's jobs and "job://<handle>" reads one.
const schemePrefix = "job://"

// readURI answers fs_read of a job:// path for the calling strand over j
// (nil: NoPlane): "job://" lists its jobs, "job://<handle>" is a
// zero-wait poll from the oldest output kept; a path not under
// schemePrefix is refused with tool.CodeUnknownScheme, one with anything
// after the handle with CodeMalformedJobURI. It starts at zero cursors
// and advances no state, so a host may treat the read as replay-safe, and
// it answers only the caller's own jobs.
func readURI(ctx context.Context, j Jobs, c *tool.Call, uri string) tool.Outcome {
	j = orNoPlane(j)
	rest, ok := strings.CutPrefix(uri, schemePrefix)
	if !ok {
		return tool.Fail(tool.CodeUnknownScheme, fmt.Sprintf("%s is not a %s path", quote(uri), schemePrefix))
	}
	rest = strings.Trim(rest, "/")
	o := OwnerOf(c)
	if rest == "" {
		l, err := j.List(ctx, o)
		if err != nil {
			return refusalOutcome("fs_read", err)
		}
		return renderList(l, c.Clock())
	}
	if strings.ContainsAny(rest, "/?#") {
		return tool.Fail(CodeMalformedJobURI, fmt.Sprintf("%s: a job path is %s<handle>, with nothing after the handle", quote(uri), schemePrefix))
	}
	p, err := j.Poll(ctx, o, ID(rest), Cursors{}, 0)
	if err != nil {
		return refusalOutcome("fs_read", err)
	}
	return renderPoll(p, c.Clock())
}

// Scheme returns the job:// namespace for fs_read, served from j (nil:
// NoPlane, which refuses every read with CodeNoJobPlane):
//
//	reg.Register(tool.ReadTool(job.Scheme(plane)))
func Scheme(j Jobs) tool.Scheme {
	j = orNoPlane(j)
	return tool.Scheme{
		Name:     strings.TrimSuffix(schemePrefix, "://"),
		Describe: "`job://` lists your jobs; `job://<handle>` shows one without advancing it.",
		Read: func(ctx context.Context, c *tool.Call, uri string) tool.Outcome {
			return readURI(ctx, j, c, uri)
		},
	}
}
