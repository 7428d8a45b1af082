// Package kv is a small scratch store: bytes under string keys, kept for
// the session and shared by this strand's programs, so a later program
// can pick up what an earlier one left. The host bounds the number of
// keys and bytes and may evict; it is scratch, not storage.
//
// Safe to call from many goroutines at once.
//
// Example:
//
//	v, found, err := kv.Get(ctx, "last-commit")
//	if err != nil {
//		panic(err)
//	}
//	if !found {
//		v = []byte("none")
//	}
//	fmt.Printf("last seen: %s\n", v)
//	if err := kv.Set(ctx, "last-commit", []byte("abc123")); err != nil {
//		panic(err)
//	}
package kv

import (
	"context"

	"cap/internal/client"
)

// Error is the error every cap package returns: kv.Error, fs.Error and
// the rest are one type. Fields: Cap (e.g. "kv.set"), Code (a stable
// snake_case word to switch on), Message. See fs.Error for the codes.
type Error = client.Error

// Get returns the value stored under key; found is false (and value nil)
// when there is none.
func Get(ctx context.Context, key string) (value []byte, found bool, err error) {
	const name = "kv.get"
	m, err := client.Call(ctx, name, map[string]any{"key": key})
	if err != nil {
		return nil, false, err
	}
	r := client.Read(m)
	value, found = r.Bytes("value"), r.Bool("found")
	if err := r.Err(name); err != nil {
		return nil, false, err
	}
	if !found {
		value = nil
	}
	return value, found, nil
}

// Set stores value under key, replacing what was there. It fails with
// "kv_full" when the host's key or byte bound would be passed.
func Set(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	_, err := client.Call(ctx, "kv.set", map[string]any{"key": key, "value": value})
	return err
}

// Delete removes key; deleted says whether it was there.
func Delete(ctx context.Context, key string) (deleted bool, err error) {
	const name = "kv.delete"
	m, err := client.Call(ctx, name, map[string]any{"key": key})
	if err != nil {
		return false, err
	}
	r := client.Read(m)
	deleted = r.Bool("deleted")
	return deleted, r.Err(name)
}
