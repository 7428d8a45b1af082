package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/sandbox"
)

// raises records what a call raised and answers each with answer.
type raises struct {
	mu     sync.Mutex
	got    []RaisedRefusal
	answer func(RaisedRefusal) Escalation
}

func (r *raises) hook(_ context.Context, rr RaisedRefusal) Escalation {
	r.mu.Lock()
	r.got = append(r.got, rr)
	r.mu.Unlock()
	return r.answer(rr)
}

func (r *raises) all() []RaisedRefusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RaisedRefusal(nil), r.got...)
}

// approve grants exactly what was wanted; refuse settles; short resumes
// with a grant for another path.
func approve(rr RaisedRefusal) Escalation {
	return Escalation{Resume: true, Grants: rr.Denial.Wanted}
}
func refuse(RaisedRefusal) Escalation { return Escalation{} }
func short(RaisedRefusal) Escalation {
	return Escalation{Resume: true, Grants: []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: "/nonexistent/elsewhere"}}}
}

// accessArgs are a tool's arguments for path, whose current content is
// old: a read, a whole write of "NEW\n", or an edit appending "NEW".
func accessArgs(tool, path, old string) map[string]any {
	switch tool {
	case "fs_write":
		return map[string]any{"path": path, "content": "NEW\n"}
	case "fs_edit":
		return map[string]any{"path": path, "digest": hashline.Digest([]byte(old)),
			"hunks": []any{map[string]any{"op": "append", "lines": []string{"NEW"}}}}
	}
	return map[string]any{"path": path}
}

