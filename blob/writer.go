package blob

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io/fs"
	"os"
)

// writeBufferBytes is the buffer a Writer holds between its caller and its
// staged file, so a stream of small writes does not cost a system call
// each. Writes at least this large bypass it.
const writeBufferBytes = 32 << 10

// Writer streams content of unknown length into the store: it hashes the
// bytes as they pass and writes them to a staged file, and Commit names
// the result by its hash. Until Commit nothing is readable; a Writer
// abandoned without Commit or Abort (a crash, say) leaves only a staged
// file, which Store.Sweep removes.
//
// The staged file is created on the first Write (or at Commit, for empty
// content), so Create cannot fail; a failure to stage is reported by that
// Write and by every call after it. A Writer is not safe for concurrent
// use.
//
// Every byte written is reserved against the session's budget
// (Options.SessionBytes) as it comes, so a stream that would pass it
// fails at that Write with CodeSpillBudget, having staged nothing more;
// Commit charges the blob in whole BlockBytes (nothing when the session
// holds it already) and returns what it reserved beyond that.
type Writer struct {
	store *Store
	f     *os.File
	name  string // f's name in the store root
	buf   *bufio.Writer
	hash  hash.Hash
	size  int64
	err   error // sticky: the first failure, or CodeClosed once done
	done  bool
	// reserved is what Write reserved against the session's budget.
	reserved int64
}

// Create returns a Writer that stages a new blob in s.
func (s *Store) Create() *Writer {
	return &Writer{store: s, hash: sha256.New()}
}

// Write stages p. It returns len(p) and nil, or 0 and the first error
// the Writer met (after which the Writer only fails; Abort it).
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if err := w.store.check("write"); err != nil {
		w.err = err
		return 0, err
	}
	if err := w.store.reserve("write", int64(len(p))); err != nil {
		w.err = err
		return 0, err
	}
	w.reserved += int64(len(p))
	if err := w.open(); err != nil {
		return 0, err
	}
	if _, err := w.buf.Write(p); err != nil {
		w.err = ioError("write", "", w.store.stagedPath(w.name), err)
		return 0, w.err
	}
	w.hash.Write(p)
	w.size += int64(len(p))
	return len(p), nil
}

// Size returns how many bytes have been staged so far.
func (w *Writer) Size() int64 { return w.size }

// Commit flushes and fsyncs the staged file, makes it read-only and
// renames it to its content address, returning the Ref; the session holds
// the blob until Close. If that blob already exists the staged file is
// removed and the same Ref returned, so committing identical content
// twice, or concurrently, is harmless. Rounding the blob's charge up to
// whole BlockBytes may pass the session's budget, which Commit refuses
// with CodeSpillBudget. After Commit (successful or not) the Writer is
// done: the staged file is gone either way and further calls fail with
// CodeClosed.
func (w *Writer) Commit() (Ref, error) {
	if w.done {
		return "", closedError("commit")
	}
	if err := w.open(); err != nil {
		w.discard()
		return "", err
	}
	w.done = true
	w.err = closedError("write")
	r := Ref(hex.EncodeToString(w.hash.Sum(nil)))
	reserved := w.reserved
	w.reserved = 0
	if err := w.buf.Flush(); err != nil {
		w.f.Close()
		w.store.dir.Remove(w.name)
		w.store.release(reserved)
		return "", ioError("commit", r, w.store.stagedPath(w.name), err)
	}
	w.buf = nil
	// The claim replaces the stream's reservation.
	need, err := w.store.claim("commit", r, charge(w.size), reserved)
	if err != nil {
		w.f.Close()
		w.store.dir.Remove(w.name)
		return "", err
	}
	if err := w.store.establish("commit", w.f, w.name, r, w.size, need); err != nil {
		return "", err
	}
	return r, nil
}

// Abort discards the staged file. It is safe to call more than once and
// after Commit, where it does nothing, so `defer w.Abort()` is the usual
// way to clean up a Writer that may not reach Commit.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	return w.discard()
}

// open stages the file on first use and reports the sticky error.
func (w *Writer) open() error {
	if w.err != nil {
		return w.err
	}
	if w.f != nil {
		return nil
	}
	if err := w.store.check("write"); err != nil {
		w.err = err
		return err
	}
	f, name, err := w.store.stage()
	if err != nil {
		w.err = ioError("write", "", w.store.root, err)
		return w.err
	}
	w.f, w.name = f, name
	w.buf = bufio.NewWriterSize(f, writeBufferBytes)
	return nil
}

// discard closes and removes the staged file, if any, and marks w done.
func (w *Writer) discard() error {
	w.done = true
	w.err = closedError("write")
	w.buf = nil
	w.store.release(w.reserved)
	w.reserved = 0
	if w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	f.Close()
	if err := w.store.dir.Remove(w.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ioError("abort", "", w.store.stagedPath(w.name), err)
	}
	return nil
}
