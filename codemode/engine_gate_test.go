package codemode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestGateFollowsTheRegistrysHolds: a strand that holds code_mode but not
// bash cannot run a command or start a job through a program, and one
// that does not hold fs_write cannot write; reads stay open. The same
// program under an ungated registry does all of it (the control).
func TestGateFollowsTheRegistrysHolds(t *testing.T) {
	t.Parallel()
	src := mainWith([]string{"context", "errors", "fmt", "cap/fs", "cap/job", "cap/proc"}, `ctx := context.Background()
	code := func(err error) string {
		var e *fs.Error
		if errors.As(err, &e) {
			return e.Code
		}
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	_, err := proc.Run(ctx, proc.Cmd{Argv: []string{"true"}})
	fmt.Println("proc.run", code(err))
	_, err = job.Start(ctx, "true", "")
	fmt.Println("job.start", code(err))
	_, err = fs.Write(ctx, "w.txt", []byte("x"))
	fmt.Println("fs.write", code(err))
	_, err = fs.Read(ctx, "r.txt")
	fmt.Println("fs.read", code(err))`)
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprint("gated=", gated), func(t *testing.T) {
			t.Parallel()
			s := newSession(t, map[string]string{"r.txt": "r"})
			if gated {
				s.reg.SetHolds(func(_ context.Context, _, name string) bool { return name != "bash" && name != "fs_write" })
			}
			res := s.mustRun(t, src)
			want := "proc.run ok\njob.start ok\nfs.write ok\nfs.read ok\n"
			if gated {
				want = strings.NewReplacer("proc.run ok", "proc.run "+string(tool.CodeToolNotHeld),
					"job.start ok", "job.start "+string(tool.CodeToolNotHeld),
					"fs.write ok", "fs.write "+string(tool.CodeToolNotHeld)).Replace(want)
			}
			if res.Stdout != want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", res.Stdout, want)
			}
		})
	}
}

// TestProcAndJobsThroughAProgram: proc.run honours argv, stdin, dir and
// a timeout, confined as bash would be; a job started from a program is
// polled to its end.
func TestProcAndJobsThroughAProgram(t *testing.T) {
	t.Parallel()
	s := newSession(t, map[string]string{"sub/f.txt": "in sub\n"})
	res := s.mustRun(t, mainWith([]string{"context", "fmt", "strings", "time", "cap/job", "cap/proc"}, `ctx := context.Background()
	r, err := proc.Run(ctx, proc.Cmd{Argv: []string{"sh", "-c", "cat; cat f.txt; echo err >&2; exit 3"}, Dir: "sub", Stdin: []byte("from stdin\n")})
	fmt.Printf("run: %v exit=%d out=%q err=%q\n", err, r.Exit, r.Stdout, r.Stderr)
	r, err = proc.Run(ctx, proc.Cmd{Argv: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond})
	fmt.Printf("timeout: %v exit=%d\n", err, r.Exit)
	r, err = proc.Run(ctx, proc.Cmd{Argv: []string{"cat", "/etc/shadow"}})
	fmt.Printf("secret: %v exit=%d leaked=%v\n", err, r.Exit, strings.Contains(string(r.Stdout), "root:"))
	h, err := job.Start(ctx, "echo from a job", "")
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	st, err := job.Poll(ctx, h, job.PollOptions{Wait: 10 * time.Second})
	for err == nil && (st.State == "running" || st.State == "starting") {
		st, err = job.Poll(ctx, h, job.PollOptions{Cursor: st.Cursor, Wait: 10 * time.Second})
	}
	fmt.Printf("job: %v state=%s\n", err, st.State)`))
	for _, want := range []string{
		`run: <nil> exit=3 out="from stdin\nin sub\n" err="err\n"`,
		"timeout: <nil> exit=-1",
		"leaked=false",
		"job: <nil> state=exited",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.Stdout)
		}
	}
}

// TestFileRefusalsSpeakToAProgram: a program's fs refusals keep the file
// tools' codes but name what a program can do (fs.List, fs.Write), not
// the tools it cannot call.
func TestFileRefusalsSpeakToAProgram(t *testing.T) {
	t.Parallel()
	s := newSession(t, map[string]string{"dir/a.txt": "a"})
	res := s.mustRun(t, mainWith([]string{"context", "errors", "fmt", "cap/fs"}, `ctx := context.Background()
	for _, p := range []string{"missing.txt", "dir", "/etc/hostname"} {
		_, err := fs.Read(ctx, p)
		var e *fs.Error
		errors.As(err, &e)
		fmt.Println(e.Code, "|", e.Message)
	}`))
	for _, want := range []string{"not_found | \"missing.txt\" does not exist", "create the file with fs.Write", "is_a_directory | \"dir\" is a directory: list it with fs.List", "outside_roots | \"/etc/hostname\" is outside", "declare it in the code_mode call's permissions"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.Stdout)
		}
	}
	for _, tool := range []string{"bash", "fs_write"} {
		if strings.Contains(res.Stdout, tool) {
			t.Errorf("a program is told about %s:\n%s", tool, res.Stdout)
		}
	}
}
