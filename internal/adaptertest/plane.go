package adaptertest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/plane"
)

// File is a file NewPlane writes into the workspace: Name is its path
// relative to the workspace root.
type File struct {
	Name string
	Data []byte
}

// NewPlane returns the plane cfg describes over a fresh workspace,
// holding files, and closes it when tb ends. Its workspace, blob store,
// history index and scratch directory lie under tb.TempDir(), in place
// of cfg's.
func NewPlane(tb testing.TB, cfg plane.Config, files ...File) *plane.Plane {
	tb.Helper()
	root := tb.TempDir()
	cfg.Workspace = filepath.Join(root, "ws")
	cfg.BlobDir = filepath.Join(root, "blobs")
	cfg.HistoryPath = filepath.Join(root, "history.sqlite")
	cfg.Scratch = filepath.Join(root, "scratch")
	if err := os.Mkdir(cfg.Workspace, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		path := filepath.Join(cfg.Workspace, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	p, err := plane.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// Pixel returns a 2×2 PNG image, red at its top-left corner.
func Pixel() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return b.Bytes()
}
