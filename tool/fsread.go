package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/agentloom/loom/hashline"
)

const (
	// defaultReadLines is how many lines fs_read shows when no limit is given,
	// and the most it shows in one window.
	defaultReadLines = 2000
	// MaxWindowBytes bounds the rendered text of one fs_read window; a
	// window stops at the line that would cross it and says where to go on.
	// A line that alone would cross it is shown cut to fit, with a notice
	// giving the byte range of the rest; its anchor is the whole line's.
	MaxWindowBytes = 256 << 10
	// binarySniffBytes is how much of a file is checked for NUL bytes.
	binarySniffBytes = 8 << 10
)

type readArgs struct {
	Path   string `json:"path" jsonschema:"workspace-relative or absolute"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line, 1-based (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default: the most"`
}

// ReadDetails is the Details of a successful text fs_read.
type ReadDetails struct {
	Path       string `json:"path"`
	Digest     string `json:"digest"`
	TotalLines int    `json:"total_lines"`
	FirstLine  int    `json:"first_line"`
	LastLine   int    `json:"last_line"`
	HasMore    bool   `json:"has_more"`
	NextOffset int    `json:"next_offset,omitempty"`
	// CutLine is the number of the line shown cut because it alone is over
	// MaxWindowBytes rendered (it is then the only line shown), or 0.
	CutLine int `json:"cut_line,omitempty"`
}

// ImageDetails is the Details of an fs_read that returned an image.
type ImageDetails struct {
	Path string `json:"path"`
	MIME string `json:"mime"`
	Size int    `json:"size"`
}

// Scheme is a read-only virtual namespace fs_read serves: a path of the
// form "<Name>://..." goes to Read instead of the filesystem, with the
// same caller. A scheme must answer only what the caller may see, and its
// reads must be replay-safe, since fs_read is.
type Scheme struct {
	// Name is the part before "://", e.g. "job".
	Name string
	// Describe is one sentence added to fs_read's description.
	Describe string
	// Read answers one path under the scheme, "<Name>://" included.
	Read func(ctx context.Context, c *Call, uri string) Outcome
}

// ReadTool returns fs_read: a text file as anchored lines (digest first,
// windows that say how to continue), an image as image content, or a path
// under one of schemes answered by that scheme.
func ReadTool(schemes ...Scheme) Tool {
	desc := fmt.Sprintf("Read a file as `N:anchor|text` lines after a `digest:` line (fs_edit needs both). A read shows "+
		"at most %d lines (a larger limit is clamped) and %d KiB, a partial one naming the offset to go on at; a line alone longer is cut, its anchor "+
		"the whole line's. PNG, JPEG, GIF and WebP come back as images. Files over %d MiB are refused; overflow blob paths are readable.", defaultReadLines, MaxWindowBytes>>10, MaxFileBytes>>20)
	byName := make(map[string]Scheme, len(schemes))
	for _, s := range schemes {
		byName[s.Name] = s
		if s.Describe != "" {
			desc += " " + s.Describe
		}
	}
	return Typed(Tool{
		Name:          "fs_read",
		Title:         "Read a file",
		ReadOnly:      true,
		Description:   desc,
		PromptSnippet: "fs_read: read a file as anchored lines (or an image)",
		Replay:        ReplaySafe,
		Mode:          Concurrent,
	}, func(ctx context.Context, c *Call, a readArgs) Outcome {
		if name, ok := schemeOf(a.Path); ok {
			s, known := byName[name]
			if !known || s.Read == nil {
				return Fail(CodeUnknownScheme, fmt.Sprintf("%s is not a namespace this host serves; served: %s", quoted(name+"://"), schemeList(byName)))
			}
			return s.Read(ctx, c, a.Path)
		}
		return runRead(ctx, c, a)
	})
}

