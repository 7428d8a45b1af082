package job

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloom/loom/tool"
)

// SchemePrefix begins the virtual paths fs_read serves from a job plane:
// "job://" lists the caller's jobs and "job://<handle>" reads one.
const SchemePrefix = "job://"

// Codes of ReadURI's own refusals (a plane's refusals keep theirs).
const (
	// UnknownSchemeCode: the path is not under SchemePrefix.
	UnknownSchemeCode = "unknown_scheme"
	// MalformedURICode: the path is under SchemePrefix but names no job.
	MalformedURICode = "malformed_uri"
)

// ReadURI answers fs_read of a job:// path for the calling strand:
// "job://" lists its jobs, "job://<handle>" is a zero-wait poll from the
// oldest output kept. It starts at zero cursors and advances no state, so
// a host may treat the read as replay-safe, and it answers only the
// caller's own jobs.
func ReadURI(ctx context.Context, j Jobs, c *tool.Call, uri string) tool.Outcome {
	j = orNoPlane(j)
	rest, ok := strings.CutPrefix(uri, SchemePrefix)
	if !ok {
		return tool.Fail(UnknownSchemeCode, fmt.Sprintf("%q is not a %s path", uri, SchemePrefix))
	}
	rest = strings.Trim(rest, "/")
	o := c.JobOwner()
	if rest == "" {
		l, err := j.List(ctx, o)
		if err != nil {
			return RefusalOutcome("fs_read", err)
		}
		return renderList(l, c.Clock())
	}
	if strings.ContainsAny(rest, "/?#") {
		return tool.Fail(MalformedURICode, fmt.Sprintf("%q: a job path is %s<handle>, with nothing after the handle", uri, SchemePrefix))
	}
	p, err := j.Poll(ctx, o, ID(rest), Cursors{}, 0)
	if err != nil {
		return RefusalOutcome("fs_read", err)
	}
	return renderPoll(p, c.Clock())
}

// Scheme returns the job:// namespace for fs_read, served from the
// calling Call's Jobs plane:
//
//	reg.Register(tool.ReadTool(job.Scheme()))
func Scheme() tool.Scheme {
	return tool.Scheme{
		Name:     strings.TrimSuffix(SchemePrefix, "://"),
		Describe: "`job://` lists your background jobs and `job://<handle>` shows one's state and recent output without advancing anything.",
		Read: func(ctx context.Context, c *tool.Call, uri string) tool.Outcome {
			return ReadURI(ctx, c.Jobs, c, uri)
		},
	}
}
