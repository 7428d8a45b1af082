//go:build linux

package jail

import (
	"os"
	"testing"
	"time"
)

func TestReadableWithin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if readableWithin(int(r.Fd()), 30*time.Millisecond) {
		t.Fatal("an empty pipe was readable")
	}
	w.Write([]byte("x"))
	if !readableWithin(int(r.Fd()), time.Second) {
		t.Fatal("a pipe with data was not readable")
	}
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	w2.Close()
	if !readableWithin(int(r2.Fd()), time.Second) {
		t.Fatal("a pipe whose writer closed was not readable")
	}
	w.Close()
}

// TestReadableNow: an empty pipe is not readable now (control), a pipe
// with data or whose writer closed is, as a helper started for its
// command finds its configuration.
func TestReadableNow(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if readableNow(int(r.Fd())) {
		t.Fatal("an empty pipe was readable")
	}
	w.Write([]byte("{}\n"))
	if !readableNow(int(r.Fd())) {
		t.Fatal("a pipe with data was not readable")
	}
	w.Close()
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	w2.Close()
	if !readableNow(int(r2.Fd())) {
		t.Fatal("a pipe whose writer closed was not readable")
	}
}