func schemeList(byName map[string]Scheme) string {
	if len(byName) == 0 {
		return "none (give a file path)"
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n+"://")
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func runRead(ctx context.Context, c *Call, a readArgs) Outcome {
	if a.Offset < 0 || a.Limit < 0 {
		return Fail(CodeInvalidWindow, fmt.Sprintf("offset and limit must not be negative (got offset=%d, limit=%d); offset starts at 1", a.Offset, a.Limit))
	}
	path, err := c.ResolveRead(a.Path)
	if err != nil {
		if path, err = c.askAccess(ctx, "fs_read", a.Path, accessRead, err, nil); err != nil {
			return pathFailure(err)
		}
	}
	data, err := readRegular(path)
	if err != nil {
		return readFailure(a.Path, err)
	}
	shown := c.displayPath(path)
	if mime := imageMIME(data); mime != "" {
		return Outcome{
			Text:    fmt.Sprintf("image %s (%s, %d bytes)", shown, mime, len(data)),
			Images:  []Image{{MIME: mime, Data: data}},
			Details: ImageDetails{Path: shown, MIME: mime, Size: len(data)},
		}
	}
	if bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0 {
		return Fail(CodeBinaryFile, fmt.Sprintf("%s looks binary (it contains NUL bytes) and is not an image fs_read can show; inspect it with bash (file, xxd, strings)", shown))
	}
	o := renderWindow(shown, data, a.Offset, a.Limit)
	if a.Limit > defaultReadLines && !o.IsError {
		// Announced after the window, so the digest stays the first line.
		if !strings.HasSuffix(o.Text, "\n") {
			o.Text += "\n"
		}
		o.Text += "note: " + ClampNote("limit", int64(a.Limit), defaultReadLines) + "\n"
	}
	return o
}

// renderWindow renders one window of data's anchored lines. Only the
// window's lines are annotated: the digest is one pass over data and the
// window is found by counting line breaks, so a file of millions of short
// lines costs no more than a small one beyond that pass.
func renderWindow(shown string, data []byte, offset, limit int) Outcome {
	digest := hashline.Digest(data)
	if offset == 0 {
		offset = 1
	}
	if limit == 0 || limit > defaultReadLines {
		limit = defaultReadLines
	}
	v := hashline.ViewOf(data, offset, limit, MaxWindowBytes)
	total := v.Total
	if total == 0 {
		return Outcome{
			Text:    fmt.Sprintf("digest: %s\n%s: empty file (0 lines); add lines with fs_edit op \"append\" or fs_write\n", digest, shown),
			Details: ReadDetails{Path: shown, Digest: digest},
		}
	}
	if offset > total {
		return Fail(CodeOffsetPastEnd, fmt.Sprintf("digest: %s\noffset %d is past the end of %s, which has %d lines; use an offset from 1 to %d", digest, offset, shown, total, total))
	}
	rendered := v.Render()
	last := offset
	if n := len(v.Lines); n > 0 {
		last = v.Lines[n-1].Number
	}
	d := ReadDetails{Path: shown, Digest: digest, TotalLines: total, FirstLine: offset, LastLine: last, HasMore: v.More, NextOffset: v.Next}
	var b strings.Builder
	b.Grow(len(rendered) + 512)
	fmt.Fprintf(&b, "digest: %s\n", digest)
	if v.More {
		fmt.Fprintf(&b, "%s: lines %d-%d of %d (partial: continue with offset=%d)\n", shown, offset, last, total, v.Next)
	} else {
		fmt.Fprintf(&b, "%s: lines %d-%d of %d\n", shown, offset, last, total)
	}
	b.WriteString(rendered)
	if l := v.Long; l != nil {
		d.CutLine = l.Number
		writeCutNotice(&b, shown, l)
	}
	if v.More {
		fmt.Fprintf(&b, "(%d more lines; continue with offset=%d)\n", total-last, v.Next)
	}
	return Outcome{Text: b.String(), Details: d}
}

// writeCutNotice says that line l was shown cut, how to read the rest, and
// that its anchor still names the whole line. The rest is given as 1-based
// byte positions of the file, which is what tail -c counts.
func writeCutNotice(b *strings.Builder, shown string, l *hashline.LongLine) {
	from, rest := l.Start+len(l.Head)+1, l.Len-len(l.Head)
	fmt.Fprintf(b, "(line %d is cut: its text is %d bytes and one read shows at most %d bytes (%d KiB), so only its first %d are shown. "+
		"Its anchor %d:%s is the whole line's: fs_edit can replace the whole line with it. "+
		"The other %d bytes are bytes %d-%d of the file: read them with bash, e.g. tail -c +%d %s | head -c %d)\n",
		l.Number, l.Len, MaxWindowBytes, MaxWindowBytes>>10, len(l.Head),
		l.Number, l.Anchor,
		rest, from, l.Start+l.Len, from, shellQuoted(shown), rest)
}

// shellQuoted quotes s as one POSIX shell word: in single quotes, each
// single quote inside closed, escaped with a backslash and reopened.
func shellQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pathFailure renders a refused path.
func pathFailure(err error) Outcome {
	var pe *PathError
	if errors.As(err, &pe) {
		return Fail(pe.Code, err.Error())
	}
	return Fail(CodeInvalidPath, err.Error())
}

// readFailure renders a failed read of a resolved path.
func readFailure(path string, err error) Outcome {
	var tl errTooLarge
	switch {
	case errors.As(err, &tl):
		return Fail(CodeFileTooLarge, fmt.Sprintf("%s: %v; read parts of it with bash (head, tail, sed -n)", path, err))
	case errors.Is(err, errIsDirectory):
		return Fail(CodeIsADirectory, fmt.Sprintf("%s is a directory; list it with bash (ls) or grep", path))
	case errors.Is(err, fs.ErrNotExist):
		return Fail(CodeNotFound, fmt.Sprintf("%s does not exist; check the path (relative paths start at the workspace root) or create it with fs_write", path))
	case errors.Is(err, fs.ErrPermission):
		return Fail(CodePermissionDenied, fmt.Sprintf("%s: permission denied by the filesystem", path))
	case errors.Is(err, errPathChanged):
		return Fail(CodePathChanged, fmt.Sprintf("%s: %v; nothing was read. Something (a running command?) replaced part of the path just now; try again once it settles", path, err))
	case errors.Is(err, errNotRegularFile):
		return Fail(CodeNotARegularFile, fmt.Sprintf("%s is not a regular file (a FIFO, device, socket or the like); the file tools read and write regular files only: inspect it with bash", path))
	}
	return Fail(CodeReadFailed, fmt.Sprintf("%s: %v", path, err))
}
