package job_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// askedJobs records which job a read asked for and answers it as running.
type askedJobs struct {
	job.Jobs
	asked []job.ID
	lists int
}

func (a *askedJobs) Poll(_ context.Context, _ job.Owner, id job.ID, cur job.Cursors, wait time.Duration) (job.Polled, error) {
	a.asked = append(a.asked, id)
	if cur != (job.Cursors{}) || wait != 0 {
		panic("a job:// read must poll at zero cursors without waiting")
	}
	return job.Polled{Row: job.Row{ID: id, State: job.Running}}, nil
}

func (a *askedJobs) List(context.Context, job.Owner) (job.Listed, error) {
	a.lists++
	return job.Listed{}, nil
}

func FuzzReadURI(f *testing.F) {
	for _, s := range []string{"job://", "job:///", "job://j1-ab12", "job://j1/x", "cap://fs", "", "job:/j1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		a := &askedJobs{Jobs: job.NoPlane()}
		o := job.ReadURI(context.Background(), a, &tool.Call{Strand: "main"}, uri)
		rest, isJob := strings.CutPrefix(uri, job.SchemePrefix)
		rest = strings.Trim(rest, "/")
		switch {
		case !isJob:
			if detailCode(o) != string(tool.CodeUnknownScheme) || len(a.asked)+a.lists != 0 {
				t.Fatalf("%q: %q", uri, o.Text)
			}
		case rest == "":
			if o.IsError || a.lists != 1 || len(a.asked) != 0 {
				t.Fatalf("%q should list: %q", uri, o.Text)
			}
		case strings.ContainsAny(rest, "/?#"):
			if detailCode(o) != string(job.CodeMalformedJobURI) || len(a.asked)+a.lists != 0 {
				t.Fatalf("%q: %q", uri, o.Text)
			}
		default:
			if o.IsError || len(a.asked) != 1 || string(a.asked[0]) != rest {
				t.Fatalf("%q asked %q: %q", uri, a.asked, o.Text)
			}
		}
	})
}
