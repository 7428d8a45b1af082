package tool

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/internal/search"
)

// TestDescriptionsStateTheirConstants: every number a file tool's
// description states is the value of one of its bounds, and every bound
// listed is stated, so a changed constant cannot leave a stale number
// in front of the model.
func TestDescriptionsStateTheirConstants(t *testing.T) {
	bounds := map[string][]int{
		"fs_read":  {defaultReadLines, MaxWindowBytes >> 10, MaxFileBytes >> 20},
		"fs_write": {MaxFileBytes >> 20},
		"grep": {search.MaxPatternBytes, search.MaxGlobBytes, maxGrepContext, MaxGrepResults, defaultGrepResults,
			int(grepTimeout / time.Second), search.MaxScanMatches, search.MaxLineBytes, blob.OverflowThreshold >> 10},
		"fs_edit":           nil,
		"working_directory": nil,
	}
	number := regexp.MustCompile(`\b\d+\b`)
	for _, tl := range append(FileTools(), GrepTool()) {
		want, ok := bounds[tl.Name]
		if !ok {
			t.Errorf("%s: no bounds listed for it here", tl.Name)
			continue
		}
		allowed := map[int]bool{}
		for _, b := range want {
			allowed[b] = true
			if !regexp.MustCompile(`\b` + strconv.Itoa(b) + `\b`).MatchString(tl.Description) {
				t.Errorf("%s: the description does not state %d", tl.Name, b)
			}
		}
		for _, m := range number.FindAllString(tl.Description, -1) {
			n, _ := strconv.Atoi(m)
			if !allowed[n] {
				t.Errorf("%s: the description states %d, which is none of its constants", tl.Name, n)
			}
		}
	}
}
