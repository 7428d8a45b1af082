package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// writeSlackFactor bounds what one fs_write of a file of line breaks may
// allocate, as a multiple of the content. Decoding the JSON argument
// (every line break escaped to two bytes, read through a growing buffer,
// checked for unknown fields, then decoded) is ~15x here, and bounded by
// the argument's size; annotating every line, as the write's answer once
// did to count lines, adds ~48 bytes per line, 48x this content.
const writeSlackFactor = 24

// TestWriteNewlineBombAllocatesForTheContent: an fs_write of 2 MiB of line
// breaks (2M lines) allocates a small multiple of the content, not a
// record per line.
func TestWriteNewlineBombAllocatesForTheContent(t *testing.T) {
	r, c := fileRegistry(t)
	data := bytes.Repeat([]byte{'\n'}, 2<<20)
	raw, err := json.Marshal(map[string]any{"path": "nl.txt", "content": string(data)})
	if err != nil {
		t.Fatal(err)
	}
	r.Dispatch(context.Background(), c, "fs_write", raw) // warm the registry and the guard
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := r.Dispatch(context.Background(), c, "fs_write", raw)
	runtime.ReadMemStats(&after)
	if out.IsError || out.Details.(WriteDetails).Lines != len(data) {
		t.Fatalf("fs_write: %.300s", out.Text)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("fs_write of %d line breaks allocated %d bytes (%.1fx)", len(data), got, float64(got)/float64(len(data)))
	if bound := uint64(writeSlackFactor * len(data)); got > bound {
		t.Errorf("fs_write of %d line breaks allocated %d bytes, over %d", len(data), got, bound)
	}
	if b, _ := os.ReadFile(filepath.Join(c.Workspace, "nl.txt")); !bytes.Equal(b, data) {
		t.Error("the file does not hold what was written")
	}
}
