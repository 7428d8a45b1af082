package tool

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// Red team, approval questions (today).

// TestRedteamTodayApprovalBlankSymbolFakesAComment: U+2800 BRAILLE
// PATTERN BLANK is a symbol (So), so safe() passes it, yet it prints as
// an empty cell: an invisible rune that reads as a space. The shell
// splits words on ASCII blanks only, so a command the operator is shown
// as
//
//	true # ; touch MARK
//
// (everything after "#" a comment) is, to sh, the word "true⠀#⠀" and
// then "; touch MARK", which runs. The question Describe renders shows
// U+2800 raw. Controls: the same line with ASCII spaces runs no touch
// (the probe's shell sees the difference), and U+00A0, a no-break space,
// is escaped by the same Describe (the class the allowlist means to
// keep out).
func TestRedteamTodayApprovalBlankSymbolFakesAComment(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "MARK")
	const blank = "\u2800"
	forged := "true" + blank + "#" + blank + "; touch " + mark
	honest := "true # ; touch " + mark

	runs := func(cmd string) bool {
		os.Remove(mark)
		exec.Command("/bin/sh", "-c", cmd).Run()
		_, err := os.Stat(mark)
		return err == nil
	}
	if runs(honest) {
		t.Fatal("control: with ASCII blanks the touch is a comment and must not run")
	}
	if !runs(forged) {
		t.Fatal("control: sh did not run the touch after the U+2800 word; the probe shows nothing")
	}

	ask := func(cmd string) string {
		r := RaisedRefusal{Tool: "bash",
			Denial:  &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: []sandbox.Grant{{Kind: sandbox.GrantNetwork}}},
			Subject: &Subject{Kind: SubjectCommand, Text: cmd, Dir: "/ws"}}
		q, ok := r.Describe(4 << 10)
		if !ok {
			t.Fatalf("Describe refused %q", cmd)
		}
		return q
	}
	if q := ask("true\u00a0#\u00a0; touch " + mark); strings.Contains(q, "\u00a0") {
		t.Fatalf("control: U+00A0 reached the question raw:\n%s", q)
	}
	if q := ask(forged); strings.Contains(q, blank) {
		t.Errorf("the question shows U+2800 raw, so the operator reads %q (touch commented out) for a command that runs the touch:\n%s",
			strings.ReplaceAll(forged, blank, " "), q)
	}
	// A command shows no rune outside printable ASCII raw: a shell's
	// syntax is ASCII, so any other rune (U+FF03 like "#", U+037E like
	// ";") is data that may look like syntax.
	for _, r := range []string{"\uff03", "\u037e", "\u2800", "\u00e9"} {
		if q := ask("true " + r + " x"); strings.Contains(q, r) {
			t.Errorf("a command's %U reached the question raw:\n%s", []rune(r)[0], q)
		}
	}
}
