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
	// DefaultReadLines is how many lines fs_read shows when no limit is given,
	// and the most it shows in one window.
	DefaultReadLines = 2000
	// MaxWindowBytes bounds the rendered text of one fs_read window; a
	// window stops at the line that would cross it and says where to go on.
	MaxWindowBytes = 256 << 10
	// binarySniffBytes is how much of a file is checked for NUL bytes.
	binarySniffBytes = 8 << 10
)

type readArgs struct {
	Path   string `json:"path" jsonschema:"file to read, relative to the workspace or absolute"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line to show, 1-based (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to show (default and maximum 2000)"`
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
	desc := "Read a file. Text comes back as `N:anchor|text` lines after a `digest:` line; " +
		"fs_edit needs that digest and the `N:anchor` refs. Reads show at most 2000 lines (use offset/limit " +
		"to page; a partial read says the offset that continues it). PNG, JPEG, GIF and WebP files come back " +
		"as images. Files over 8 MiB are refused; overflowed tool output (a blob path) is readable too."
	byName := make(map[string]Scheme, len(schemes))
	for _, s := range schemes {
		byName[s.Name] = s
		if s.Describe != "" {
			desc += " " + s.Describe
		}
	}
	return Typed(Tool{
		Name:          "fs_read",
		Description:   desc,
		PromptSnippet: "fs_read: read a file as anchored lines (or an image)",
		Replay:        ReplaySafe,
		Mode:          Concurrent,
	}, func(ctx context.Context, c *Call, a readArgs) Outcome {
		if name, _, ok := strings.Cut(a.Path, "://"); ok && !strings.Contains(name, "/") {
			s, known := byName[name]
			if !known || s.Read == nil {
				return Fail("unknown_scheme", fmt.Sprintf("%s:// is not a namespace this host serves; served: %s", name, schemeList(byName)))
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

func runRead(_ context.Context, c *Call, a readArgs) Outcome {
	if a.Offset < 0 || a.Limit < 0 {
		return Fail("invalid_window", fmt.Sprintf("offset and limit must not be negative (got offset=%d, limit=%d); offset starts at 1", a.Offset, a.Limit))
	}
	path, err := c.ResolveRead(a.Path)
	if err != nil {
		return pathFailure(err)
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
		return Fail("binary_file", fmt.Sprintf("%s looks binary (it contains NUL bytes) and is not an image fs_read can show; inspect it with bash (file, xxd, strings)", shown))
	}
	return renderWindow(shown, data, a.Offset, a.Limit)
}

// renderWindow renders one window of data's anchored lines.
func renderWindow(shown string, data []byte, offset, limit int) Outcome {
	digest := hashline.Digest(data)
	lines := hashline.Annotate(data)
	if offset == 0 {
		offset = 1
	}
	if limit == 0 || limit > DefaultReadLines {
		limit = DefaultReadLines
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digest: %s\n", digest)
	if len(lines) == 0 {
		fmt.Fprintf(&b, "%s: empty file (0 lines); add lines with fs_edit op \"append\" or fs_write\n", shown)
		return Outcome{Text: b.String(), Details: ReadDetails{Path: shown, Digest: digest}}
	}
	if offset > len(lines) {
		return Fail("offset_past_end", fmt.Sprintf("digest: %s\noffset %d is past the end of %s, which has %d lines; use an offset from 1 to %d", digest, offset, shown, len(lines), len(lines)))
	}
	win, _, _ := hashline.Window(lines, offset, limit)
	// Keep the rendered window under MaxWindowBytes; a single line over the
	// cap is shown alone rather than not at all.
	size := 0
	for i, l := range win {
		size += len(hashline.RenderLine(l)) + 1
		if size > MaxWindowBytes && i > 0 {
			win = win[:i]
			break
		}
	}
	last := win[len(win)-1].Number
	more := last < len(lines)
	d := ReadDetails{Path: shown, Digest: digest, TotalLines: len(lines), FirstLine: offset, LastLine: last, HasMore: more}
	if more {
		d.NextOffset = last + 1
		fmt.Fprintf(&b, "%s: lines %d-%d of %d (partial: continue with offset=%d)\n", shown, offset, last, len(lines), last+1)
	} else {
		fmt.Fprintf(&b, "%s: lines %d-%d of %d\n", shown, offset, last, len(lines))
	}
	b.WriteString(hashline.RenderLines(win))
	if more {
		fmt.Fprintf(&b, "(%d more lines; continue with offset=%d)\n", len(lines)-last, last+1)
	}
	return Outcome{Text: b.String(), Details: d}
}

// pathFailure renders a refused path.
func pathFailure(err error) Outcome {
	var pe *PathError
	if errors.As(err, &pe) {
		return Fail(pe.Code, err.Error())
	}
	return Fail("invalid_path", err.Error())
}

// readFailure renders a failed read of a resolved path.
func readFailure(path string, err error) Outcome {
	var tl errTooLarge
	switch {
	case errors.As(err, &tl):
		return Fail("file_too_large", fmt.Sprintf("%s: %v; read parts of it with bash (head, tail, sed -n)", path, err))
	case errors.Is(err, fs.ErrNotExist):
		return Fail("not_found", fmt.Sprintf("%s does not exist; check the path (relative paths start at the workspace root) or create it with fs_write", path))
	case errors.Is(err, fs.ErrPermission):
		return Fail("permission_denied", fmt.Sprintf("%s: permission denied by the filesystem", path))
	case errors.Is(err, ErrPathChanged):
		return Fail("path_changed", fmt.Sprintf("%s: %v; nothing was read. Something (a running command?) replaced part of the path just now; try again once it settles", path, err))
	case errors.Is(err, ErrNotRegularFile):
		return Fail("not_a_regular_file", fmt.Sprintf("%s is not a regular file (a FIFO, device, socket or the like); the file tools read and write regular files only: inspect it with bash", path))
	}
	return Fail("read_failed", fmt.Sprintf("%s: %v", path, err))
}
