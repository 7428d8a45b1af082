// Command client calls every cap function from 16 goroutines at once,
// then exercises error results, a malformed result, cancellation and the
// host's outcome frame (or, with argument "close", the channel closing),
// printing one line per result for prelude_client_test.go to check.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"cap/fs"
	"cap/job"
	"cap/kv"
	"cap/proc"
	"cap/report"
	"cap/search"
)

func code(err error) string {
	var e *proc.Error // one type: a proc.Error catches an fs or kv failure too
	if errors.As(err, &e) {
		return e.Cap + " " + e.Code + " " + e.Message
	}
	return fmt.Sprint(err)
}

func calls(ctx context.Context, g int, say func(string, ...any)) {
	p := fmt.Sprintf("p%d", g)
	f, err := fs.Read(ctx, p)
	say("%d fs.read %v %s %q %d", g, err, f.Path, f.Content, f.Size)
	l, err := fs.List(ctx, p)
	say("%d fs.list %v %s %v %t", g, err, l.Path, l.Entries, l.Truncated)
	w, err := fs.Write(ctx, p, []byte("w"+p))
	say("%d fs.write %v %s %d %t", g, err, w.Path, w.Bytes, w.Created)
	e, err := fs.Edit(ctx, p, fs.Replacement{Find: "a", Replace: "b"}, fs.Replacement{Find: "c" + p, Replace: ""})
	say("%d fs.edit %v %s %d", g, err, e.Path, e.Replaced)
	gl, err := search.Glob(ctx, "*.go", p)
	say("%d search.glob %v %q %t", g, err, gl.Paths, gl.Truncated)
	gr, err := search.Grep(ctx, "x"+p, search.GrepOptions{Path: p, Glob: "*.go", IgnoreCase: true, MaxResults: g + 1})
	say("%d search.grep %v %v %t", g, err, gr.Matches, gr.Truncated)
	r, err := proc.Run(ctx, proc.Cmd{Argv: []string{"echo", p}, Dir: p, Stdin: []byte("in" + p), Timeout: time.Duration(g+1) * time.Millisecond})
	say("%d proc.run %v %d %q %q %t", g, err, r.Exit, r.Stdout, r.Stderr, r.Truncated)
	v, found, err := kv.Get(ctx, p)
	say("%d kv.get %v %q %t", g, err, v, found)
	err = kv.Set(ctx, p, []byte("v"+p))
	say("%d kv.set %v", g, err)
	del, err := kv.Delete(ctx, p)
	say("%d kv.delete %v %t", g, err, del)
	a, err := report.Emit(ctx, p, []byte("art"+p), "text/plain")
	say("%d report.emit %v %s %d", g, err, a.Digest, a.Bytes)
	h, err := job.Start(ctx, "cmd"+p, p)
	say("%d job.start %v %s", g, err, h)
	s, err := job.Poll(ctx, h, job.PollOptions{Cursor: "c" + p, Wait: time.Duration(g+1) * time.Second})
	say("%d job.poll %v %s %q %q %s %d %t", g, err, s.State, s.Stdout, s.Stderr, s.Cursor, s.Exit, s.HasExit)
	js, err := job.List(ctx)
	say("%d job.list %v %v", g, err, js)
	n, err := job.Send(ctx, h, []byte("input"+p), g%2 == 0)
	say("%d job.send %v %d", g, err, n)
	k, err := job.Kill(ctx, h)
	say("%d job.kill %v %s %d %t", g, err, k.State, k.Exit, k.HasExit)
}

func main() {
	ctx := context.Background()
	if len(os.Args) > 1 && os.Args[1] == "close" {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = kv.Get(ctx, fmt.Sprintf("c%d", i))
			}()
		}
		wg.Wait()
		for _, err := range errs {
			fmt.Println("pending:", code(err))
		}
		_, _, err := kv.Get(ctx, "later")
		fmt.Println("later:", code(err))
		return
	}

	var mu sync.Mutex
	var lines []string
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, a...))
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls(ctx, g, say)
		}()
	}
	wg.Wait()
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}

	_, err := fs.Read(ctx, "missing")
	fmt.Println("missing:", code(err))
	_, err = fs.Read(ctx, "bad")
	fmt.Println("bad:", code(err))

	cctx, cancel := context.WithCancel(ctx)
	blocked := make(chan error, 1)
	go func() {
		_, _, err := kv.Get(cctx, "block")
		blocked <- err
	}()
	_, _, err = kv.Get(ctx, "probe") // answered once the host holds "block"
	fmt.Println("probe:", err)
	cancel()
	err = <-blocked
	fmt.Println("block:", code(err), errors.Is(err, context.Canceled))
	v, _, err := kv.Get(ctx, "after-cancel")
	fmt.Printf("after-cancel: %v %s\n", err, v)
	_, _, err = kv.Get(cctx, "never")
	fmt.Println("never:", code(err), errors.Is(err, context.Canceled))

	var pw sync.WaitGroup
	perrs := make([]error, 2)
	for i := range perrs {
		pw.Add(1)
		go func() {
			defer pw.Done()
			_, _, perrs[i] = kv.Get(ctx, fmt.Sprintf("pending-%d", i))
		}()
	}
	pw.Wait()
	for _, err := range perrs {
		fmt.Println("pending:", code(err))
	}
	_, _, err = kv.Get(ctx, "later")
	fmt.Println("later:", code(err))
}