// TestFileToolsAskForTheirTarget: each file tool, given a target outside
// the session's roots, raises one refusal naming exactly that target
// (read for fs_read, write for fs_write and fs_edit), goes on with it
// alone when the host approves, and otherwise leaves it untouched and
// names the real remedy. Protected entries are never raised.
func TestFileToolsAskForTheirTarget(t *testing.T) {
	const old = "THE-CONTENT\n"
	for _, tool := range []string{"fs_read", "fs_write", "fs_edit"} {
		wantKind := sandbox.GrantWritableRoot
		if tool == "fs_read" {
			wantKind = sandbox.GrantReadableRoot
		}
		for _, tc := range []struct {
			name string
			// setup returns the path argument and the file that is its
			// target (empty: the tool must not raise).
			setup   func(c *Call, outside string) (arg, target string)
			answer  func(RaisedRefusal) Escalation
			noHook  bool
			code    Code   // "" means success
			wcode   Code   // the code of fs_write and fs_edit, when not code
			says    string // in the answer's text
			raised  int
			changed bool // the target now holds what the tool wrote
		}{
			{name: "approved", answer: approve, raised: 1, changed: true,
				setup: func(c *Call, outside string) (string, string) {
					return outside + "/secret.txt", outside + "/secret.txt"
				}},
			{name: "refused", answer: refuse, raised: 1, code: CodeOutsideRoots, says: "did not approve",
				setup: func(c *Call, outside string) (string, string) {
					return outside + "/secret.txt", outside + "/secret.txt"
				}},
			{name: "no hook", noHook: true, code: CodeOutsideRoots, says: "no operator to approve",
				setup: func(c *Call, outside string) (string, string) {
					return outside + "/secret.txt", outside + "/secret.txt"
				}},
			{name: "resumed without the grant", answer: short, raised: 1, code: CodeOutsideRoots, says: "without granting",
				setup: func(c *Call, outside string) (string, string) {
					return outside + "/secret.txt", outside + "/secret.txt"
				}},
			{name: "symlink to the target", answer: approve, raised: 1, changed: true,
				setup: func(c *Call, outside string) (string, string) {
					if err := os.Symlink(outside+"/secret.txt", c.Workspace+"/link"); err != nil {
						t.Fatal(err)
					}
					return "link", outside + "/secret.txt"
				}},
			{name: "protected entry", answer: approve, code: CodeProtectedPath,
				setup: func(c *Call, outside string) (string, string) { return ".git/config", "" }},
			{name: "symlink to a protected entry", answer: approve, code: CodeProtectedPath,
				setup: func(c *Call, outside string) (string, string) {
					if err := os.Symlink(c.Workspace+"/.git/config", outside+"/cfg"); err != nil {
						t.Fatal(err)
					}
					return outside + "/cfg", ""
				}},
			{name: "another repository's git directory", answer: approve, code: CodeOutsideRoots, says: "never ask",
				setup: func(c *Call, outside string) (string, string) {
					os.MkdirAll(outside+"/repo/.git", 0o755)
					os.WriteFile(outside+"/repo/.git/HEAD", []byte(old), 0o644)
					return outside + "/repo/.git/HEAD", ""
				}},
			{name: "the blob store", answer: approve, code: CodeBlobStore, wcode: CodeProtectedPath,
				setup: func(c *Call, outside string) (string, string) {
					ref, err := c.Blobs.Put([]byte(old))
					if err != nil {
						t.Fatal(err)
					}
					return filepath.Dir(c.Blobs.Path(ref)) + "/x", ""
				}},
		} {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				r, c := fileRegistry(t)
				outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
				if err := os.WriteFile(outside+"/secret.txt", []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
				arg, target := tc.setup(c, outside)
				rec := &raises{answer: tc.answer}
				if !tc.noHook {
					c.RaiseRefusal = rec.hook
				}
				var before []byte
				if target != "" {
					before, _ = os.ReadFile(target)
				}
				out := call(t, r, c, tool, accessArgs(tool, arg, old))
				got := rec.all()
				if len(got) != tc.raised {
					t.Fatalf("raised %d times, want %d: %+v", len(got), tc.raised, got)
				}
				for _, rr := range got {
					w := rr.Denial.Wanted
					if rr.Tool != tool || rr.Denial.Code != sandbox.DenialRequirementsNotCovered || len(w) != 1 || w[0] != (sandbox.Grant{Kind: wantKind, Path: target}) {
						t.Errorf("raised %+v (%+v), want one %s grant for exactly %s", rr, rr.Denial, wantKind, target)
					}
				}
				want := tc.code
				if tool != "fs_read" && tc.wcode != "" {
					want = tc.wcode
				}
				switch {
				case want == "" && out.IsError:
					t.Fatalf("%s %s: %s", tool, arg, out.Text)
				case want != "" && out.Code != want:
					t.Fatalf("got %s %q, want %s", out.Code, out.Text, want)
				}
				if tc.says != "" && !strings.Contains(out.Text, tc.says) {
					t.Errorf("the answer does not say %q: %s", tc.says, out.Text)
				}
				if target == "" {
					return
				}
				after, _ := os.ReadFile(target)
				wrote := string(after) != string(before)
				if tool == "fs_read" {
					if tc.changed != strings.Contains(out.Text, "THE-CONTENT") {
						t.Errorf("read the target: %v, want %v: %s", !tc.changed, tc.changed, out.Text)
					}
					if wrote {
						t.Error("fs_read changed its target")
					}
					return
				}
				if wrote != tc.changed {
					t.Errorf("the target was written: %v, want %v (now %q)", wrote, tc.changed, after)
				}
				if fi, err := os.Lstat(c.Workspace + "/link"); err == nil && fi.Mode()&os.ModeSymlink == 0 {
					t.Error("the link in the workspace was replaced by a file")
				}
			})
		}
	}
}

// TestFileToolRaisesNameTheRemedy: without a hook, the answer names the
// bash permissions field of the access wanted and the user, never a
// remedy the host cannot give.
func TestFileToolRaisesNameTheRemedy(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
	read := call(t, r, c, "fs_read", map[string]any{"path": outside + "/secret.txt"})
	write := call(t, r, c, "fs_write", map[string]any{"path": outside + "/secret.txt", "content": "x"})
	for _, tc := range []struct {
		o         Outcome
		want, not string
		rootsWord string
	}{
		{read, "permissions.readable_roots", "writable_roots", "readable roots"},
		{write, "permissions.writable_roots", "readable_roots", "writable roots"},
	} {
		if tc.o.Code != CodeOutsideRoots || !strings.Contains(tc.o.Text, tc.want) || strings.Contains(tc.o.Text, tc.not) ||
			!strings.Contains(tc.o.Text, "ask the user") || !strings.Contains(tc.o.Text, tc.rootsWord) {
			t.Errorf("%s %q: want %s naming %s and the user", tc.o.Code, tc.o.Text, CodeOutsideRoots, tc.want)
		}
	}
}

