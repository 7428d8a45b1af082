package tool

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/sandbox"
	"github.com/google/jsonschema-go/jsonschema"
)

type editArgs struct {
	Path   string          `json:"path"`
	Digest string          `json:"digest"`
	Hunks  []hashline.Hunk `json:"hunks" jsonschema:"not overlapping"`
}

// EditDetails is the Details of a successful fs_edit.
type EditDetails struct {
	Path    string            `json:"path"`
	Digest  string            `json:"digest"`
	Hunks   int               `json:"hunks"`
	Regions []hashline.Region `json:"regions"`
	// GitNeutralised is what the broker's git guard disarmed because of
	// this edit; empty when nothing.
	GitNeutralised []sandbox.Neutralisation `json:"git_neutralised,omitempty"`
	// Diagnostics is the edited file's diagnosis, as shown (see
	// Diagnostics); empty without a Diagnostics or when no server owns
	// the file.
	Diagnostics []FileDiagnostics `json:"diagnostics,omitempty"`
}

// StaleDetails is the Details of an fs_edit refused as stale.
type StaleDetails struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

var refSchema = &jsonschema.Schema{
	Type:    "string",
	Pattern: `^[0-9]+:[0-9a-f]{8}$`,
}

var opSchema = &jsonschema.Schema{
	Type:        "string",
	Enum:        []any{"replace", "insert_before", "insert_after", "append"},
	Description: "replace: start..end (end defaults to start) becomes lines, [] deletes; insert_before/insert_after: next to start; append: at the end, no refs",
}

// EditTool returns fs_edit: apply anchored hunks to a file, bound to the
// digest the model planned against, answering with the new digest and the
// fresh anchors of every changed region. With d, the answer ends with d's
// diagnosis of the file (see Diagnostics); nil answers without one.
func EditTool(d Diagnostics) Tool {
	desc := "Edit a file by hunks addressed with `N:anchor` refs from an fs_read, fs_write or fs_edit answer, " +
		"with its digest. `lines` are file text, without the `N:anchor|` prefix. If the file changed since, nothing " +
		"is written and the answer gives the current digest and anchors; a success gives the new digest and each " +
		"changed region's anchors."
	if d != nil {
		desc += describeDiagnostics()
	}
	return Typed(Tool{
		Name:          "fs_edit",
		Title:         "Edit a file",
		Description:   desc,
		PromptSnippet: "fs_edit: change lines of a file by anchor",
		Replay:        ReplaySafe,
		Mode:          Exclusive,
	}, func(ctx context.Context, c *Call, a editArgs) Outcome { return runEdit(ctx, c, a, d) },
		TypeSchema{Type: reflect.TypeFor[hashline.Ref](), Schema: refSchema},
		TypeSchema{Type: reflect.TypeFor[hashline.Op](), Schema: opSchema})
}

