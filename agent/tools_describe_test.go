package agent

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentloom/loom/todo"
)

// TestDescriptionNumbersComeFromConstants: every number an agent tool's
// description or schema states is one of the bounds that tool is meant to
// state, and each of those bounds is stated. The agency's maximum wait is
// set to a value no constant has, so a literal in its place shows.
func TestDescriptionNumbersComeFromConstants(t *testing.T) {
	t.Parallel()
	const maxWaitMs = 1234
	a := NewAgency(echo, Options{MaxWait: maxWaitMs * time.Millisecond})
	defer a.Close()
	states := map[string][]int{
		SpawnToolName:  {maxPurposeBytes, maxPromptBytes},
		SendToolName:   {maxPromptBytes},
		WaitToolName:   {maxWaitMs, MaxWaitHandles},
		NoteToolName:   {MaxNoteBytes, maxNotesPerStrand},
		NotesToolName:  {MaxNotesListed},
		RosterToolName: nil,
		TodoToolName:   {todo.MaxTasks, todo.MaxTextBytes},
	}
	number := regexp.MustCompile(`\d+`)
	escape := regexp.MustCompile(`\\u[0-9a-fA-F]{4}`) // JSON's \u003c for '<'
	for _, tl := range Tools(a) {
		want, ok := states[tl.Name]
		if !ok {
			t.Errorf("%s: no bounds listed for it", tl.Name)
			continue
		}
		seen := map[int]bool{}
		for _, s := range number.FindAllString(tl.Description+" "+escape.ReplaceAllString(string(tl.Schema), " "), -1) {
			n, _ := strconv.Atoi(s)
			seen[n] = true
			if !slices.Contains(want, n) {
				t.Errorf("%s states %d, which is none of its bounds %v", tl.Name, n, want)
			}
		}
		for _, n := range want {
			if !seen[n] {
				t.Errorf("%s does not state its bound %d", tl.Name, n)
			}
		}
	}
}
