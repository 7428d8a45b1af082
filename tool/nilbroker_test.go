//go:build linux

package tool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
)

// TestRaiseWithoutBroker: a host that runs no commands (Call.Broker nil)
// may still raise a refusal; the escalation is asked and answered, and
// nothing panics for want of a broker to audit through (before
// Call.Broker was an interface, a nil *broker.Broker audited nothing).
func TestRaiseWithoutBroker(t *testing.T) {
	t.Parallel()
	asked := false
	c := &Call{Workspace: t.TempDir(), RaiseRefusal: func(context.Context, RaisedRefusal) Escalation {
		asked = true
		return Escalation{Resume: true}
	}}
	esc := c.Raise(context.Background(), RaisedRefusal{Tool: "t", Denial: sandbox.NewDenial(sandbox.DenialRequirementsNotCovered, "x", nil)})
	if !asked || !esc.Resume {
		t.Fatalf("asked %v, escalation %+v", asked, esc)
	}
}

// TestTypedNilBrokerIsNoBroker: a Call whose Broker holds a nil
// *broker.Broker (what a host gets assigning its own nil broker
// variable) is a host that runs no commands, as a nil Broker is: grep
// runs its Go engine, the file API searches, fs_write guards a planted
// git config alone and says the workspace is to be treated as fenced
// only when it is, and Raise audits nothing; none of it panics.
func TestTypedNilBrokerIsNoBroker(t *testing.T) {
	t.Parallel()
	var none *broker.Broker
	r, c := gitWriteSession(t, false)
	c.Broker = none
	ws := c.Workspace
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := NewRegistry(GrepTool())
	if err != nil {
		t.Fatal(err)
	}
	if o := call(t, g, c, "grep", map[string]any{"pattern": "needle"}); o.IsError {
		t.Errorf("grep: %s", o.Text)
	}
	if m, _, err := c.Grep(context.Background(), GrepQuery{Pattern: "needle"}); err != nil || len(m) != 1 {
		t.Errorf("Grep: %v %v", m, err)
	}
	mark := filepath.Join(t.TempDir(), "PWNED")
	os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: evil\n"), 0o644)
	for _, rel := range []string{"evil/HEAD", "evil/objects/info/.keep", "evil/refs/heads/.keep"} {
		if o := call(t, r, c, "fs_write", map[string]any{"path": rel, "content": "ref: refs/heads/main\n"}); o.IsError {
			t.Fatal(o.Text)
		}
	}
	o := call(t, r, c, "fs_write", map[string]any{"path": "evil/config", "content": armedConfig(mark)})
	if d, _ := o.Details.(WriteDetails); o.IsError || len(d.GitNeutralised) != 1 {
		t.Fatalf("fs_write: %+v %s", o.Details, o.Text)
	}
	if hostGitStatus(t, ws, mark) {
		t.Error("host git ran the payload")
	}
	c.RaiseRefusal = func(context.Context, RaisedRefusal) Escalation { return Escalation{} }
	c.Raise(context.Background(), RaisedRefusal{Tool: "t"})
}

// brokenJail is a host's own jail whose Clear breaks its contract: it
// fails with an error that holds no *sandbox.Denial, or returns neither
// an Execution nor an error.
type brokenJail struct {
	ledger *sandbox.Ledger
	err    error
}

func (j *brokenJail) Clear(context.Context, sandbox.CallSpec) (*sandbox.Execution, error) {
	return nil, j.err
}
func (j *brokenJail) Ledger() *sandbox.Ledger        { return j.ledger }
func (j *brokenJail) Available() sandbox.Enforcement { return sandbox.Enforcement{} }
func (j *brokenJail) Audit(sandbox.AuditEvent)       {}
func (j *brokenJail) GuardToolWrite(root, path string) ([]sandbox.Neutralisation, error) {
	return nil, nil
}

// TestGrepOnABrokenJailFails: when a host's jail fails ripgrep's
// clearance with an error that holds no Denial, or returns no
// Execution, grep says the search failed (jail_failed); it never
// answers "no matches" for a search that did not run, nor panics.
func TestGrepOnABrokenJailFails(t *testing.T) {
	t.Parallel()
	if ripgrepPath(&Call{Broker: &brokenJail{}}) == "" {
		t.Skip("ripgrep is not installed")
	}
	g, err := NewRegistry(GrepTool())
	if err != nil {
		t.Fatal(err)
	}
	for _, jerr := range []error{errors.New("the jail broke"), nil} {
		_, c := gitWriteSession(t, false)
		c.Broker = &brokenJail{ledger: sandbox.NewLedger(nil), err: jerr}
		if err := os.WriteFile(filepath.Join(c.Workspace, "a.txt"), []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := call(t, g, c, "grep", map[string]any{"pattern": "needle"})
		if !o.IsError || o.Code != Code(sandbox.DenialJailFailed) {
			t.Errorf("Clear error %v: grep = %s %q, want a %s failure", jerr, o.Code, o.Text, sandbox.DenialJailFailed)
		}
	}
}
