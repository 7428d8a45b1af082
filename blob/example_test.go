package blob_test

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/agentloom/loom/blob"
)

func ExampleStore_Put() {
	dir, _ := os.MkdirTemp("", "blobs")
	defer os.RemoveAll(dir)
	s, err := blob.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	r, err := s.Put([]byte("hello\n"))
	if err != nil {
		log.Fatal(err)
	}
	again, _ := s.Put([]byte("hello\n"))
	data, _ := s.Read(r)
	fmt.Println(r)
	fmt.Println(again == r)
	fmt.Printf("%q\n", data)
	// Output:
	// 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03
	// true
	// "hello\n"
}

func ExampleStore_Bound() {
	dir, _ := os.MkdirTemp("", "blobs")
	defer os.RemoveAll(dir)
	s, _ := blob.Open(dir)

	inline, spilled, _ := s.Bound([]byte("short output\n"))
	fmt.Printf("%q %v\n", inline, spilled == nil)

	big := []byte(strings.Repeat("line of output\n", 10_000))
	inline, spilled, err := s.Bound(big)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %d %d %d\n", inline, spilled.Size, len(spilled.HeadExcerpt), len(spilled.TailExcerpt))
	fmt.Println(spilled.Path == s.Path(spilled.Ref))
	// Output:
	// "short output\n" true
	// "" 150000 2048 2048
	// true
}

func ExampleSpool() {
	dir, _ := os.MkdirTemp("", "blobs")
	defer os.RemoveAll(dir)
	s, _ := blob.Open(dir)

	sp := s.NewSpool()
	defer sp.Abort()
	// Stream 1 MiB of output; the Spool keeps at most the threshold in memory.
	src := io.LimitReader(repeatReader('x'), 1<<20)
	if _, err := io.Copy(sp, src); err != nil {
		log.Fatal(err)
	}
	inline, spilled, err := sp.Finish()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(inline == "", spilled.Size)
	text := spilled.Text("stdout")
	fmt.Println(strings.Contains(text, "1044480 bytes of stdout elided"))
	// Output:
	// true 1048576
	// true
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func ExampleOverflow_Text() {
	o := &blob.Overflow{
		Ref:         blob.Sum([]byte("demo")),
		Path:        "/var/loom/blobs/2a/2a97516c354b68848cdbd8f54a226a0a55b21ed138e207ad6c5cbb9c00aa5aea",
		Size:        70_000,
		HeadExcerpt: "build started\n",
		TailExcerpt: "build failed: 3 errors\n",
	}
	fmt.Print(o.Text("stdout"))
	// Output:
	// build started
	// [... 69963 bytes of stdout elided: it is 70000 bytes in all, over the 65536-byte inline limit; fs_read path "/var/loom/blobs/2a/2a97516c354b68848cdbd8f54a226a0a55b21ed138e207ad6c5cbb9c00aa5aea" shows all of it (blob 2a97516c354b68848cdbd8f54a226a0a55b21ed138e207ad6c5cbb9c00aa5aea) ...]
	// build failed: 3 errors
}

func ExampleExcerpts() {
	data := []byte("€uro and €uro") // € is three bytes
	head, tail := blob.Excerpts(data, 5)
	fmt.Printf("%q %q\n", head, tail)
	head, tail = blob.Excerpts(data, 2) // a cut inside € drops it whole
	fmt.Printf("%q %q\n", head, tail)
	// Output:
	// "€ur" "uro"
	// "" "ro"
}

func ExampleParseRef() {
	_, err := blob.ParseRef("ABC")
	fmt.Println(blob.CodeOf(err))
	r, err := blob.ParseRef(string(blob.Sum(nil)))
	fmt.Println(r, err)
	// Output:
	// invalid_ref
	// e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 <nil>
}

// A store bounded for one session: output past its budget is refused in
// band, and the caller still has both ends of it to show.
func ExampleOpenWith() {
	dir, _ := os.MkdirTemp("", "blobs")
	defer os.RemoveAll(dir)
	s, err := blob.OpenWith(dir, blob.Options{MaxBytes: 64 << 20, SessionBytes: 100 << 10})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	big := []byte(strings.Repeat("line of output\n", 10_000)) // 150000 bytes
	_, spilled, err := s.Bound(big)
	fmt.Println(blob.CodeOf(err))
	fmt.Println(spilled.Ref == "", spilled.NotKept != "", len(spilled.HeadExcerpt), len(spilled.TailExcerpt))
	fmt.Println(strings.Contains(spilled.Text("output"), "was not kept"))
	// Output:
	// spill_budget
	// true true 2048 2048
	// true
}