func runEdit(ctx context.Context, c *Call, a editArgs, d Diagnostics) Outcome {
	if o, refused := refuseSchemeWrite("fs_edit", a.Path); refused {
		return o
	}
	// Display prefixes are refused before anything else: they mean the
	// model pasted rendered text, whatever the file now holds.
	for i, h := range a.Hunks {
		for j, l := range h.Lines {
			if hashline.HasDisplayPrefix(l) {
				return Fail(Code(hashline.CodeDisplayPrefix), fmt.Sprintf(
					"hunk %d, line %d starts with a display prefix (%q): `N:anchor|` is how reads show lines, not file text; send only the text after the |. Nothing was written.",
					i, j, truncateText(l, 40)))
			}
		}
	}
	if err := hashline.ValidateHunks(a.Hunks); err != nil {
		return hunkFailure(err)
	}
	path, err := c.ResolveWrite(a.Path)
	if err != nil {
		if path, err = c.askAccess(ctx, "fs_edit", a.Path, accessWrite, err, nil); err != nil {
			return pathFailure(err)
		}
	}
	if o, refused := refuseGitControl(c, a.Path, path); refused {
		return o
	}
	data, err := readRegular(path)
	if err != nil {
		return readFailure(a.Path, err)
	}
	shown := c.displayPath(path)
	current := hashline.Digest(data)
	if !hashline.DigestForm(a.Digest) {
		return Fail(Code(hashline.CodeBadDigest), fmt.Sprintf(
			"digest %s is not a digest: one is 16 lowercase hex digits, a hyphen and the byte length (%s is %s's now), "+
				"as the digest: line of an fs_read, fs_write or fs_edit answer gives it; nothing was written", quoted(a.Digest), current, shown))
	}
	if a.Digest != current {
		return staleOutcome(shown, data, current, a.Hunks, fmt.Sprintf(
			"stale digest: %s changed since the answer you planned from (you sent %s); nothing was written.", shown, a.Digest))
	}
	plan, err := hashline.NewPlan(data, a.Hunks)
	if err != nil {
		var se *hashline.StaleError
		if errors.As(err, &se) {
			return staleOutcome(shown, data, current, a.Hunks, "stale anchors: "+staleSummary(se)+"; nothing was written.")
		}
		return hunkFailure(err)
	}
	applied, err := plan.Apply(data)
	if err != nil {
		return hunkFailure(err)
	}
	if len(applied.Content) > MaxFileBytes {
		return Fail(CodeFileTooLarge, fmt.Sprintf("the edit would make %s %d bytes; at most %d bytes (%d MiB) are written. Nothing was written.", shown, len(applied.Content), MaxFileBytes, MaxFileBytes>>20))
	}
	// The file was just read from its directory, so no parent is made:
	// one that vanished since is a failure, not something to recreate.
	res, err := writeWhole(path, applied.Content, false)
	if err != nil {
		return writeFailure(c, shown, res, err)
	}
	guarded, err := guardGitWrite(c, path)
	if err != nil {
		return gitGuardFailure(c, shown, guarded, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "applied %d hunk(s) to %s\n", len(a.Hunks), shown)
	fmt.Fprintf(&b, "digest: %s\n", applied.Digest)
	writeNotes(&b, res)
	writeGitGuard(&b, c, path, guarded)
	writeFreshAnchors(&b, shown, applied.Content, applied.LineCount, applied.Regions)
	det := EditDetails{Path: shown, Digest: applied.Digest, Hunks: len(a.Hunks), Regions: applied.Regions, GitNeutralised: guarded}
	if d != nil {
		det.Diagnostics = writeDiagnostics(&b, c, diagnose(ctx, d, []ChangedFile{{Path: path, Content: applied.Content}}), map[string][]byte{path: applied.Content})
	}
	return Outcome{Text: b.String(), Details: det}
}

// writeFreshAnchors renders the anchors of regions of data (total lines)
// under the heading a success and a rejection share, annotating only the
// regions' blocks.
func writeFreshAnchors(b *strings.Builder, shown string, data []byte, total int, regions []hashline.Region) {
	if total == 0 {
		b.WriteString("The file is now empty (0 lines).\n")
		return
	}
	text, complete, stoppedAt := hashline.RenderRegionsOf(data, regions, hashline.DefaultFreshContext, hashline.MaxFreshAnchorBytes)
	b.WriteString("Fresh anchors:\n")
	b.WriteString(text)
	if !complete {
		fmt.Fprintf(b, "... (fresh anchors stop here at %d bytes; fs_read %s with offset=%d for the rest)\n", hashline.MaxFreshAnchorBytes, shown, stoppedAt)
	}
}

// staleOutcome refuses an edit planned against other content, carrying
// the current digest and the current anchors around every line the hunks
// named, so the model can replan without a read.
func staleOutcome(shown string, data []byte, current string, hunks []hashline.Hunk, headline string) Outcome {
	total := hashline.LineCount(data)
	var regions []hashline.Region
	for _, h := range hunks {
		for _, r := range []*hashline.Ref{h.Start, h.End} {
			if r != nil {
				n := min(max(r.Line, 1), total)
				regions = append(regions, hashline.Region{Start: n, End: n})
			}
		}
		if h.Op == hashline.OpAppend && total > 0 {
			regions = append(regions, hashline.Region{Start: total, End: total})
		}
	}
	slices.SortFunc(regions, func(x, y hashline.Region) int { return x.Start - y.Start })
	var b strings.Builder
	b.WriteString(headline + "\n")
	fmt.Fprintf(&b, "digest: %s\n", current)
	writeFreshAnchors(&b, shown, data, total, regions)
	fmt.Fprintf(&b, "Replan the hunks against these anchors and send fs_edit again with digest %s.\n", current)
	code := hashline.CodeStaleAnchor
	if strings.HasPrefix(headline, "stale digest") {
		code = hashline.CodeStaleDigest
	}
	return Fail(Code(code), b.String()).WithDetails(StaleDetails{Path: shown, Digest: current})
}

func staleSummary(se *hashline.StaleError) string {
	parts := make([]string, 0, len(se.Stale))
	for _, s := range se.Stale {
		if s.Current == nil {
			parts = append(parts, fmt.Sprintf("%s is past the end (%d lines)", s.Ref, se.Lines))
		} else {
			parts = append(parts, fmt.Sprintf("%s is now %d:%s", s.Ref, s.Current.Number, s.Current.Anchor))
		}
	}
	return strings.Join(parts, ", ")
}

// hunkFailure renders a malformed hunk list.
func hunkFailure(err error) Outcome {
	code := CodeInvalidHunks
	if c := CodeOf(err); c != "" {
		code = c
	}
	return Fail(code, "invalid hunks: "+err.Error()+". Nothing was written.")
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