// TestFileToolsAskForTheHostsTmp: a file under the host's /tmp outside
// every root is jail_replaced; fs_read asks for it, and an approval reads
// it. The wording never claims bash cannot reach it. /proc and /dev are
// never asked for.
func TestFileToolsAskForTheHostsTmp(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	dir := t.TempDir()
	if !sandbox.Covers(sandbox.ScratchDir, dir) {
		t.Skipf("the test's temporary directory %s is not under %s", dir, sandbox.ScratchDir)
	}
	f := filepath.Join(dir, "host.txt")
	if err := os.WriteFile(f, []byte("host copy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := call(t, r, c, "fs_read", map[string]any{"path": f})
	if out.Code != CodeJailReplaced || strings.Contains(out.Text, "nor bash") || !strings.Contains(out.Text, "permissions.readable_roots") {
		t.Errorf("no hook: %s %q", out.Code, out.Text)
	}
	rec := &raises{answer: approve}
	c.RaiseRefusal = rec.hook
	out = call(t, r, c, "fs_read", map[string]any{"path": f})
	if out.IsError || !strings.Contains(out.Text, "host copy") || len(rec.all()) != 1 {
		t.Errorf("approved: %s %q after %d raises", out.Code, out.Text, len(rec.all()))
	}
	for _, p := range []string{"/proc/self/environ", "/dev/null"} {
		before := len(rec.all())
		if out := call(t, r, c, "fs_read", map[string]any{"path": p}); out.Code != CodeJailReplaced || len(rec.all()) != before {
			t.Errorf("%s: %s %q, raised %d; want jail_replaced, never raised", p, out.Code, out.Text, len(rec.all())-before)
		}
	}
}

// TestFileToolsNeverAskForAGitControlFile: a write to a file git takes
// as a control file (config, hooks/*) outside the roots is not raised.
// Control: a write to an ordinary file beside it is.
func TestFileToolsNeverAskForAGitControlFile(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
	os.MkdirAll(outside+"/hooks", 0o755)
	rec := &raises{answer: approve}
	c.RaiseRefusal = rec.hook
	for _, p := range []string{outside + "/config", outside + "/hooks/pre-commit", outside + "/commondir"} {
		if out := call(t, r, c, "fs_write", map[string]any{"path": p, "content": "x"}); out.Code != CodeOutsideRoots || !strings.Contains(out.Text, "never ask") {
			t.Errorf("%s: %s %q", p, out.Code, out.Text)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("raised %d times for git control files", n)
	}
	if out := call(t, r, c, "fs_write", map[string]any{"path": outside + "/notes.txt", "content": "x"}); out.IsError || len(rec.all()) != 1 {
		t.Fatalf("control: %s %q after %d raises", out.Code, out.Text, len(rec.all()))
	}
}

// TestFileWriteRaiseShowsTheContent: the operator asked about an
// fs_write is shown the content that lands and the file, as Describe
// renders it.
func TestFileWriteRaiseShowsTheContent(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
	rec := &raises{answer: refuse}
	c.RaiseRefusal = rec.hook
	call(t, r, c, "fs_write", map[string]any{"path": outside + "/new.txt", "content": "echo landed\n"})
	got := rec.all()
	if len(got) != 1 || got[0].Subject == nil || got[0].Subject.Kind != SubjectContent || got[0].Subject.Text != "echo landed\n" || got[0].Subject.Path != outside+"/new.txt" {
		t.Fatalf("raised %+v, want the content and the file", got)
	}
	q, ok := got[0].Describe(4 << 10)
	if !ok || !strings.Contains(q, "echo landed") || !strings.Contains(q, outside+"/new.txt") || !strings.Contains(q, "writable_root") {
		t.Fatalf("the question does not show what lands where:\n%s", q)
	}
}

// TestApprovedWriteCreatesNoDirectory: an approval covers the file
// alone, so a write whose directory is missing creates nothing.
func TestApprovedWriteCreatesNoDirectory(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
	c.RaiseRefusal = (&raises{answer: approve}).hook
	out := call(t, r, c, "fs_write", map[string]any{"path": outside + "/made/new.txt", "content": "x"})
	if out.Code != CodeWriteFailed || !strings.Contains(out.Text, "directory must exist") {
		t.Errorf("%s %q", out.Code, out.Text)
	}
	if _, err := os.Lstat(outside + "/made"); err == nil {
		t.Error("the approval created a directory")
	}
	if out := call(t, r, c, "fs_write", map[string]any{"path": outside + "/new.txt", "content": "x"}); out.IsError {
		t.Errorf("control: %s %q", out.Code, out.Text)
	}
}

// TestRedteamFileApprovalStaysWithItsCall: an approval, even one a host
// answers wider than asked (the whole directory, writable), lets its own
// call touch the one file it raised and nothing after: the next call of
// the same session, for the same file or its neighbour, is asked again
// and refused when the host refuses; the session's resolver still
// refuses both. Control: the same grant kept on the session (appended
// to the template's Grants, as a leaking approval would) reads the
// neighbour without asking.
func TestRedteamFileApprovalStaysWithItsCall(t *testing.T) {
	t.Parallel()
	r, tmpl := fileRegistry(t)
	outside := filepath.Join(filepath.Dir(tmpl.Workspace), "outside")
	a, b := outside+"/a.txt", outside+"/b.txt"
	os.WriteFile(a, []byte("CONTENT-A\n"), 0o644)
	os.WriteFile(b, []byte("CONTENT-B\n"), 0o644)
	wide := []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: outside}}
	rec := &raises{answer: func(RaisedRefusal) Escalation { return Escalation{Resume: true, Grants: wide} }}
	tmpl.RaiseRefusal = rec.hook

	c1 := tmpl.At("op", "s1", 0)
	if out := call(t, r, c1, "fs_read", map[string]any{"path": a}); out.IsError || !strings.Contains(out.Text, "CONTENT-A") {
		t.Fatalf("approved read: %s %q", out.Code, out.Text)
	}
	if out := call(t, r, c1, "fs_write", map[string]any{"path": a, "content": "W\n"}); out.IsError {
		t.Fatalf("approved write: %s %q", out.Code, out.Text)
	}
	if got, _ := os.ReadFile(b); string(got) != "CONTENT-B\n" {
		t.Fatalf("an approval for %s changed %s: %q", a, b, got)
	}
	if len(c1.Grants) != 0 || len(tmpl.Grants) != 0 {
		t.Fatalf("the approval reached the call's grants: %v, the session's: %v", c1.Grants, tmpl.Grants)
	}
	for _, p := range []string{a, b} {
		if _, err := c1.ResolveRead(p); err == nil {
			t.Errorf("after the approval the session's resolver reads %s", p)
		}
		if _, err := c1.ResolveWrite(p); err == nil {
			t.Errorf("after the approval the session's resolver writes %s", p)
		}
	}

	rec.mu.Lock()
	rec.answer, rec.got = refuse, nil
	rec.mu.Unlock()
	c2 := tmpl.At("op", "s2", 0)
	for _, p := range []string{a, b} {
		out := call(t, r, c2, "fs_read", map[string]any{"path": p})
		if out.Code != CodeOutsideRoots || strings.Contains(out.Text, "CONTENT-") {
			t.Errorf("next call, %s: %s %q; want outside_roots, nothing read", p, out.Code, out.Text)
		}
	}
	if out := call(t, r, c2, "fs_write", map[string]any{"path": b, "content": "LEAK\n"}); out.Code != CodeOutsideRoots {
		t.Errorf("next call, write %s: %s %q", b, out.Code, out.Text)
	}
	got := rec.all()
	if len(got) != 3 || got[0].Denial.Wanted[0].Path != a || got[1].Denial.Wanted[0].Path != b || got[2].Denial.Wanted[0].Path != b {
		t.Errorf("the next call's raises: %+v; want one each, naming its own file", got)
	}
	if data, _ := os.ReadFile(b); string(data) != "CONTENT-B\n" {
		t.Errorf("%s was written by a refused call: %q", b, data)
	}

	// Control: a grant kept on the session reads the neighbour unasked.
	leaky := tmpl.At("op", "s3", 0)
	leaky.Grants = append(leaky.Grants, wide...)
	rec.mu.Lock()
	rec.got = nil
	rec.mu.Unlock()
	if out := call(t, r, leaky, "fs_read", map[string]any{"path": b}); out.IsError || !strings.Contains(out.Text, "CONTENT-B") || len(rec.all()) != 0 {
		t.Fatalf("control: a kept grant should read %s unasked: %s %q", b, out.Code, out.Text)
	}
}

// TestRedteamFileApprovalMeetsASwap: while the operator is asked, the
// approved file (or the directory holding it) is swapped for a link to
// a secret. The tool opens the target it raised without following any
// link, so it reads and writes nothing through the link (path_changed).
// Control: opening the same path by name, as a naive tool would after
// the approval, reads the secret.
func TestRedteamFileApprovalMeetsASwap(t *testing.T) {
	t.Parallel()
	for _, swap := range []string{"file", "directory"} {
		for _, tool := range []string{"fs_read", "fs_write", "fs_edit"} {
			t.Run(swap+"/"+tool, func(t *testing.T) {
				r, c := fileRegistry(t)
				root := filepath.Dir(c.Workspace)
				vault := filepath.Join(root, "vault")
				os.MkdirAll(vault, 0o755)
				os.WriteFile(vault+"/f.txt", []byte("VAULT-SECRET\n"), 0o644)
				dir := filepath.Join(root, "outside", "d")
				os.MkdirAll(dir, 0o755)
				target := dir + "/f.txt"
				os.WriteFile(target, []byte("PLAIN\n"), 0o644)
				c.RaiseRefusal = (&raises{answer: func(rr RaisedRefusal) Escalation {
					switch swap {
					case "file":
						os.Remove(target)
						os.Symlink(vault+"/f.txt", target)
					default:
						os.Rename(dir, dir+".old")
						os.Symlink(vault, dir)
					}
					return approve(rr)
				}}).hook
				out := call(t, r, c, tool, accessArgs(tool, target, "PLAIN\n"))
				if out.Code != CodePathChanged || strings.Contains(out.Text, "VAULT-SECRET") {
					t.Errorf("%s after a %s swap: %s %q; want path_changed, nothing of the vault", tool, swap, out.Code, out.Text)
				}
				if got, _ := os.ReadFile(vault + "/f.txt"); string(got) != "VAULT-SECRET\n" {
					t.Errorf("the vault was written through the link: %q", got)
				}
				if got, _ := os.ReadFile(target); string(got) != "VAULT-SECRET\n" {
					t.Errorf("control: opening %s by name should reach the vault now, got %q", target, got)
				}
			})
		}
	}
}

// TestFileToolsNeverAskToWriteProcOrDev: a write under /proc or /dev
// is refused without a raise, saying so.
func TestFileToolsNeverAskToWriteProcOrDev(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	rec := &raises{answer: approve}
	c.RaiseRefusal = rec.hook
	for _, p := range []string{"/proc/self/comm", "/dev/null"} {
		if out := call(t, r, c, "fs_write", map[string]any{"path": p, "content": "x"}); out.Code != CodeOutsideRoots || !strings.Contains(out.Text, "/proc or /dev") {
			t.Errorf("%s: %s %q", p, out.Code, out.Text)
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("raised %d times", n)
	}
}

// TestRedteamFileToolsNeverAskToWriteGitsOwnConfig: git reads a user's
// or the system's configuration (~/.gitconfig, /etc/gitconfig) on the
// host, where core.fsmonitor, core.pager or an alias runs any command
// the next time anyone runs git; the file tools asked the operator to
// write it, which the control-file rule (config, hooks/*) did not cover.
// Control: a file of another name beside it is asked for.
func TestRedteamFileToolsNeverAskToWriteGitsOwnConfig(t *testing.T) {
	t.Parallel()
	r, c := fileRegistry(t)
	outside := filepath.Join(filepath.Dir(c.Workspace), "home")
	os.MkdirAll(outside, 0o755)
	rec := &raises{answer: approve}
	c.RaiseRefusal = rec.hook
	for _, p := range []string{outside + "/.gitconfig", outside + "/gitconfig", outside + "/.GITCONFIG"} {
		if out := call(t, r, c, "fs_write", map[string]any{"path": p, "content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"}); out.Code != CodeOutsideRoots || !strings.Contains(out.Text, "never ask") {
			t.Errorf("%s: %s %q", p, out.Code, out.Text)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("raised %d times for git's own configuration", n)
	}
	if out := call(t, r, c, "fs_write", map[string]any{"path": outside + "/.gitconfig.txt", "content": "x"}); out.IsError || len(rec.all()) != 1 {
		t.Fatalf("control: %s %q after %d raises", out.Code, out.Text, len(rec.all()))
	}
}
