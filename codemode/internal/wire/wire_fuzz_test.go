package wire

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/agentloom/loom/codemode/internal/wire/wiretest"
)

// FuzzReadFrame: ReadFrame never panics; whatever it accepts, WriteFrame
// re-encodes and ReadFrame decodes back equal, and writing that again is
// byte-identical (the encoding is canonical).
func FuzzReadFrame(f *testing.F) {
	seeds := []Frame{
		{ID: 1, Kind: FrameCapCall, Body: map[string]any{"cap": "fs.edit", "args": map[string]any{"path": "a", "edits": []any{map[string]any{"find": "x", "replace": "y"}}}}},
		{ID: 2, Kind: FrameCancel},
		{ID: 3, Kind: FrameCapResult, Body: ResultOK(map[string]any{"content": []byte{0, 1}, "n": -70000, "f": math.Inf(-1), "u": uint64(math.MaxUint64)})},
		{Kind: FrameOutcome, Body: OutcomeBody("execution_ending", "x")},
	}
	for _, s := range seeds {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, s); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0, 0, 0, 1, 0xc1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := ReadFrame(bytes.NewReader(in))
		if err != nil {
			return
		}
		var once bytes.Buffer
		if err := WriteFrame(&once, fr); err != nil {
			var fe *FrameError
			if errors.As(err, &fe) && fe.Code == CodeFrameTooLarge {
				return // float32s widen to float64 on re-encoding
			}
			t.Fatalf("accepted %#v but cannot re-encode it: %v", fr, err)
		}
		first := bytes.Clone(once.Bytes())
		again, err := ReadFrame(&once)
		if err != nil {
			t.Fatalf("re-encoded frame refused: %v", err)
		}
		if again.ID != fr.ID || again.Kind != fr.Kind || !wiretest.SameValue(again.Body, fr.Body) {
			t.Fatalf("round trip changed the frame:\n%#v\n%#v", fr, again)
		}
		var twice bytes.Buffer
		if err := WriteFrame(&twice, again); err != nil || !bytes.Equal(first, twice.Bytes()) {
			t.Fatalf("re-encoding is not canonical: %v", err)
		}
	})
}
